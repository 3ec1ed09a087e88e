#!/usr/bin/env python3
"""Checks recorded lock nesting against docs/design.md's lock table.

check.py SRC_DIR EDGES_DIR [--list] [--design FILE]

EDGES_DIR holds the edges.PID files lockorder.so wrote (an outer call
site and an inner one, each as an object and an offset).  Each site is
resolved with addr2line to the source line of its lock call, and that call's
lock expression (`&qp->lock` in `src/core/qp.c`) to a lock class by the
"Taken as" column of the table under "## Locks" in docs/design.md, whose
rows stand outermost first.  Fails when a site matches no class, or a lock
is taken under one that comes after it in the table (or under its own class,
where the row does not say "nests in itself").  --list prints every pair of
classes seen, with a site of each; --design reads the table from FILE
instead (the self-test's planted breaches).
"""
import fnmatch
import os
import re
import subprocess
import sys
from collections import defaultdict

# A lock call, or util/lock.h's ur_read_locked(KIND, LOCK, EXPR) (a macro:
# its lines are the caller's).
LOCK_CALL = re.compile(r'(?:pthread_(?:mutex|spin|rwlock)_(?:lock|trylock|timedlock|'
                       r'rdlock|wrlock|tryrdlock|trywrlock)\s*\(|'
                       r'ur_read_locked\s*\(\s*\w+\s*,)\s*([^,)]+)')


def read_table(design):
    """[(rank, name, [(file_glob, expr)], nests_in_itself)] from design.md."""
    rows, in_locks, rank = [], False, 0
    for line in open(design, encoding='utf-8'):
        if line.startswith('## '):
            in_locks = line.strip() == '## Locks'
            continue
        if not in_locks or not line.startswith('|'):
            continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 3 or cells[0] in ('lock', '') or set(cells[0]) <= set('-: '):
            continue
        forms = []
        for form in re.findall(r'`([^`]+)`', cells[1]):
            where, _, expr = form.rpartition(':')
            forms.append((where.strip() or '*', expr.strip()))
        rank += 1
        rows.append((rank, cells[0], forms, 'nests in itself' in cells[2]))
    return rows


def resolve(sites):
    """{(obj, off): (file, line)}: the innermost source line of each call."""
    by_obj = defaultdict(list)
    for obj, off in sites:
        by_obj[obj].append(off)
    out = {}
    for obj, offs in by_obj.items():
        addrs = ['%#x' % (int(o, 16) - 1) for o in offs]  # inside the call
        res = subprocess.run(['addr2line', '-i', '-e', obj] + addrs,
                             capture_output=True, text=True, check=True).stdout.splitlines()
        # -i prints a site's inline chain, innermost first; chains end where the
        # next address's begins, which addr2line does not mark: ask one at a time
        # when lengths disagree.
        if len(res) != len(addrs):
            res = [subprocess.run(['addr2line', '-e', obj, a], capture_output=True,
                                  text=True, check=True).stdout.strip() for a in addrs]
        for off, loc in zip(offs, res):
            f, _, ln = loc.partition(':')
            ln = re.match(r'\d+', ln)
            out[(obj, off)] = (f, int(ln.group(0)) if ln else 0)
    return out


def lock_expr(src, path, line):
    """(the lock call's expression or None, the lines around the site)."""
    try:
        text = open(path, encoding='utf-8').read().splitlines()
    except OSError:
        return None, ''
    # The site's own line first, then the two after it (a call written
    # over several lines is recorded at its first).
    window = text[line - 1:line + 2] if line > 0 else []
    for ln in window:
        m = LOCK_CALL.search(ln)
        if m:
            return m.group(1).strip().lstrip('&').strip(), window[0]
    return None, window[0] if window else ''


def classify(rows, relpath, expr, text):
    """The rank of the row naming the site: by the lock call's expression,
    or, for a form written `name()`, by a call of that macro or function
    that takes the lock inside (rdmacm's cma_locked_abi_call)."""
    for rank, name, forms, _ in rows:
        for where, e in forms:
            if not fnmatch.fnmatch(relpath, 'src/' + where):
                continue
            if e == expr or (expr is None and e.endswith('()') and
                             re.search(r'\b' + re.escape(e[:-2]) + r'\s*\(', text)):
                return rank
    return None


def main():
    src, edges_dir = sys.argv[1], sys.argv[2]
    listing = '--list' in sys.argv
    design = os.path.join(src, 'docs', 'design.md')
    if '--design' in sys.argv:
        design = sys.argv[sys.argv.index('--design') + 1]
    rows = read_table(design)
    if not rows:
        print('FAIL: no lock table under "## Locks" in %s' % design)
        return 1
    edges = set()
    for name in os.listdir(edges_dir):
        if name.startswith('edges.'):
            for line in open(os.path.join(edges_dir, name)):
                p = line.split()
                if len(p) == 4:
                    edges.add(((p[0], p[1]), (p[2], p[3])))
    locs = resolve({s for e in edges for s in e})
    src_real = os.path.realpath(src)

    def site(s):
        f, ln = locs[s]
        rel = os.path.relpath(os.path.realpath(f), src_real) if f.startswith('/') else f
        expr, text = lock_expr(src, os.path.join(src_real, rel), ln)
        return rel, ln, expr, text

    bad, unknown, pairs = 0, {}, {}
    for outer, inner in sorted(edges):
        o, i = site(outer), site(inner)
        ro, ri = classify(rows, o[0], o[2], o[3]), classify(rows, i[0], i[2], i[3])
        for s, r in ((o, ro), (i, ri)):
            if r is None:
                unknown[(s[0], s[2])] = s
        if ro is None or ri is None:
            continue
        pairs.setdefault((ro, ri), (o, i))
    for (f, e), s in sorted(unknown.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        print('FAIL: lock `%s` taken at %s:%d is in no row of the lock table' % (e, s[0], s[1]))
    for (ro, ri), (o, i) in sorted(pairs.items()):
        name_o, name_i = rows[ro - 1][1], rows[ri - 1][1]
        ok = ro < ri or (ro == ri and rows[ro - 1][3])
        if listing or not ok:
            print('%s: %s (%s:%d) -> %s (%s:%d)' % ('ok' if ok else 'FAIL: out of order',
                  name_o, o[0], o[1], name_i, i[0], i[1]))
        bad += not ok
    print('%d pairs of sites, %d pairs of classes, %d out of order, %d sites unclassified'
          % (len(edges), len(pairs), bad, len(unknown)))
    return 1 if bad or unknown else 0


if __name__ == '__main__':
    sys.exit(main())
