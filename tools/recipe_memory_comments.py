#!/usr/bin/env python3
"""recipe_memory_comments.py — write `farthing plan`'s figures into every recipe's memory comment
and into the table of recipes/README.md.

Each recipe's header carries one block, replaced in place on every run:

  # Memory per rank (farthing plan --preset P [--world-size N]): model state X (B B/param),
  #   training step peak Y; while building Z (...).
  #   [with optimizer.offload host, two more lines: the host memory the optimizer holds]

The preset is the one the header names ("preset P"); the world size is the command's
`mpirun -np N` (1 without it). tests/train/recipe/test_recipe_files.cpp recomputes these figures
with the same estimate and fails when one is more than 5% off, so a change to the trainer's
memory that is not rerun here shows up in the test suite.

usage: tools/recipe_memory_comments.py [FARTHING]   (default build/bin/farthing; from the repo root)
"""
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FARTHING = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build/bin/farthing")
BLOCK_START = "# Memory per rank (farthing plan"
OLD_START = "# Model state"


def fmt(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def plan(recipe, preset, world):
    args = [FARTHING, "plan", str(recipe), "--json", "--preset", preset, "--world-size", str(world)]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True, cwd=ROOT).stdout)


def block(preset, world, p):
    cats = p["categories"]
    per = lambda name: cats[name]["held_bytes_per_param"]
    ws = f" --world-size {world}" if world > 1 else ""
    building = "one unit of model.path decoded at a time"
    return [
        f"{BLOCK_START} --preset {preset}{ws}): model state {fmt(p['model_state_bytes'])}",
        f"#   ({p['model_state_bytes_per_param']:.2f} B/param: weights {per('weights'):.2f}, grads {per('grads'):.2f},"
        f" master {per('master'):.2f}, moments {per('optimizer state'):.2f}),",
        f"#   training step peak {fmt(p['step_peak_bytes'])}; while building {fmt(p['load_peak_bytes'])} ({building}).",
    ] + host_lines(p)


def host_lines(p):
    """optimizer.offload host: the optimizer's host memory, beside the device's figures above."""
    if p.get("offload", "none") == "none":
        return []
    h = p["host_bytes_per_rank"]
    return [f"#   Host memory (optimizer.offload host): {fmt(h['total'])} (master {fmt(h['master'])}, "
            f"moments {fmt(h['optimizer_state'])},",
            f"#   transfer ring {fmt(h['transfer_ring'])}); the figures above are the GPU's."]


def rewrite(path):
    lines = path.read_text().split("\n")
    header_end = lines.index("model:")
    header = "\n".join(lines[:header_end])
    preset = re.search(r"preset ([a-z0-9][a-z0-9.\-]*[a-z0-9])", header).group(1)
    np_match = re.match(r"# mpirun -np (\d+) ", lines[0])
    world = int(np_match.group(1)) if np_match else 1
    planned = plan(path.relative_to(ROOT), preset, world)
    new = block(preset, world, planned)
    # The block to replace: ours from an earlier run, or the old hand arithmetic (from "# Model
    # state" through the line that ends its sum with "plus activations..." or "concern here...").
    start = next((i for i in range(header_end) if lines[i].startswith((BLOCK_START, OLD_START))), None)
    if start is None:
        raise SystemExit(f"{path}: no memory comment block to replace")
    end = start + 1
    if lines[start].startswith(BLOCK_START):
        while end < header_end and lines[end].startswith("#   "):
            end += 1
    else:
        while not re.search(r"plus activations|concern here|\+ activations|recipe_memory_comments", lines[end - 1]):
            end += 1
    lines[start:end] = new
    path.write_text("\n".join(lines))
    print(f"{path.relative_to(ROOT)}: {new[0][len(BLOCK_START):]}")
    return planned


def rewrite_readme(plans):
    readme = ROOT / "recipes/README.md"
    lines = readme.read_text().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"\| \[`([^`]+)`\]", line)
        if not m or m.group(1) not in plans:
            continue
        p = plans[m.group(1)]
        cells = line.split(" | ")
        cells[-1] = f"{fmt(p['model_state_bytes'])} / {fmt(p['step_peak_bytes'])} |"
        lines[i] = " | ".join(cells)
    readme.write_text("\n".join(lines))


plans = {}
for recipe in sorted((ROOT / "recipes").rglob("*.yaml")):
    plans[str(recipe.relative_to(ROOT / "recipes"))] = rewrite(recipe)
rewrite_readme(plans)
