#!/usr/bin/env python3
"""plot_run.py — the loss curve of a farthing run: training loss and eval loss against steps,
from RUN_DIR/metrics.jsonl, as a PNG (matplotlib). `farthing plot RUN_DIR` runs this script.
Several runs (for example one recipe at two precisions) share one plot, each labelled with its
directory's name, one colour per run: the training loss as a thin line, the eval loss as dots.

    python3 tools/plot_run.py RUN_DIR [RUN_DIR ...] [--out PNG]
        (default PNG: RUN_DIR/loss.png for one run, FIRST_RUN_DIR/compare.png for several)

Prints the PNG's path and how many points each curve has. Exit 2 for bad input (no
metrics.jsonl, no loss record, a line that is not JSON), 3 when matplotlib is not installed.
Needs: matplotlib (pip install matplotlib, or Debian's python3-matplotlib, which tools/setup.sh
installs). When the python3 on PATH cannot import it (a pyenv or venv Python does not see
Debian's dist-packages), the script runs itself once more under /usr/bin/python3, and says so
(pyplot_import.py).
Tested by: tests/cli/test_plot.sh.
"""
import argparse
import json
import os
import sys

from pyplot_import import import_pyplot


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
    p.add_argument("run_dir", nargs="+")
    p.add_argument("--out", help="PNG to write (default: RUN_DIR/loss.png; FIRST_RUN_DIR/compare.png for several)")
    a = p.parse_args()
    runs = [(d, *read_metrics(os.path.join(d, "metrics.jsonl"))) for d in a.run_dir]
    plt = import_pyplot(__file__, fail, "farthing plot")

    several = len(runs) > 1
    out = a.out or os.path.join(a.run_dir[0], "compare.png" if several else "loss.png")
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for i, (run_dir, train, evals) in enumerate(runs):
        name = os.path.basename(os.path.normpath(run_dir))
        prefix = f"{name}: " if several else ""
        colour = f"C{i}"
        if train:
            ax.plot([s for s, _ in train], [v for _, v in train], color=colour, label=prefix + "train loss",
                    linewidth=0.8 if several else 1.2, alpha=0.6 if several else 1.0)
        if evals:
            ax.plot([s for s, _ in evals], [v for _, v in evals], "o-", color=colour if several else "C1",
                    label=prefix + "eval loss", linewidth=1.2, markersize=4)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/token)")
    ax.set_title(" vs ".join(os.path.basename(os.path.normpath(d)) for d in a.run_dir))
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(out, format="png")
    except OSError as e:
        fail(f"cannot write {out} ({e.strerror}); pass --out with a writable path")
    counts = ", ".join(f"{len(t)} training and {len(e)} eval points" + (f" of {os.path.basename(os.path.normpath(d))}"
                                                                        if several else "") for d, t, e in runs)
    print(f"farthing plot: wrote {out} ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
