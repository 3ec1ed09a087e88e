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
"""
import os
import re
import sys
import tempfile

# Top to bottom; folders on one floor share a number.
FLOORS = {
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
ERRNO_MAY_WRITE = {"verbs", "rdmacm", "mlx5dv"}
ERRNO_ALLOWED_FILES = {"util/log.c"}

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


def check(src):
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
        code = STRING.sub('""', COMMENT.sub(lambda c: "\n" * c.group(0).count("\n"), text))
        for n, line in enumerate(code.splitlines(), 1):
            if ERRNO_WRITE.search(line):
                breaches.append(f"{rel}:{n}: writes errno below src/verbs "
                                f"(return -errno; src/verbs converts)")
    return breaches


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
    }
    expect = ["core/a.c:1", "engine/e.c:1", "xport/udp/u.c:1", "core/b.c:1", "host/c.c:1",
              "misc/m.c"]
    with tempfile.TemporaryDirectory() as d:
        for rel, body in cases.items():
            os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as fh:
                fh.write(body)
        found = check(d)
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
    breaches = check(sys.argv[1])
    for b in breaches:
        print(b)
    if breaches:
        print(f"{len(breaches)} breach(es) of the layer rules (docs/design.md, \"Layers\")")
        return 1
    floors = sorted(set(FLOORS.values()), reverse=True)
    print("layers hold: " + " > ".join(
        ", ".join(f for f in FLOORS if FLOORS[f] == n) for n in floors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
