#!/usr/bin/env python3
"""Checks that ward's directories depend one way, never back (README.md).

A directory depends on another when one of its .c or .h files includes
"OTHER/...". This reads every top-level directory of the source tree that
holds C files (tests/ and bench/, which may use any layer, left out) and
prints each cycle between directories, e.g. "cmd -> task -> cmd": a layer
below cmd/ that reached back into it would be one.

usage: layers-check.py SOURCE_ROOT   exit 1 and the cycles when any is found
       layers-check.py --self-test   TAP: the checker finds what it must
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_-]+)/', re.M)
LEFT_OUT = {'tests', 'bench', 'build', 'build-asan'}


def graph(root):
    """{dir: {dirs it includes from}} for the top-level C directories."""
    dirs = sorted(d for d in os.listdir(root)
                  if d not in LEFT_OUT and not d.startswith('.') and os.path.isdir(os.path.join(root, d)))
    g = {}
    for d in dirs:
        deps = set()
        found = False
        for base, subdirs, files in os.walk(os.path.join(root, d)):
            subdirs[:] = [s for s in subdirs if not s.startswith('.')]
            for f in files:
                if not f.endswith(('.c', '.h')):
                    continue
                found = True
                with open(os.path.join(base, f), encoding='utf-8', errors='replace') as fh:
                    deps.update(INCLUDE.findall(fh.read()))
        if found:
            g[d] = deps
    for d in g:
        g[d] = {x for x in g[d] if x in g and x != d}
    return g


def cycles(g):
    """Each cycle once, as a list of directories from its least name."""
    out = set()
    def walk(start, node, path):
        for n in sorted(g.get(node, ())):
            if n == start:
                out.add(tuple(path))
            elif n > start and n not in path:
                walk(start, n, path + [n])
    for d in sorted(g):
        walk(d, d, [d])
    return sorted(out)


def check(root):
    found = cycles(graph(root))
    for c in found:
        print(' -> '.join(list(c) + [c[0]]))
    return found


def self_test():
    n = 0
    def ok(cond, what):
        nonlocal n
        n += 1
        print(('ok' if cond else 'not ok') + ' %d - %s' % (n, what))
        return cond
    good = True
    with tempfile.TemporaryDirectory() as t:
        def put(path, text):
            p = os.path.join(t, path)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, 'w') as fh:
                fh.write(text)
        put('base/a.c', '#include <stdio.h>\n')
        put('lib/b.c', '#include "base/a.h"\n#include "lib/b.h"\n')
        put('cmd/c.c', '#include "lib/b.h"\n#include "base/a.h"\n')
        put('tests/t.c', '#include "cmd/c.h"\n')
        good &= ok(cycles(graph(t)) == [], 'a tree that depends one way has no cycle')
        put('lib/back.h', '  # include "cmd/c.h"\n')
        good &= ok(cycles(graph(t)) == [('cmd', 'lib')], 'a library that includes cmd/ is a cycle')
        put('base/up.c', '#include "lib/b.h"\n')
        got = cycles(graph(t))
        good &= ok(got == [('base', 'lib'), ('base', 'lib', 'cmd'), ('cmd', 'lib')],
                   'each cycle is found once, the long one too: %r' % (got,))
    print('1..%d' % n)
    return 0 if good else 1


if __name__ == '__main__':
    if sys.argv[1:] == ['--self-test']:
        sys.exit(self_test())
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(1 if check(sys.argv[1]) else 0)
