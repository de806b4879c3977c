#!/usr/bin/env python3
"""versions.py — the NVIDIA driver, CUDA runtime, cuBLASLt and NCCL versions this machine's
loader finds (the libraries the package's binaries will use), as Markdown list items.

Each library is loaded by soname with ctypes, so LD_LIBRARY_PATH as check.sh sets it applies.
A library that cannot be loaded is reported as such; nothing here needs a GPU.

usage: versions.py
"""
import ctypes
import platform
import subprocess


def load(name):
    try:
        return ctypes.CDLL(name)
    except OSError as e:
        print(f"- {name}: cannot load ({e})")
        return None


def int_out(lib, fn):
    value = ctypes.c_int(0)
    status = getattr(lib, fn)(ctypes.byref(value))
    return value.value if status == 0 else None


def cuda_version(v):
    return "none" if not v else f"{v // 1000}.{v % 1000 // 10}"


def main():
    print(f"- host: {platform.node()}, {platform.machine()}, glibc {platform.libc_ver()[1]}, python {platform.python_version()}")
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=15)
        print(f"- nvidia-smi: {smi.stdout.strip() or smi.stderr.strip()}")
    except (OSError, subprocess.SubprocessError) as e:
        print(f"- nvidia-smi: not available ({e.__class__.__name__})")
    cudart = load("libcudart.so.13")
    if cudart:
        print(f"- CUDA driver API version: {cuda_version(int_out(cudart, 'cudaDriverGetVersion'))}"
              f"; CUDA runtime: {cuda_version(int_out(cudart, 'cudaRuntimeGetVersion'))}")
    lt = load("libcublasLt.so.13")
    if lt:
        lt.cublasLtGetVersion.restype = ctypes.c_size_t
        print(f"- cuBLASLt: {lt.cublasLtGetVersion()}")
    nccl = load("libnccl.so.2")
    if nccl:
        v = int_out(nccl, "ncclGetVersion")
        print(f"- NCCL: {v // 10000}.{v % 10000 // 100}.{v % 100}" if v else "- NCCL: ncclGetVersion failed")


if __name__ == "__main__":
    main()
