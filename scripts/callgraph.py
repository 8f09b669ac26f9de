#!/usr/bin/env python3
# The kernel's call graph between files, read from the relocations of its object
# files, and its strongly connected sets: files that reach each other through
# calls, so none of them can be understood (or tested) without the others.
#
#   python3 scripts/callgraph.py [--refs] [--tests] [--why] [BUILD]
#
# Nodes are the kernel's own files (kernel/, net/, vdso/; with --tests also
# tests/kernel/); lwIP is left out. An edge a.c -> b.c means code in a.c calls a
# global function defined in b.c (a R_RISCV_CALL/CALL_PLT/JAL relocation); with
# --refs also any other reference to one (its address in a table or a callback).
# --why lists, for each edge inside a set, the functions that make it.
# Build the kernel first (make all).
import collections, glob, os, subprocess, sys

args = [a for a in sys.argv[1:] if not a.startswith('--')]
flags = {a for a in sys.argv[1:] if a.startswith('--')}
build = args[0] if args else 'build'
tool = os.environ.get('CROSS', 'riscv64-unknown-elf-')
folders = ['kernel', 'net', 'vdso'] + (['tests/kernel'] if '--tests' in flags else [])
objs = sorted(o for f in folders for o in glob.glob(os.path.join(build, f, '*.o')))
if not objs:
    sys.exit('callgraph: no object files under %s (run make all first)' % build)


def source(obj):
    return os.path.relpath(obj, build)[:-len('.o')]


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()


defined_in = {}                                  # global function -> its file
for o in objs:
    for line in run(tool + 'nm', '--defined-only', o):
        f = line.split()
        if len(f) == 3 and f[1] in 'TW':
            defined_in[f[2]] = source(o)

CALLS = {'R_RISCV_CALL', 'R_RISCV_CALL_PLT', 'R_RISCV_JAL'}
edges = collections.defaultdict(set)
why = collections.defaultdict(set)
for o in objs:
    me, section = source(o), ''
    for line in run(tool + 'objdump', '-r', o):
        if line.startswith('RELOCATION RECORDS FOR'):
            section = line.split('[')[1].split(']')[0]
            continue
        f = line.split()
        if len(f) < 3 or section.startswith(('.debug', '.eh_frame')):
            continue
        kind, sym = f[1], f[2].split('+')[0]
        to = defined_in.get(sym)
        if not to or to == me or kind == 'R_RISCV_RELAX':
            continue
        if kind in CALLS or '--refs' in flags:
            edges[me].add(to)
            why[me, to].add(sym)

# Tarjan's strongly connected components.
nodes = sorted({source(o) for o in objs})
index, low, stack, on_stack, sccs = {}, {}, [], set(), []
sys.setrecursionlimit(10000)


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in sorted(edges[v]):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on_stack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        scc = []
        while True:
            w = stack.pop()
            on_stack.discard(w)
            scc.append(w)
            if w == v:
                break
        sccs.append(sorted(scc))


for v in nodes:
    if v not in index:
        visit(v)
sccs.sort(key=lambda s: (-len(s), s))
print('%d files, %d file-to-file edges (%s)' % (len(nodes), sum(map(len, edges.values())),
                                                 'calls and references' if '--refs' in flags else 'calls'))
print('largest strongly connected set: %d files' % len(sccs[0]))
for scc in sccs:
    if len(scc) < 2:
        continue
    print('  %d: %s' % (len(scc), ' '.join(scc)))
    if '--why' in flags:
        for a in scc:
            for b in sorted(edges[a]):
                if b in scc:
                    print('       %s -> %s: %s' % (a, b, ' '.join(sorted(why[a, b]))))
