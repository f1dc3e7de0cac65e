#!/usr/bin/env python3
"""layers.py - the house of lib/ drawn from what its objects define and use.

    layers.py floors DESIGN              each file of lib/ and its floor, as
                                         the table of DESIGN (docs/design.md,
                                         "The layers") has them, bottom up
    layers.py check DESIGN OBJDIR        every call between lib's files goes
                                         to the same floor or below, no two
                                         files call each other (a
                                         circle), and every file of lib/ has
                                         a floor
    layers.py symbols LIBRARY            every extern symbol is rlock_ (the
                                         interface) or rl_ (the library's)
    layers.py long MAX FILE...           no function longer than MAX lines

Prints one line per finding and exits 1 if there was one, 0 if none, 2 on
a usage error or a file it cannot read.  Run from the repository's top.
"""
import collections
import glob
import os
import re
import subprocess
import sys


def floors(design):
    """{'lock': 7, 'scripts/acquire': 4, ...} from the design's table."""
    text = open(design, encoding='utf-8').read()
    start = text.index('Inside `lib/`')
    rows = []
    for line in text[start:].split('\n')[1:]:
        if line.startswith('| layer') or line.startswith('|---'):
            continue
        if not line.startswith('|'):
            if rows:
                break
            continue
        rows.append(line.split('|')[2])
    out = {}
    for floor, files in enumerate(rows):
        for name in re.findall(r'`([\w/]+)(?:\.c|/)`', files):
            if name == 'lib/scripts':
                for c in glob.glob('lib/scripts/*.c'):
                    if not c.endswith('luagen.c'):
                        out['scripts/' + os.path.basename(c)[:-2]] = floor
            else:
                out[name] = floor
    return out


def graph(objdir):
    """Edges between lib's files, from the symbols each object defines and
    uses, and the files themselves (those whose source exists)."""
    defs, uses = {}, collections.defaultdict(set)
    names = []
    for o in sorted(glob.glob(objdir + '/lib/*.o') +
                    glob.glob(objdir + '/lib/scripts/*.o')):
        name = o[len(objdir) + len('/lib/'):-2]
        if not os.path.exists('lib/%s.c' % name):
            continue  # a stale object, or the generated bodies
        names.append(name)
        out = subprocess.run(['nm', o], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in 'TDRB':
                defs[f[2]] = name
            elif len(f) == 2 and f[0] == 'U':
                uses[name].add(f[1])
    edges = collections.defaultdict(set)
    for a, syms in uses.items():
        for s in syms:
            if s in defs and defs[s] != a:
                edges[a].add(defs[s])
    return names, edges


def circles(names, edges):
    """The strongly connected components of more than one file."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in names:
        if v not in index:
            visit(v)
    return found


def check(design, objdir):
    bad = []
    floor = floors(design)
    names, edges = graph(objdir)
    for n in names:
        if n not in floor:
            bad.append('lib/%s.c: on no floor of %s' % (n, design))
    for a in names:
        for b in sorted(edges[a]):
            if a in floor and b in floor and floor[b] > floor[a]:
                bad.append('lib/%s.c calls up into lib/%s.c' % (a, b))
    for comp in circles(names, edges):
        bad.append('a circle: ' + ', '.join('lib/%s.c' % c for c in comp))
    return bad


def symbols(library):
    out = subprocess.run(['nm', '-g', '--defined-only', library],
                         capture_output=True, text=True, check=True).stdout
    bad = []
    for line in out.splitlines():
        f = line.split()
        # Names that start with "__" are the compiler's (ASan's ODR
        # indicators, __odr_asan.NAME), never the library's own.
        if len(f) == 3 and not f[2].startswith(('rlock_', 'rl_', '__')):
            bad.append('%s: %s has no prefix' % (library, f[2]))
    return bad


def long_functions(limit, paths):
    bad = []
    for path in paths:
        start = name = None
        for n, line in enumerate(open(path, encoding='utf-8'), 1):
            if start is None and re.match(r'^[a-z].*\(', line) and \
                    not line.rstrip().endswith(';'):
                name, head = line.split('(')[0].split()[-1].lstrip('*'), n
            if line.startswith('{') and name is not None:
                start = head
            if line.startswith('}') and start is not None:
                if n - start > limit:
                    bad.append('%s:%d: %s is %d lines' %
                               (path, start, name, n - start))
                start = name = None
    return bad


def main(argv):
    try:
        if len(argv) == 3 and argv[1] == 'floors':
            for k, v in sorted(floors(argv[2]).items(), key=lambda x: x[1]):
                print(v, k)
            return 0
        if len(argv) == 4 and argv[1] == 'check':
            bad = check(argv[2], argv[3])
        elif len(argv) == 3 and argv[1] == 'symbols':
            bad = symbols(argv[2])
        elif len(argv) >= 3 and argv[1] == 'long':
            bad = long_functions(int(argv[2]), argv[3:])
        else:
            print(__doc__.strip().split('\n\n')[1], file=sys.stderr)
            return 2
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print('layers.py: %s' % e, file=sys.stderr)
        return 2
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
