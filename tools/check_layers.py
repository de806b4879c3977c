#!/usr/bin/env python3
"""check_layers.py — the source tree's layer rules, checked (ctest test_layers).

1. Includes run down the layer order only (docs/layers.md):
     kernels/numerics -> kernels/{cpu, cuda} -> framework/core -> framework/backend
     -> framework/optim -> framework/dist -> framework/ckpt -> framework/data
     -> models -> train/recipe -> train/loop -> train/plan -> tools
   A file may include its own folder and any folder before it; kernels/cpu and kernels/cuda are
   siblings and include neither each other. The few includes that still run upward are listed in
   KNOWN_UPWARD with the reason; the check fails on any other, and on an entry that is no longer
   needed, so the list can only shrink.
2. CUDA headers only in kernels/cuda/, framework/backend/cuda*, framework/dist/nccl* and the GPU
   benchmarks (tools/bench/bench_gemm.cpp, tools/bench/*cuda*): the CPU build never needs nvcc.
3. Every test a file header cites after "Tested by:" exists (tests/ or tools/ paths), and every
   tests/... path that any comment names exists: C++/CUDA // and /* */ comments, Python #
   comments and docstrings, shell and CMake # comments, in kernels/, framework/, models/,
   tools/ and tests/. A path segment in capitals (tests/fuzz/corpus/TARGET) stands for any name,
   and {a,b} for each alternative.

usage: check_layers.py SOURCE_ROOT      (exit 1 with one line per finding)
       check_layers.py --edges BEFORE_ROOT AFTER_ROOT
           the include edges between folders of two trees, as a markdown table (docs/layers.md)
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
    "train/recipe",
    "train/loop",
    "train/plan",
    "tools",
]

# (including file, included header): upward includes not yet removed, with the reason.
KNOWN_UPWARD = {}

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
    for path in source_files(root, ["kernels", "framework", "models", "train", "tools"]):
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
        paths += expand_cited(token)
    return paths


def check_tested_by(root, findings):
    for path in source_files(root, ["kernels", "framework", "models", "train", "tools", "tests"]):
        if not path.endswith(SOURCE_EXT + (".sh", ".py", ".cmake")):
            continue
        head = open(os.path.join(root, path), errors="replace").read(8000)
        for cited in cited_tests(head):
            if not glob.glob(os.path.join(root, cited)):
                findings.append(f"{path}: 'Tested by:' cites {cited}, which does not exist")


CITED_TEST_PATH = re.compile(r"(?<![\w/.-])tests/[A-Za-z0-9_./*{},-]*")
C_LIKE_EXT = (".h", ".hpp", ".cpp", ".cu", ".cuh", ".c")
HASH_COMMENT_EXT = (".sh", ".cmake", "CMakeLists.txt")


def c_comments(text):
    """(line number, text) of every // and /* */ comment of C++/CUDA source; string and character
    literals (raw strings included) are skipped, so "http://..." in code is no comment."""
    out, i, line, n = [], 0, 1, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append((line, text[i:end]))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for k, part in enumerate(text[i:end].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, end)
            i = end
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i)
            close = ")" + text[i + 2:open_paren] + '"'
            end = text.find(close, open_paren)
            end = n if end < 0 else end + len(close)
            line += text.count("\n", i, end)
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            if c == "\n":
                line += 1
            i += 1
    return out


def hash_comments(text):
    """(line number, text) of every # comment of shell or CMake source: a # outside quotes that
    starts a word. Quotes are followed within a line only, so one stray apostrophe in a heredoc
    cannot hide the rest of the file."""
    out = []
    for line_no, line in enumerate(text.splitlines(), 1):
        quote = None
        for k, c in enumerate(line):
            if quote:
                if c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == "#" and (k == 0 or line[k - 1] in " \t;(|&"):
                out.append((line_no, line[k:]))
                break
    return out


def python_comments(text):
    """(line number, text) of every # comment and docstring (a string standing alone as a statement)."""
    import io
    import tokenize
    out, statement_start = [], True
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string))
            elif tok.type == tokenize.STRING and statement_start:
                for k, part in enumerate(tok.string.split("\n")):
                    out.append((tok.start[0] + k, part))
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                statement_start = tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    except (tokenize.TokenError, SyntaxError):
        return hash_comments(text)
    return out


def comments_of(path, text):
    if path.endswith(C_LIKE_EXT):
        return c_comments(text)
    if path.endswith(".py"):
        return python_comments(text)
    if path.endswith(HASH_COMMENT_EXT):
        return hash_comments(text)
    return []


def expand_cited(token):
    """The glob patterns a cited path stands for: {a,b} alternatives, CAPITAL segments as any name."""
    token = token.rstrip(".,;)")
    if "{" in token and "}" in token:
        before, rest = token.split("{", 1)
        alternatives, after = rest.split("}", 1)
        tokens = [before + a + after for a in alternatives.split(",")]
    else:
        tokens = [token]
    return ["/".join("*" if re.fullmatch(r"[A-Z][A-Z0-9_]*", seg) else seg for seg in t.split("/")) for t in tokens]


def check_comment_citations(root, findings):
    for path in source_files(root, ["kernels", "framework", "models", "train", "tools", "tests"]):
        text = open(os.path.join(root, path), errors="replace").read()
        for line_no, comment in comments_of(path, text):
            for m in CITED_TEST_PATH.finditer(comment):
                for cited in expand_cited(m.group(0)):
                    if not glob.glob(os.path.join(root, cited)):
                        findings.append(f"{path}:{line_no}: a comment cites {cited}, which does not exist")


# An older tree's folders, under their current names (--edges compares a tree of the old layout):
# the trainer's one folder is counted as train/loop.
RENAMED = {"framework/recipe": "train/recipe", "framework/train": "train/loop",
           "framework/run/recipe": "train/recipe", "framework/run/train": "train/loop"}


def folder_edges(root):
    """{(from folder, to folder): number of include lines} between layered folders of a tree."""
    edges = {}
    for path in source_files(root, ["kernels", "framework", "models", "train", "tools"]):
        if not path.endswith(SOURCE_EXT):
            continue
        here = level_of(RENAMED.get(folder_of(path), folder_of(path)))
        if here is None:
            continue
        for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', open(os.path.join(root, path), errors="replace").read(), re.M):
            target = RENAMED.get(folder_of(m.group(1)), folder_of(m.group(1)))
            there = level_of(target)
            if there is None or there[1] == here[1]:
                continue
            edges[(here[1], there[1])] = edges.get((here[1], there[1]), 0) + 1
    return edges


def folder_of(path):
    parts = path.split("/")
    if parts[0] in ("models", "tools"):
        return parts[0]
    if parts[:2] == ["framework", "run"]:  # an older tree's layout
        return "/".join(parts[:3])
    return "/".join(parts[:2])


def print_edge_table(before_root, after_root):
    before, after = folder_edges(before_root), folder_edges(after_root)
    def order(edge):
        return (level_of(edge[0])[0], level_of(edge[1])[0], edge)
    print("| from | to | direction | include lines before | after |")
    print("|---|---|---|---:|---:|")
    for edge in sorted(set(before) | set(after), key=order):
        a, b = level_of(edge[0])[0], level_of(edge[1])[0]
        direction = "down" if b < a else ("**sibling**" if a == b else "**up**")
        print(f"| {edge[0]} | {edge[1]} | {direction} | {before.get(edge, 0)} | {after.get(edge, 0)} |")
    up = lambda edges: sum(n for e, n in edges.items() if level_of(e[1])[0] >= level_of(e[0])[0])
    print(f"\nIncludes against the order (up or sibling): {up(before)} before, {up(after)} after.")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--edges":
        print_edge_table(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    findings = []
    check_includes(root, findings)
    check_tested_by(root, findings)
    check_comment_citations(root, findings)
    findings = list(dict.fromkeys(findings))
    for f in findings:
        print(f)
    print(f"check_layers: {len(findings)} finding(s)" if findings else
          f"check_layers: includes follow the layer order ({len(KNOWN_UPWARD)} known upward includes left), "
          f"CUDA headers confined, every cited test exists")
    sys.exit(1 if findings else 0)


if __name__ == "__main__":
    main()
