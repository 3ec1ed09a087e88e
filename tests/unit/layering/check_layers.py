#!/usr/bin/env python3
"""The rules of src/'s layering (docs/design.md, "Layers"), checked over the
code's own #include lines and errno writes.

  check_layers.py SRC_DIR       check a tree; exit 1 naming each breach
  check_layers.py --self-test   prove the checks catch what they should

Rules:
  1. Folders form one stack.  A file may include headers of its own folder
     and of folders below it, never of a folder above it or beside it
     (wire/ and engine/ share a floor and know nothing of each other).  So
     no two folders include each other, directly or around a loop, and the
     engine and the transports include nothing of the layers above them.
  2. Below src/verbs nothing writes errno: functions return 0 or -errno and
     src/verbs converts once.  util/log.c alone restores errno after
     printing, so that a log line leaves it as it found it.
  3. Files form no circle either: no file calls a function defined in
     another, or includes its header, when that one depends back on it,
     directly or through others (an include counts as a dependency on the
     header, whose inline code may call back).
     Parts of the protocol that find work for each other kick it (rel/kick.h)
     rather than call it.  The circles not yet undone are named in
     KNOWN_CIRCLES; one may shrink, never grow, and no new one appears.
"""
import os
import re
import sys
import tempfile

# Top to bottom; folders on one floor share a number.
FLOORS = {
    "rsocket": 10,  # rsockets, over librdmacm's and libibverbs' public API
    "rdmacm": 9,  # librdmacm.so.1's ABI boundary, over the verbs ABI
    "mlx5dv": 9,  # libmlx5.so.1's ABI boundary, over the verbs ABI
    "cm": 8,      # the connection manager's state machine (in librdmacm.so.1)
    "verbs": 7,   # the ABI boundary
    "rel": 6,     # the protocol and the per-process stack
    "core": 5,    # passive objects
    "xport": 4,   # transports
    "host": 3,    # the host's registry and interfaces
    "wire": 2,    # the codec
    "engine": 2,  # the reactor
    "util": 1,    # the ground
}
ERRNO_MAY_WRITE = {"verbs", "rdmacm", "mlx5dv", "rsocket"}
ERRNO_ALLOWED_FILES = {"util/log.c"}

# Circles of files that later work removes (rule 3): each a set of files
# allowed to depend on each other, and no more.
KNOWN_CIRCLES = [
]

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
ERRNO_WRITE = re.compile(r'(?<![\w.>])errno\s*(=(?!=)|\+\+|--|[-+*/%&|^]=)')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def folder_of(rel_path):
    return rel_path.split("/", 1)[0]


def sources(src):
    for root, _, files in os.walk(src):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                path = os.path.join(root, f)
                yield os.path.relpath(path, src).replace(os.sep, "/"), path


# A function defined at file scope, not static: a name, its parameters, and
# a body (a brace before any semicolon).
DEFINITION = re.compile(r'^(?!static\b|typedef\b|extern\b)[A-Za-z_][\w \t*]*?[\s*](\w+)\s*\(', re.M)
# Any function declared or defined at file scope: its name is no call.
DECLARATION = re.compile(r'^[A-Za-z_][\w \t*]*?[\s*](\w+)\s*\(', re.M)
CALL = re.compile(r'\b([A-Za-z_]\w*)\s*\(')


def strip_code(text):
    """The text without comments and string literals, lines kept."""
    return STRING.sub('""', COMMENT.sub(lambda c: "\n" * c.group(0).count("\n"), text))


def stem(rel):
    """A file and its own header are one concern: x.h's inline code may
    call x.c."""
    return rel.rsplit(".", 1)[0]


def file_graph(src):
    """File -> {file it depends on: the reasons}: the headers it includes,
    and the .c file defining each function it calls (a header's inline
    code counts for the header)."""
    files = {rel: path for rel, path in sources(src)}
    code, includes = {}, {}
    for rel, path in files.items():
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        code[rel] = strip_code(text)
        includes[rel] = [m.group(1) for m in map(INCLUDE.match, text.splitlines()) if m]
    defined = {}
    for rel, text in code.items():
        if not rel.endswith(".c"):
            continue
        for m in DEFINITION.finditer(text):
            rest = text[m.end():]
            body, semi = rest.find("{"), rest.find(";")
            if body >= 0 and (semi < 0 or body < semi):
                defined.setdefault(m.group(1), set()).add(rel)
    graph = {rel: {} for rel in files}
    for rel, text in code.items():
        for inc in includes[rel]:
            if inc in files and stem(inc) != stem(rel):
                graph[rel].setdefault(inc, set()).add("#include")
        declared = {m.start(1) for m in DECLARATION.finditer(text)}
        for name in {m.group(1) for m in CALL.finditer(text) if m.start(1) not in declared}:
            owners = defined.get(name, ())
            if len(owners) != 1:
                continue          # undefined here, or a namesake in several
            there = next(iter(owners))
            if stem(there) != stem(rel):
                graph[rel].setdefault(there, set()).add(name + "()")
    return graph


def circles(graph):
    """The strongly connected sets of more than one unit (Tarjan)."""
    index, low, on, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            u, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[u] = min(low[u], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[u])
            if low[u] == index[u]:
                scc = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    scc.add(w)
                    if w == u:
                        break
                if len(scc) > 1:
                    found.append(scc)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def one_loop(graph, scc):
    """A shortest way from the circle's first unit back to it, inside it."""
    start = min(scc)
    prev, todo = {start: None}, [start]
    while todo:
        nxt = []
        for u in todo:
            for w in sorted(graph[u]):
                if w == start:
                    path = [u]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    path.reverse()
                    return path + [start]
                if w in scc and w not in prev:
                    prev[w] = u
                    nxt.append(w)
        todo = nxt
    return [start]


def check_circles(src, known=None, notes=None):
    known = KNOWN_CIRCLES if known is None else known
    graph = file_graph(src)
    breaches = []
    found = circles(graph)
    for allowed in known:
        if notes is not None and not any(len(scc & allowed) > 1 for scc in found):
            notes.append(f"note: {' '.join(sorted(allowed))}: no longer a circle; "
                         f"take it out of KNOWN_CIRCLES")
    for scc in found:
        if any(scc <= allowed for allowed in known):
            continue
        loop = one_loop(graph, scc)
        ties = "; ".join(f"{a} -> {b}: {', '.join(sorted(graph[a][b])[:4])}"
                         for a, b in zip(loop, loop[1:]))
        breaches.append(f"{' '.join(sorted(scc))}: files depend on each other in a circle "
                        f"({ties})")
    return breaches


def check(src, notes=None, known=None):
    breaches = []
    for rel, path in sources(src):
        home = folder_of(rel)
        if home not in FLOORS:
            breaches.append(f"{rel}: folder {home}/ has no floor in the layer rules")
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for n, line in enumerate(text.splitlines(), 1):
            m = INCLUDE.match(line)
            if not m or "/" not in m.group(1):
                continue
            there = folder_of(m.group(1))
            if there == home or there not in FLOORS:
                continue
            if FLOORS[there] >= FLOORS[home]:
                how = "beside" if FLOORS[there] == FLOORS[home] else "above"
                breaches.append(f"{rel}:{n}: includes {m.group(1)}: {there}/ is {how} {home}/")
        if home in ERRNO_MAY_WRITE or rel in ERRNO_ALLOWED_FILES:
            continue
        code = strip_code(text)
        for n, line in enumerate(code.splitlines(), 1):
            if ERRNO_WRITE.search(line):
                breaches.append(f"{rel}:{n}: writes errno below src/verbs "
                                f"(return -errno; src/verbs converts)")
    return breaches + check_circles(src, known=known, notes=notes)


def self_test():
    cases = {
        "core/a.c": '#include "rel/x.h"\n',                  # up
        "engine/e.c": '#include "wire/opcode.h"\n',          # beside
        "xport/udp/u.c": '#include "core/qp.h"\n',           # a transport, up
        "rel/ok.c": '#include "core/qp.h"\n#include "rel/x.h"\n'
                    '/* errno = 1 in a comment */ int x = errno == 2;\n'
                    'static const char *s = "errno = 3";\n',  # fine
        "core/b.c": "void f(void) { errno = EINVAL; }\n",     # errno below verbs
        "host/c.c": "void g(void) { errno++; }\n",
        "verbs/v.c": '#include "core/qp.h"\nvoid h(void) { errno = -1; }\n',   # fine
        "util/log.c": "void l(int e) { errno = e; }\n",       # allowed
        "misc/m.c": "",                                       # no floor
        # A circle of three: p calls q's function through its header, q
        # calls r's (declared by hand, no include), r calls p's.
        "rel/p.h": "void p_run(void);\n",
        "rel/p.c": '#include "rel/p.h"\n#include "rel/q.h"\nvoid p_run(void) { q_go(); }\n',
        "rel/q.h": "void q_go(void);\n",
        "rel/q.c": '#include "rel/q.h"\nvoid r_kick(void);\nvoid q_go(void)\n{\n\tr_kick();\n}\n',
        "rel/r.c": '#include "rel/p.h"\nvoid r_kick(void) { p_run(); }\n',
        # Through an include: s includes t.h, whose inline code calls s's.
        "rel/s.c": '#include "rel/t.h"\nvoid s_f(void) { t_g(); }\n',
        "rel/t.h": "void s_f(void);\nstatic inline void t_g(void) { s_f(); }\n",
        # A pair calling each other, in a circle named as known: allowed.
        "rdmacm/addr.c": "void k1(void) { k2(); }\n",
        "rdmacm/channel.c": "void k2(void) { k1(); }\n",
        # One way only, a header naming the other's function, and a static
        # namesake: no circle.
        "util/u1.h": "void u1_f(void);\nvoid u2_g(void);\n",
        "util/u1.c": '#include "util/u1.h"\nstatic void u2_f(void) { }\nvoid u1_f(void) { u2_g(); }\n',
        "util/u2.c": '#include "util/u1.h"\nvoid u2_g(void) { }\n',
    }
    expect = ["core/a.c:1", "engine/e.c:1", "xport/udp/u.c:1", "core/b.c:1", "host/c.c:1",
              "misc/m.c", "rel/p.c rel/q.c rel/r.c", "rel/s.c rel/t.h"]
    with tempfile.TemporaryDirectory() as d:
        for rel, body in cases.items():
            os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as fh:
                fh.write(body)
        found = check(d, known=[{"rdmacm/addr.c", "rdmacm/channel.c"}])
    got = sorted(b.split(": ", 1)[0] for b in found)
    if got != sorted(expect):
        print("self-test: expected breaches at", sorted(expect), "got", found)
        return 1
    print(f"self-test: the {len(expect)} planted breaches found, nothing else")
    return 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    notes = []
    breaches = check(sys.argv[1], notes)
    for n in notes:
        print(n)
    for b in breaches:
        print(b)
    if breaches:
        print(f"{len(breaches)} breach(es) of the layer rules (docs/design.md, \"Layers\")")
        return 1
    floors = sorted(set(FLOORS.values()), reverse=True)
    print("layers hold: " + " > ".join(
        ", ".join(f for f in FLOORS if FLOORS[f] == n) for n in floors))
    print(f"no circle of files but the {len(KNOWN_CIRCLES)} known ones")
    return 0


if __name__ == "__main__":
    sys.exit(main())
