#!/usr/bin/env python3
"""Bytes of code and read-only data a linked board program takes from
libnnmem.a (or a copy named libnnmem-*.a), from its GNU ld map file (--gc-sections: only what is kept),
and, with --class, the TFLite Micro class's own code and vtable (from the
ELF's symbols, via arm-none-eabi-nm). Prints one line:

    nnmem NNN B (own MMM, mem* KKK, compiler helpers HHH) class CCC B total TTT B

where "own" is nnmem's object (its code, and the parts of core LTO merged
in), "mem*" compiler_builtins' memcpy/memmove/memset/memcmp when the
program took them from the archive, "compiler helpers" the rest of
compiler_builtins (v6-M division and the like).

    code_size.py MAP [--class ELF]
"""
import re
import subprocess
import sys


def from_map(path):
    own = mem = helpers = 0
    section = None
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    # Only the memory map (after "Linker script and memory map") lists kept
    # input sections with addresses.
    start = next(i for i, l in enumerate(lines) if l.startswith("Linker script and memory map"))
    for line in lines[start:]:
        m = re.match(r"^ (\.(?:text|rodata)[^\s]*)\s*$", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^ (\.(?:text|rodata)[^\s]*)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)", line)
        if not m:
            section = None
            continue
        name = m.group(1) or section
        section = None
        size = int(m.group(3), 16)
        origin = m.group(4)
        library = re.search(r"libnnmem[^/(]*\.a\((.*)\)$", origin)
        if not name or not library or size == 0:
            continue
        member = library.group(1)
        if member.startswith("nnmem"):
            own += size
        elif re.search(r"mem(cpy|move|set|cmp|clr)|\bbcmp", name):
            mem += size
        else:
            helpers += size
    return own, mem, helpers


def class_bytes(elf):
    out = subprocess.run(["arm-none-eabi-nm", "-S", "-C", elf], capture_output=True, text=True, check=True).stdout
    seen = set()
    total = 0
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and "NnmemMemoryPlanner" in parts[3] and parts[0] not in seen:
            seen.add(parts[0])  # aliases (complete/base destructors) once
            total += int(parts[1], 16)
    return total


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    own, mem, helpers = from_map(args[0])
    klass = class_bytes(args[2]) if len(args) == 3 and args[1] == "--class" else 0
    nnmem = own + mem + helpers
    print(f"nnmem {nnmem} B (own {own}, mem* {mem}, compiler helpers {helpers}) class {klass} B total {nnmem + klass} B")


main()
