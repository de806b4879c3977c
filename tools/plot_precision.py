#!/usr/bin/env python3
"""plot_precision.py — the figures of `farthing bench precision`, from its precision.json, as PNGs
(matplotlib): the held-out loss of every trajectory, the unchanged fraction of bf16 weights per
step, and the gradient-magnitude histograms against fp16's range. The bench runs this script
after it wrote the JSON; it can be rerun by hand:

    python3 tools/plot_precision.py DIR/precision.json [--out-dir DIR]   (default: the JSON's folder)

Writes precision_loss.png, precision_unchanged.png and precision_underflow.png and prints their
paths; from the precision_fp4.json of `bench precision --fp4`, precision_fp4_loss.png only. Exit 2 for bad input (no such file, not the suite's JSON), 3 when matplotlib is not installed.
Needs: matplotlib (pip install matplotlib, or Debian's python3-matplotlib, which tools/setup.sh
installs; a python3 without it hands over to /usr/bin/python3's: pyplot_import.py).
Tested by: tests/train/loop/test_bench_precision.sh.
"""
import argparse
import json
import os
import sys

from pyplot_import import import_pyplot


def fail(message, code=2):
    print(f"plot_precision: {message}", file=sys.stderr)
    sys.exit(code)


def read_report(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        fail(f"cannot read {path} ({e.strerror}); give the precision.json that `farthing bench precision` wrote")
    except json.JSONDecodeError as e:
        fail(f"{path} is not JSON ({e.msg} at line {e.lineno})")
    if not isinstance(doc, dict) or doc.get("suite") != "precision":
        fail(f"{path} is not a `farthing bench precision` report (no \"suite\": \"precision\")")
    # `--fp4` writes only the trajectories (precision_fp4.json).
    for key in ("trajectories",) if doc.get("fp4_comparison") else ("sticking", "trajectories", "underflow"):
        if key not in doc:
            fail(f"{path} has no \"{key}\" section")
    return doc


def plot_loss(plt, doc, out):
    t = doc["trajectories"]
    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=100)
    for run in t["runs"]:
        if "refused" in run:  # a setting farthing will not run (RN without a master)
            continue
        steps = [s for s, _ in run["eval"]]
        losses = [v for _, v in run["eval"]]
        reference = run["name"].startswith("reference") or run["name"] == t.get("reference")
        style = "k-" if reference else "-"
        ax.plot(steps, losses, style, marker="o", markersize=3, linewidth=1.2, label=run["name"])
    ax.set_xlabel("step")
    ax.set_ylabel("held-out loss (nats/token)")
    # The model's name can be long (SmolLM2's names its GGUF and package): the run's settings go on a
    # second line so the title fits the figure.
    ax.set_title(f"{doc['model']}\nheld-out loss, lr {t['lr']:g} (constant), seed {doc.get('seed', '?')}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, format="png")
    plt.close(fig)


def plot_unchanged(plt, doc, out):
    s = doc["sticking"]
    lrs = s["lrs"]
    fig, axes = plt.subplots(1, len(lrs), figsize=(5.2 * len(lrs), 4.4), dpi=100, squeeze=False)
    for ax, lr in zip(axes[0], lrs):
        for run in s["runs"]:
            if run["lr"] != lr or "refused" in run:
                continue
            y = [100.0 * u for u in run["unchanged_fraction"]]
            ax.plot(range(1, len(y) + 1), y, marker="o", markersize=3, linewidth=1.2, label=run["name"])
        ax.set_xlabel("step")
        ax.set_ylabel("bf16 weights unchanged by the step (%)")
        ax.set_title(f"lr {lr:g}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{doc['model']}: weight sticking")
    fig.tight_layout()
    fig.savefig(out, format="png")
    plt.close(fig)


def plot_underflow(plt, doc, out):
    u = doc["underflow"]
    lo = u["min_log2"]
    fig, ax = plt.subplots(figsize=(9, 4.8), dpi=100)
    for h in u.get("histograms", []):
        total = max(1, h["nonzero"])
        xs = [lo + i for i in range(len(h["counts"]))]
        ys = [100.0 * c / total for c in h["counts"]]
        run = "reference" if h["run"].startswith("reference") else "fp16 run" if "fp16" in h["run"] else h["run"]
        ax.step(xs, ys, where="post", linewidth=1.2, label=f"{run}, step {h['step']}")
    flush = u["fp16_flush_log2"]
    scale = u["settled_loss_scale"]
    ax.axvline(flush, color="red", linestyle="--", linewidth=1, label="fp16 flushes to 0 below 2^-25")
    ax.axvline(u["fp16_subnormal_log2"], color="orange", linestyle=":", linewidth=1, label="fp16 subnormal below 2^-14")
    if scale > 0:
        import math
        shifted = flush - math.floor(math.log2(scale))
        ax.axvline(shifted, color="green", linestyle="--", linewidth=1,
                   label=f"flush threshold at the settled scale {scale:g}")
    ax.set_xlabel("log2 |gradient| (loss scale divided out)")
    ax.set_ylabel("share of nonzero gradient values (%)")
    ax.set_title(f"{doc['model']}: weight-gradient magnitudes")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, format="png")
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json")
    p.add_argument("--out-dir", help="where to write the PNGs (default: the JSON's folder)")
    a = p.parse_args()
    doc = read_report(a.json)
    plt = import_pyplot(__file__, fail, "plot_precision")
    out_dir = a.out_dir or os.path.dirname(os.path.abspath(a.json))
    written = []
    figures = ((("precision_fp4_loss.png", plot_loss),) if doc.get("fp4_comparison") else
               (("precision_loss.png", plot_loss), ("precision_unchanged.png", plot_unchanged),
                ("precision_underflow.png", plot_underflow)))
    for name, draw in figures:
        path = os.path.join(out_dir, name)
        try:
            draw(plt, doc, path)
        except OSError as e:
            fail(f"cannot write {path} ({e.strerror}); pass --out-dir with a writable folder")
        written.append(path)
    print("plot_precision: wrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
