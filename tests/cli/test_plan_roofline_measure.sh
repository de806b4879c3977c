#!/usr/bin/env bash
# test_plan_roofline_measure.sh — `farthing plan --roofline h200 --measure-ops` as a user runs it,
# on this machine's CPU (train.device: cpu), on presets (no weights needed):
#  - Llama-style (stories260k: rmsnorm, rope, SwiGLU) and GPT-2 (layernorm, GELU, biases): every
#    row but the optimizer step has a positive measured time, the optimizer step says '-', and the
#    summary's step time is the measured rows plus the optimizer's roofline time;
#  - --measure-ops without --roofline is one error line, exit 1.
# usage: test_plan_roofline_measure.sh FARTHING_BINARY PROJECT_DIR
set -u
farthing="$1"
project="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: python3 absent (reads the table)"; exit 77; }
stories="$project/recipes/stories/260k_full_single_device.yaml"

check_table() {  # FILE LABEL [REQUIRED_OP...]; TINY_ROWS: rows (|-separated) that may round to 0.00 ms
  python3 - "$@" <<'PY'
import os, re, sys
path, label, required = sys.argv[1], sys.argv[2], sys.argv[3:]
tiny = [r for r in os.environ.get("TINY_ROWS", "").split("|") if r]
lines = open(path).read().splitlines()
head = [i for i, l in enumerate(lines) if l.startswith("op ") and "ms measured" in l]
assert len(head) == 1, f"{label}: no table header with 'ms measured'"
rows, step = {}, None
for l in lines[head[0] + 1:]:
    if l.startswith("step "):
        step = l
        break
    name, rest = l[:30].strip(), l[30:].split()
    rows[name] = rest  # calls TFLOP GBb GBd msb msd bound [measured x]
assert step is not None, f"{label}: no step row"
for op in required:
    assert op in rows, f"{label}: no row '{op}' in {sorted(rows)}"
total, roof = 0.0, 0.0
for name, f in rows.items():
    if name == "optimizer step":
        assert f[7] == "-", f"{label}: the optimizer step was measured: {f}"
        roof += float(f[4])
        continue
    assert len(f) == 9, f"{label}: row '{name}' has no measured time: {f}"
    measured = float(f[7])
    assert measured > 0 or (name in tiny and measured == 0), f"{label}: row '{name}' measured {measured} ms"
    total += measured
assert abs(float(step.split()[-1]) - total) <= 0.05 + 1e-3 * total, f"{label}: step {step} != sum {total}"
m = re.search(r"no gaps: ([0-9.]+) ms per step", " ".join(lines))
assert m, f"{label}: no summary line"
assert abs(float(m.group(1)) - (total + roof)) <= 0.1 + 1e-3 * total, f"{label}: summary {m.group(1)} != {total + roof}"
print(f"ok: {label}: {len(rows) - 1} rows measured, {total:.1f} ms")
PY
}

"$farthing" plan "$stories" --preset stories260k --set train.device=cpu --roofline h200 --measure-ops \
  > "$tmp/llama.txt" 2> "$tmp/err" || { cat "$tmp/err"; fail "plan --measure-ops (stories260k) exited non-zero"; }
# stories260K's gradients are written, not zeroed: what is left to zero (its tied embedding's
# accumulator, 128 KiB) takes under the table's 0.01 ms. GPT-2's zeroing row below stays positive.
TINY_ROWS="zero gradient accumulators" check_table "$tmp/llama.txt" stories260k "rmsnorm forward" "rmsnorm backward" rope "attention forward" \
  "attention backward" "swiglu backward" "matmul qkv wgrad" "matmul down fwd" "cross-entropy (+grad)" \
  || { cat "$tmp/llama.txt"; fail "the stories260k table is wrong (above)"; }

"$farthing" plan "$stories" --preset gpt2-124m --set train.device=cpu --set train.micro_batch=1 --set data.seq_len=64 \
  --roofline h200 --measure-ops > "$tmp/gpt2.txt" 2> "$tmp/err" \
  || { cat "$tmp/err"; fail "plan --measure-ops (gpt2-124m) exited non-zero"; }
check_table "$tmp/gpt2.txt" gpt2-124m "layernorm forward" "layernorm backward" "gelu forward" "gelu backward" \
  "matmul qkv fwd" "matmul qkv wgrad" "embedding backward" \
  || { cat "$tmp/gpt2.txt"; fail "the gpt2-124m table is wrong (above)"; }

"$farthing" plan "$stories" --preset stories260k --measure-ops > "$tmp/out" 2> "$tmp/err" && fail "--measure-ops without --roofline exited 0"
[ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q -- "--measure-ops needs --roofline" "$tmp/err" \
  || { cat "$tmp/err"; fail "--measure-ops without --roofline: not one line naming the option"; }
echo "ok: --measure-ops without --roofline refused in one line"
