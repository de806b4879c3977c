#!/usr/bin/env python3
"""plot_run.py — the loss curve of a farthing run: training loss and eval loss against steps,
from RUN_DIR/metrics.jsonl, as a PNG (matplotlib). `farthing plot RUN_DIR` runs this script.

    python3 tools/plot_run.py RUN_DIR [--out PNG]     (default PNG: RUN_DIR/loss.png)

Prints the PNG's path and how many points each curve has. Exit 2 for bad input (no
metrics.jsonl, no loss record, a line that is not JSON), 3 when matplotlib is not installed.
Needs: matplotlib (pip install matplotlib, or Debian's python3-matplotlib for /usr/bin/python3).
Tested by: tests/cli/test_plot.sh.
"""
import argparse
import json
import os
import sys


def fail(message, code=2):
    print(f"farthing plot: {message}", file=sys.stderr)
    sys.exit(code)


def read_metrics(path):
    if not os.path.isfile(path):
        fail(f"{path} does not exist; give the run directory of a training run (its checkpoint.run_dir)")
    train, evals = [], []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                fail(f"{path}:{number} is not a JSON object ({e.msg}); expected one metrics record per line")
            if not isinstance(record, dict) or "step" not in record:
                fail(f"{path}:{number} has no \"step\"; expected a farthing metrics record")
            if "loss" in record:
                train.append((record["step"], record["loss"]))
            if "eval_loss" in record:
                evals.append((record["step"], record["eval_loss"]))
    if not train and not evals:
        fail(f"{path} holds no \"loss\" or \"eval_loss\" record yet; train at least one step first")
    return train, evals


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir")
    p.add_argument("--out", help="PNG to write (default: RUN_DIR/loss.png)")
    a = p.parse_args()
    train, evals = read_metrics(os.path.join(a.run_dir, "metrics.jsonl"))
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError as e:
        fail(f"needs matplotlib, which {sys.executable} cannot import ({e}); install it with "
             "`python3 -m pip install matplotlib` (or Debian's python3-matplotlib for /usr/bin/python3)", 3)

    out = a.out or os.path.join(a.run_dir, "loss.png")
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    if train:
        ax.plot([s for s, _ in train], [v for _, v in train], label="train loss", linewidth=1.2)
    if evals:
        ax.plot([s for s, _ in evals], [v for _, v in evals], "o-", label="eval loss", linewidth=1.2, markersize=4)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token)")
    ax.set_title(os.path.basename(os.path.normpath(a.run_dir)))
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(out, format="png")
    except OSError as e:
        fail(f"cannot write {out} ({e.strerror}); pass --out with a writable path")
    print(f"farthing plot: wrote {out} ({len(train)} training and {len(evals)} eval points)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
