#!/usr/bin/env python3
"""check_layers.py — the source tree's layer rules, checked (ctest test_layers; issue 22).

1. Includes run down the layer order only (docs/layers.md):
     kernels/numerics -> kernels/{cpu, cuda} -> framework/core -> framework/backend
     -> framework/optim -> framework/dist -> framework/ckpt -> framework/data
     -> models -> framework/recipe -> framework/train -> tools
   A file may include its own folder and any folder before it; kernels/cpu and kernels/cuda are
   siblings and include neither each other. The few includes that still run upward are listed in
   KNOWN_UPWARD with the reason; the check fails on any other, and on an entry that is no longer
   needed, so the list can only shrink.
2. CUDA headers only in kernels/cuda/, framework/backend/cuda*, framework/dist/nccl* and the GPU
   benchmarks (tools/bench/bench_gemm.cpp, tools/bench/*cuda*): the CPU build never needs nvcc.
3. Every test a file header cites after "Tested by:" exists.

usage: check_layers.py SOURCE_ROOT      (exit 1 with one line per finding)
"""
import fnmatch
import glob
import os
import re
import sys

LAYERS = [
    "kernels/numerics",
    ("kernels/cpu", "kernels/cuda"),  # siblings: the same level
    "framework/core",
    "framework/backend",
    "framework/optim",
    "framework/dist",
    "framework/ckpt",
    "framework/data",
    "models",
    "framework/recipe",
    "framework/train",
    "tools",
]

# (including file, included header): upward includes not yet removed, with the reason.
KNOWN_UPWARD = {
    ("kernels/cuda/cuda_check.h", "framework/core/error.h"):
        "FARTHING_CUDA_CHECK throws farthing::Error, whose header lives in core/",
}

CUDA_HEADER = re.compile(r'^\s*#\s*include\s*<(cuda|cublas|nccl|curand|cufft)[^>]*>', re.M)
CUDA_ALLOWED = ["kernels/cuda/*", "framework/backend/cuda*", "framework/dist/nccl*",
                "tools/bench/bench_gemm.cpp", "tools/bench/*cuda*"]
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cu", ".cuh")


def level_of(path):
    """The layer index of a repository path, or None outside the layered folders."""
    for index, layer in enumerate(LAYERS):
        for folder in (layer if isinstance(layer, tuple) else (layer,)):
            if path == folder or path.startswith(folder + "/"):
                return index, folder
    return None


def source_files(root, folders):
    for folder in folders:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                path = os.path.relpath(os.path.join(dirpath, name), root)
                yield path


def check_includes(root, findings):
    used = set()
    for path in source_files(root, ["kernels", "framework", "models", "tools"]):
        if not path.endswith(SOURCE_EXT):
            continue
        here = level_of(path)
        if here is None:
            continue
        text = open(os.path.join(root, path), errors="replace").read()
        for line_no, line in enumerate(text.splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            there = level_of(m.group(1))
            if there is None or there[1] == here[1]:
                continue
            upward = there[0] > here[0] or (there[0] == here[0])  # a later layer, or a sibling
            if not upward:
                continue
            if (path, m.group(1)) in KNOWN_UPWARD:
                used.add((path, m.group(1)))
                continue
            what = "its sibling" if there[0] == here[0] else "a layer above it"
            findings.append(f"{path}:{line_no}: includes {m.group(1)}, {what} ({here[1]} may include only "
                            f"folders before it in docs/layers.md's order)")
        if CUDA_HEADER.search(text) and not any(fnmatch.fnmatch(path, p) for p in CUDA_ALLOWED):
            findings.append(f"{path}: includes a CUDA header; only {', '.join(CUDA_ALLOWED)} may")
    for stale in sorted(set(KNOWN_UPWARD) - used):
        findings.append(f"check_layers.py: KNOWN_UPWARD lists {stale[0]} -> {stale[1]}, which no longer "
                        f"exists; remove the entry")


def cited_tests(header_text):
    """The paths after 'Tested by:' in a file's header comment (up to the first blank comment line)."""
    m = re.search(r"Tested by:(.*?)(?:\n\s*(?://|#)?\s*\n|\n\s*#\s*(?:pragma|include)|\Z)", header_text, re.S)
    if not m:
        return []
    paths = []
    for token in re.findall(r"((?:tests|tools)/[A-Za-z0-9_./*{},-]+)", m.group(1)):
        token = token.rstrip(".,;)")
        if "{" in token and "}" in token:
            before, rest = token.split("{", 1)
            alternatives, after = rest.split("}", 1)
            paths += [before + a + after for a in alternatives.split(",")]
        else:
            paths.append(token)
    return paths


def check_tested_by(root, findings):
    for path in source_files(root, ["kernels", "framework", "models", "tools", "tests"]):
        if not path.endswith(SOURCE_EXT + (".sh", ".py", ".cmake")):
            continue
        head = open(os.path.join(root, path), errors="replace").read(8000)
        for cited in cited_tests(head):
            if not glob.glob(os.path.join(root, cited)):
                findings.append(f"{path}: 'Tested by:' cites {cited}, which does not exist")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    findings = []
    check_includes(root, findings)
    check_tested_by(root, findings)
    for f in findings:
        print(f)
    print(f"check_layers: {len(findings)} finding(s)" if findings else
          f"check_layers: includes follow the layer order ({len(KNOWN_UPWARD)} known upward includes left), "
          f"CUDA headers confined, every cited test exists")
    sys.exit(1 if findings else 0)


if __name__ == "__main__":
    main()
