#!/usr/bin/env python3
"""names.py: writes names.h, the driver functions the gate exports under their own names.

    python3 preload/cuda/names.py /usr/local/cuda > preload/cuda/names.h

The names are those a CUDA Toolkit's link stub of libcuda exports (lib64/stubs/libcuda.so, read
with nm), which is what a program linked with -lcuda can call. For each, cuda.h's declaration
gives the 8-byte words of arguments the function takes on the stack under the x86-64 System V
calling convention: the gate's trampoline copies that many to the driver's function (16 for a
name cuda.h does not declare). A variant without a declaration of its own (_ptsz, _ptds, _v2)
takes its base name's. A type passed by value that this script does not know stops it: add it to
BY_VALUE with its size after reading its definition in cuda.h."""
import re
import subprocess
import sys

GP_REGS, SSE_REGS, UNKNOWN_WORDS = 6, 8, 16
# Structures passed by value, and their size in bytes. Over 16 bytes they go on the stack whole;
# up to 16 they take one or two general registers (none of these holds a float).
BY_VALUE = {'CUipcMemHandle': 64, 'CUipcEventHandle': 64, 'CUmemLocation': 8}
FLOATS = {'float', 'double'}


def declarations(cuda_h):
    text = re.sub(r'/\*.*?\*/', '', open(cuda_h).read(), flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    found = {}
    for name, params in re.findall(r'CUresult\s+CUDAAPI\s+(\w+)\s*\(([^;{]*?)\)\s*;', text, re.S):
        found.setdefault(name, ' '.join(params.split()))
    return found


def words(params, where):
    gp, sse, stack = 0, 0, 0
    if params in ('', 'void'):
        return 0
    for p in params.split(','):
        p = p.strip()
        bare = re.sub(r'\b(const|volatile|struct|enum)\b', ' ', p).split()
        base = bare[0] if bare else ''
        if '*' in p or '[' in p:
            kind = 'int'
        elif base in FLOATS:
            kind = 'sse'
        elif base in BY_VALUE:
            size = BY_VALUE[base]
            kind = 'mem' if size > 16 else ('int2' if size > 8 else 'int')
        elif re.fullmatch(r'CU\w+_st', base) or (base.startswith('CU') and base.endswith('_t')):
            sys.exit(f'{where}: {p!r}: a structure passed by value: add it to BY_VALUE')
        else:
            kind = 'int'
        if kind == 'int':
            if gp < GP_REGS:
                gp += 1
            else:
                stack += 1
        elif kind == 'int2':
            if gp + 2 <= GP_REGS:
                gp += 2
            else:
                stack += 2
        elif kind == 'sse':
            if sse < SSE_REGS:
                sse += 1
            else:
                stack += 1
        else:
            stack += (BY_VALUE[base] + 7) // 8
    return stack


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '/usr/local/cuda'
    decls = declarations(f'{root}/include/cuda.h')
    nm = subprocess.run(['nm', '-D', '--defined-only', f'{root}/lib64/stubs/libcuda.so'],
                        check=True, capture_output=True, text=True).stdout
    names = sorted({line.split()[-1].split('@')[0] for line in nm.splitlines()
                    if line.split() and line.split()[-1].startswith('cu')})
    print('/* names: the driver functions the gate exports under their own names, sorted, with the')
    print(' * 8-byte words of arguments each takes on the stack (x86-64), which its trampoline copies.')
    print(' * Written by names.py from a CUDA Toolkit (cuda.h and the libcuda link stub); do not edit. */')
    for name in names:
        base = name
        while base not in decls and re.search(r'_(v\d+|ptsz|ptds)$', base):
            base = re.sub(r'_(v\d+|ptsz|ptds)$', '', base)
        n = words(decls[base], name) if base in decls else UNKNOWN_WORDS
        print(f'CN_FN({name}, {n})')


if __name__ == '__main__':
    main()
