#!/usr/bin/env python3
"""runpath_to_rpath.py — turn a shared library's DT_RUNPATH into DT_RPATH, in place.

Why: a library with DT_RUNPATH (Debian's Open MPI libraries have one naming
/usr/lib/x86_64-linux-gnu/openmpi/lib) has its own dependencies looked up through that path and
the system's, never through the executable's RPATH, so in the package (tools/gpu/package.sh)
they would not be found on a machine without Open MPI. With DT_RPATH the loader tries the same
path first and then the RPATHs of the objects that loaded it, up to the executable's
($ORIGIN/../lib: the package). Only the tag changes; the path string stays. No patchelf needed.

usage: runpath_to_rpath.py [--reverse] FILE...   (64-bit little-endian ELF; prints what it changed)
  --reverse turns DT_RPATH back into DT_RUNPATH (tests/gpu breaks a package copy with it)
"""
import struct
import sys

DT_NULL, DT_RPATH, DT_RUNPATH, PT_DYNAMIC = 0, 15, 29, 2


def convert(path, old_tag=DT_RUNPATH, new_tag=DT_RPATH):
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            sys.exit(f"runpath_to_rpath.py: {path} is not a 64-bit little-endian ELF file")
        e_phoff, = struct.unpack_from("<Q", data, 0x20)
        e_phentsize, e_phnum = struct.unpack_from("<HH", data, 0x36)
        changed = 0
        for i in range(e_phnum):
            p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, e_phoff + i * e_phentsize)
            if p_type != PT_DYNAMIC:
                continue
            for at in range(p_offset, p_offset + p_filesz, 16):
                tag, = struct.unpack_from("<q", data, at)
                if tag == DT_NULL:
                    break
                if tag == old_tag:
                    struct.pack_into("<q", data, at, new_tag)
                    changed += 1
        if changed:
            f.seek(0)
            f.write(data)
            names = {DT_RPATH: "DT_RPATH", DT_RUNPATH: "DT_RUNPATH"}
            print(f"{path}: {names[old_tag]} -> {names[new_tag]}")


if __name__ == "__main__":
    args = sys.argv[1:]
    reverse = bool(args) and args[0] == "--reverse"
    files = args[1:] if reverse else args
    if not files:
        sys.exit("usage: runpath_to_rpath.py [--reverse] FILE...")
    for p in files:
        convert(p, DT_RPATH, DT_RUNPATH) if reverse else convert(p)
