#!/usr/bin/env python3
"""check_standalone.py — the repository stands alone (ctest test_standalone).

What a user builds, runs or reads must not need the tests' reference data folder (`../shared`
beside the checkout) or design notes kept outside the repository:
  - no product file names `../shared`, `shared/design`, or the outside notes ARCHITECTURE.md,
    NUMERICS.md, STYLE.md (the design is docs/design.md and docs/numerics.md);
  - every `docs/*.md` that a file names exists, so a comment's pointer never dangles.
The test harness may read the reference data (it skips without it): tests/, tools/goldens/
(they regenerate goldens from it), tools/gpu/ (the GPU check runs the test suite), tools/test.sh
and .ci/ are not product files.
usage: check_standalone.py PROJECT_DIR   (exit 1 with one line per finding)
"""
import os
import re
import subprocess
import sys

HARNESS = ("tests/", "tools/goldens/", "tools/gpu/", ".ci/")
HARNESS_FILES = {"tools/test.sh", "tools/check_standalone.py"}
OUTSIDE = re.compile(r"\.\./shared|shared/design|\b(?:ARCHITECTURE|NUMERICS|STYLE)\.md")
DOC_REF = re.compile(r"\bdocs/([A-Za-z0-9_.-]+\.md)\b")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for here, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith((".git", "build"))]
            found += [os.path.relpath(os.path.join(here, f), root) for f in files]
        return found


def main():
    root = sys.argv[1]
    problems = []
    for rel in tracked_files(root):
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue  # binary files name nothing
        product = not rel.startswith(HARNESS) and rel not in HARNESS_FILES
        for number, line in enumerate(text.splitlines(), 1):
            if product and (m := OUTSIDE.search(line)):
                problems.append(f"{rel}:{number}: names '{m.group(0)}', which is outside the repository")
            for doc in DOC_REF.findall(line):
                if not os.path.isfile(os.path.join(root, "docs", doc)):
                    problems.append(f"{rel}:{number}: names docs/{doc}, which does not exist")
    for p in problems:
        print(p)
    if problems:
        print(f"check_standalone: {len(problems)} finding(s)")
        return 1
    print("check_standalone: no product file names the reference data folder or an outside note; "
          "every docs/*.md named exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
