#!/usr/bin/env python3
"""report.py — gpu-report.md from the logs tools/gpu/check.sh leaves in its log folder.

Sections: what ran where; the steps (outcome, exit code, seconds); every test's result from the
ctest logs (pass/fail/skip counts, then one row per test); the trainer's smoke run and the
two-rank ZeRO check as printed; the preset runs' figures (train_presets.sh); the FP8 GEMM plans and throughput
(fp8-gemm); packed documents through cuDNN (cudnn-documents); each benchmark's table as printed;
the versions; the tail of every log whose step did not pass. Only reads files; prints Markdown.

usage: report.py LOG_DIR ARCHIVE REPO_ROOT
"""
import datetime
import os
import platform
import re
import subprocess
import sys

TEST_LINE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(?:\*+)?"
                       r"(Passed|Failed|Skipped|Not Run|Timeout|Exception|\*\*\*\w+)?.*?([\d.]+) sec")


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def test_rows(log_text, group):
    rows = []
    for line in (log_text or "").splitlines():
        m = TEST_LINE.match(line)
        if not m:
            continue
        name, rest = m.group(1), line[m.end(1):]
        if "Passed" in rest:
            result = "pass"
        elif "Skipped" in rest or "Not Run (Disabled)" in rest:
            result = "skip"
        elif "Timeout" in rest:
            result = "TIMEOUT"
        elif "Not Run" in rest:
            result = "NOT RUN"
        else:
            result = "FAIL"
        rows.append((name, group, result, m.group(3)))
    return rows


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: report.py LOG_DIR ARCHIVE REPO_ROOT")
    log_dir, archive, root = sys.argv[1:]
    steps = [line.split("\t") for line in (read(os.path.join(log_dir, "steps.tsv")) or "").splitlines() if line]
    out = []
    out.append("# farthing GPU check")
    out.append("")
    commit = ""
    try:
        commit = subprocess.run(["git", "-C", root, "log", "-1", "--format=%h %s"], capture_output=True, text=True,
                                timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    size = os.path.getsize(archive) if os.path.exists(archive) else 0
    out.append(f"- when: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M:%S UTC')}; "
               f"host {platform.node()}, {os.cpu_count()} cores")
    built = (read(os.path.join(os.environ.get("PKG", ""), "BUILT_FROM")) or "unknown").strip().replace("\n", "; ")
    out.append(f"- package: {os.path.basename(archive)}, {size / 2**20:.1f} MiB, binaries from: {built}")
    out.append(f"- repository here: {commit or 'no git history'}")
    total = sum(int(s[3]) for s in steps if len(s) == 4 and s[3].isdigit())
    out.append(f"- wall time of the steps: {total} s")
    out.append("")
    out.append("## Steps")
    out.append("")
    out.append("| step | outcome | exit | seconds |")
    out.append("|---|---|---|---|")
    for s in steps:
        if len(s) == 4:
            out.append(f"| {s[0]} | {s[2]} | {s[1]} | {s[3]} |")
    out.append("")

    # The first part: the step profiles and their peers, then the A/B pairs (check.sh), each
    # log without the trainer's progress lines.
    profiled = [s[0] for s in steps if len(s) == 4 and s[0].startswith(("profile-", "ab-"))]
    if profiled:
        out.append("## Step profiles (the first part)")
        for step in profiled:
            text = read(os.path.join(log_dir, step + ".log"))
            keep = [l for l in (text or "(did not run)").splitlines() if not (l.startswith("step ") and " | " in l)]
            out += ["", f"### {step}", "", "```", "\n".join(keep).rstrip(), "```"]
        out.append("")

    rows = []
    for name, group in (("cuda-tests", "cuda"), ("cpu-tests", "cpu")):
        for f in sorted(os.listdir(log_dir)):
            if f == f"{name}.log" or (f.startswith(name + "-") and f.endswith(".log")):
                rows += test_rows(read(os.path.join(log_dir, f)), group)
    out.append("## Tests")
    out.append("")
    if rows:
        counts = {}
        for r in rows:
            counts[r[2]] = counts.get(r[2], 0) + 1
        out.append("Totals: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" (of {len(rows)})")
        out.append("")
        out.append("| test | group | result | seconds |")
        out.append("|---|---|---|---|")
        for r in rows:
            out.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |")
    else:
        out.append("No test results (the test steps did not run).")
    out.append("")

    for step, title in (("train-smoke", "The one-GPU trainer against the CPU (train_smoke.sh)"),
                        ("zero-staged-np2", "ZeRO-3 over two ranks on the one GPU, staged, against one rank "
                                            "(zero_staged_check.sh)")):
        text = read(os.path.join(log_dir, step + ".log"))
        out.append(f"## {title}")
        out.append("")
        out.append("```")
        out.append((text or "(did not run)").rstrip())
        out.append("```")
        out.append("")
    out.append("## The trainer at the aims' sizes (train_presets.sh)")
    out.append("")
    out.append("```")
    for step in ("train-resume-135m", "train-llama-1b", "train-llama-8b", "train-llama-8b-fp8", "train-qwen-7b"):
        text = read(os.path.join(log_dir, step + ".log"))
        # The summaries and the curve against the CPU ("step N: ..."), not the progress lines.
        keep = [l for l in (text or "").splitlines()
                if l.startswith(("train_presets:", "ok:", "FAIL", "farthing: error"))
                or (l.startswith("step ") and " | " not in l)]
        out.append(f"{step}: " + ("(did not run)" if text is None else ""))
        out.extend(keep)
    out.append("```")
    out.append("")
    roofline = read(os.path.join(log_dir, "roofline-8b.log"))
    out.append("The 8B recipe on paper (`farthing plan --roofline h200`), to set beside train-llama-8b:")
    out.append("")
    out.append("```")
    rows = (roofline or "").splitlines()
    start = next((i for i, l in enumerate(rows) if l.startswith("Roofline")), None)
    out.append("\n".join(rows[start:]).rstrip() if start is not None else "(did not run)")
    out.append("```")
    out.append("")
    fp8 = read(os.path.join(log_dir, "fp8-gemm.log"))
    out.append("## FP8 GEMMs: plans and throughput (fp8-gemm)")
    out.append("")
    out.append("```")
    keep = [l for l in (fp8 or "").splitlines() if l.startswith(("matmul_fp8 plan", "fp8 gemm", "[  PASSED", "[  FAILED"))]
    out.append("\n".join(keep) if keep else "(did not run)")
    out.append("```")
    out.append("")
    documents = read(os.path.join(log_dir, "cudnn-documents.log"))
    out.append("## Packed documents through cuDNN's ragged batch (cudnn-documents)")
    out.append("")
    out.append("```")
    keep = [l for l in (documents or "").splitlines()
            if "documents" in l or l.startswith(("farthing:", "[  PASSED", "[  FAILED"))]
    out.append("\n".join(keep) if keep else "(did not run)")
    out.append("```")
    out.append("")
    out.append("## Benchmarks")
    for bench in ("bench-gemm", "bench-ops", "bench-numerics", "bench-optim", "bench-train"):
        text = read(os.path.join(log_dir, bench + ".log"))
        out.append("")
        out.append(f"### {bench.replace('-', ' ')} --device cuda")
        out.append("")
        out.append("```")
        out.append((text or "(did not run)").rstrip())
        out.append("```")
    out.append("")
    out.append("## Versions")
    out.append("")
    out.append((read(os.path.join(log_dir, "versions.log")) or "(not collected)").rstrip())
    smi = read(os.path.join(log_dir, "nvidia-smi.log"))
    if smi:
        out += ["", "```", "\n".join(smi.splitlines()[:20]), "```"]
    info = read(os.path.join(log_dir, "farthing-info.log"))
    if info:
        out += ["", "`farthing info`:", "", "```", info.rstrip(), "```"]
    libs = read(os.path.join(log_dir, "find_cuda_libs.log"))
    if libs:
        out += ["", "CUDA/NCCL libraries used:", "", "```", libs.rstrip(), "```"]

    bad = [s for s in steps if len(s) == 4 and s[2] not in ("pass", "skip", "absent")]
    if bad:
        out += ["", "## Steps that did not pass (last 40 lines of each log)"]
        for s in bad:
            text = read(os.path.join(log_dir, s[0] + ".log")) or "(no log)"
            out += ["", f"### {s[0]}: {s[2]}", "", "```", "\n".join(text.splitlines()[-40:]), "```"]
    print("\n".join(out))


if __name__ == "__main__":
    main()
