#!/usr/bin/env python3
"""runpath_to_rpath.py — turn a shared library's DT_RUNPATH into DT_RPATH, in place.

Why: a library with DT_RUNPATH (Debian's Open MPI libraries have one naming
/usr/lib/x86_64-linux-gnu/openmpi/lib) has its own dependencies looked up through that path and
the system's, never through the executable's RPATH, so in the package (tools/gpu/package.sh)
they would not be found on a machine without Open MPI. With DT_RPATH the loader tries the same
path first and then the RPATHs of the objects that loaded it, up to the executable's
($ORIGIN/../lib: the package). Only the tag changes; the path string stays. No patchelf needed.

usage: runpath_to_rpath.py [--reverse | --origin-lib] FILE...   (64-bit little-endian ELF; prints
what it changed)
  --reverse turns DT_RPATH back into DT_RUNPATH (tests/gpu breaks a package copy with it)
  --origin-lib also rewrites the path to $ORIGIN/../lib, in place in the dynamic string table
    (it must be no longer than the old one): for an executable carried into the package's bin/
    from the system (Open MPI's launcher), which then finds its libraries as the package's own
    binaries do
"""
import struct
import sys

DT_NULL, DT_STRTAB, DT_RPATH, DT_RUNPATH, PT_LOAD, PT_DYNAMIC = 0, 5, 15, 29, 1, 2
ORIGIN_LIB = b"$ORIGIN/../lib"


def file_offset_of(data, e_phoff, e_phentsize, e_phnum, address):
    """The file offset of a virtual address, through the PT_LOAD segment that maps it."""
    for i in range(e_phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == PT_LOAD and p_vaddr <= address < p_vaddr + p_filesz:
            return p_offset + (address - p_vaddr)
    sys.exit(f"runpath_to_rpath.py: no PT_LOAD segment maps address {address:#x}")


def set_path(data, e_phoff, e_phentsize, e_phnum, dynamic, offset_in_strtab, path):
    """Overwrites the string at offset_in_strtab of DT_STRTAB with path, NUL-padded."""
    strtab = None
    for at in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, value = struct.unpack_from("<qQ", data, at)
        if tag == DT_NULL:
            break
        if tag == DT_STRTAB:
            strtab = value
    if strtab is None:
        sys.exit("runpath_to_rpath.py: no DT_STRTAB")
    start = file_offset_of(data, e_phoff, e_phentsize, e_phnum, strtab) + offset_in_strtab
    old_len = data.index(b"\0", start) - start
    if len(path) > old_len:
        sys.exit(f"runpath_to_rpath.py: {path.decode()} is longer than the path it would replace")
    data[start:start + old_len] = path + b"\0" * (old_len - len(path))


def convert(path, old_tag=DT_RUNPATH, new_tag=DT_RPATH, new_path=None):
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
                    if new_path is not None:
                        _, value = struct.unpack_from("<qQ", data, at)
                        set_path(data, e_phoff, e_phentsize, e_phnum, (p_offset, p_filesz), value, new_path)
                    changed += 1
        if changed:
            f.seek(0)
            f.write(data)
            names = {DT_RPATH: "DT_RPATH", DT_RUNPATH: "DT_RUNPATH"}
            print(f"{path}: {names[old_tag]} -> {names[new_tag]}" + (f" [{new_path.decode()}]" if new_path else ""))


if __name__ == "__main__":
    args = sys.argv[1:]
    option = args[0] if args and args[0] in ("--reverse", "--origin-lib") else None
    files = args[1:] if option else args
    if not files:
        sys.exit("usage: runpath_to_rpath.py [--reverse | --origin-lib] FILE...")
    for p in files:
        if option == "--reverse":
            convert(p, DT_RPATH, DT_RUNPATH)
        else:
            convert(p, new_path=ORIGIN_LIB if option == "--origin-lib" else None)
