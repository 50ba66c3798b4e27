#!/usr/bin/env python3
"""names.py: writes names.h, the driver functions the gate exports under their own names.

    python3 preload/cuda/names.py /usr/local/cuda [EXPORTS] > preload/cuda/names.h

The names are those a CUDA Toolkit's link stub of libcuda exports (lib64/stubs/libcuda.so, read
with nm), which is what a program linked with -lcuda can call, and those of EXPORTS, a file of a
real libcuda's exported names, one a line (`nm -D --defined-only libcuda.so.1`), which adds the
graphics interop (GL, EGL, VDPAU) the stub leaves out; the driver's debugger hooks (cudbg*) are
not functions of the API. For each, the declaration in cuda.h or an interop header gives the
8-byte words of arguments the function takes on the stack under the x86-64 System V calling
convention: the gate's trampoline copies that many to the driver's function (16 for a name no
header declares). A variant without a declaration of its own (_ptsz, _ptds, _v2) takes its base
name's. A structure passed by value that BY_VALUE does not size stops the script: read its
definition and add it."""
import re
import subprocess
import sys

GP_REGS, SSE_REGS, UNKNOWN_WORDS = 6, 8, 16
HEADERS = ['cuda.h', 'cudaGL.h', 'cudaEGL.h', 'cudaVDPAU.h', 'cudaProfiler.h']
# Structures passed by value, and their size in bytes. Over 16 bytes they go on the stack whole;
# up to 16 they take one or two general registers (none of these holds a float). CUeglFrame: a
# union of three pointers, six unsigned ints and three enums, 60 bytes padded to 64.
BY_VALUE = {'CUipcMemHandle': 64, 'CUipcEventHandle': 64, 'CUmemLocation': 8, 'CUeglFrame': 64}
FLOATS = {'float', 'double'}


def declarations(root):
    """Each function's parameters, and the names of the structures typedef'd by value."""
    found, structs = {}, set()
    for h in HEADERS:
        try:
            text = open(f'{root}/include/{h}').read()
        except OSError:
            continue
        text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
        text = re.sub(r'//[^\n]*', '', text)
        for name, params in re.findall(r'CUresult\s+CUDAAPI\s+(\w+)\s*\(([^;{]*?)\)\s*;', text,
                                       re.S):
            found.setdefault(name, ' '.join(params.split()))
        structs.update(re.findall(r'typedef\s+(?:struct|union)\s*\w*\s*\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}\s*(\w+)\s*;',
                                  text))
        structs.update(re.findall(r'typedef\s+(?:struct|union)\s+\w+\s+(\w+)\s*;', text))
    return found, structs


def words(params, where, structs):
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
        elif base in structs or re.fullmatch(r'CU\w+_st', base):
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
    decls, structs = declarations(root)
    nm = subprocess.run(['nm', '-D', '--defined-only', f'{root}/lib64/stubs/libcuda.so'],
                        check=True, capture_output=True, text=True).stdout
    exported = [line.split()[-1] for line in nm.splitlines() if line.split()]
    if len(sys.argv) > 2:
        exported += [line.split()[-1] for line in open(sys.argv[2]) if line.split()]
    names = sorted({n.split('@')[0] for n in exported if re.match(r'cu[A-Z]', n)})
    print('/* names: the driver functions the gate exports under their own names, sorted, with the')
    print(' * 8-byte words of arguments each takes on the stack (x86-64), which its trampoline copies.')
    print(' * Written by names.py from a CUDA Toolkit\'s headers and libcuda link stub, and a real')
    print(' * libcuda\'s exports (CUDA 13.0 and driver 580.159.04 here); do not edit. */')
    for name in names:
        base = name
        while base not in decls and re.search(r'_(v\d+|ptsz|ptds)$', base):
            base = re.sub(r'_(v\d+|ptsz|ptds)$', '', base)
        n = words(decls[base], name, structs) if base in decls else UNKNOWN_WORDS
        print(f'CN_FN({name}, {n})')


if __name__ == '__main__':
    main()
