#!/usr/bin/env python3
"""find_cuda_libs.py — the folders that hold this machine's CUDA runtime, cuBLAS(Lt), NCCL and cuDNN.

The package never carries these (tools/gpu/gpu_machine_libs.txt). On the GPU machine NCCL comes
from the Python wheel nvidia-nccl-cu13, outside the loader's search path, and the toolkit's
lib64 may not be in the loader cache either. Prints the folders to put on LD_LIBRARY_PATH,
colon-separated (only those that hold a library the loader cache lacks); says on stderr where
each library was found or that it was not.

usage: find_cuda_libs.py
"""
import glob
import os
import site
import subprocess
import sys

# libcudnn.so.9 (optional: without it attention runs the fp32 kernel) comes from nvidia-cudnn-cu13, as PyTorch brings it.
WANTED = ["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libnccl.so.2", "libcudnn.so.9"]


def in_loader_cache():
    try:
        text = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {line.split()[0] for line in text.splitlines()[1:] if line.strip() and "x86-64" in line}


def candidate_dirs():
    dirs = ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda/lib"]
    roots = list(site.getsitepackages()) + [site.getusersitepackages()]
    for r in roots:
        # nvidia-nccl-cu13: nvidia/nccl/lib; CUDA 13 wheels (cuBLAS, the runtime): nvidia/cu13/lib.
        dirs += sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib")))
        dirs += sorted(glob.glob(os.path.join(r, "nvidia", "*", "*", "lib")))
    return [d for d in dirs if os.path.isdir(d)]


def main():
    cached = in_loader_cache()
    chosen = []
    for lib in WANTED:
        if lib in cached:
            print(f"{lib}: in the loader cache", file=sys.stderr)
            continue
        for d in candidate_dirs():
            if os.path.exists(os.path.join(d, lib)):
                print(f"{lib}: {d}", file=sys.stderr)
                if d not in chosen:
                    chosen.append(d)
                break
        else:
            print(f"{lib}: NOT FOUND", file=sys.stderr)
    print(":".join(chosen))


if __name__ == "__main__":
    main()
