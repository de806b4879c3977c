#!/usr/bin/env bash
# test_init.sh — `farthing init MODEL_FILE` (issue 23's guided first run) on stories260K: the
# recipe it writes parses, fits the budget by `farthing plan`'s own check, trains; a smaller
# budget moves down the ladder (8-bit moments, then no master); a budget nothing fits is exit 1
# naming it; bad input (missing model, existing --out) is one error line naming the path.
# usage: test_init.sh FARTHING_BINARY SHARED_DIR     (exit 77: skipped, ../shared absent)
set -u
farthing="$1"
shared="$2"
dir="$shared/models/stories260K"
[ -f "$dir/stories260K.bin" ] || { echo "SKIP: $dir/stories260K.bin absent (set FARTHING_SHARED_DIR)"; exit 77; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMP_WAIT_POLICY=passive
fail() { echo "FAIL: $*"; exit 1; }
model=(init "$dir/stories260K.bin" --tokenizer "$dir/tok512.bin" --data "$shared/text/tinyshakespeare.txt")

# Roomy budget: the comfortable rung; plan agrees that it fits; it trains.
"$farthing" "${model[@]}" --budget-gb 1 --out "$tmp/roomy.yaml" 2> "$tmp/err" || { cat "$tmp/err"; fail "init exited non-zero"; }
grep -q "^  state: f32" "$tmp/roomy.yaml" || fail "1 GiB should keep fp32 AdamW state: $(grep state: "$tmp/roomy.yaml")"
grep -q "^  master: f32" "$tmp/roomy.yaml" || fail "1 GiB should keep the fp32 master"
head -1 "$tmp/roomy.yaml" | grep -qF "farthing train $tmp/roomy.yaml" || fail "first line is not the command: $(head -1 "$tmp/roomy.yaml")"
[ "$(grep -cE '^  [a-z_0-9]+: .*  # ' "$tmp/roomy.yaml")" -eq "$(grep -cE '^  [a-z_0-9]+:' "$tmp/roomy.yaml")" ] \
  || fail "a key without a comment: $(grep -E '^  [a-z_0-9]+:' "$tmp/roomy.yaml" | grep -v '  # ')"
"$farthing" plan "$tmp/roomy.yaml" --budget-gb 1 >/dev/null || fail "plan says the roomy recipe does not fit 1 GiB"
"$farthing" train "$tmp/roomy.yaml" --set train.steps=2 --set schedule.warmup_steps=1 --set data.seq_len=64 --set train.micro_batch=2 \
  --set "checkpoint.run_dir=$tmp/run" --quiet > "$tmp/train" 2>&1 || { cat "$tmp/train"; fail "the init recipe does not train"; }
echo "ok: 1 GiB -> fp32 state + master, plan agrees, trains: $(tail -1 "$tmp/train")"

# 30 MiB: down the ladder, still within plan's own budget check.
"$farthing" "${model[@]}" --budget-gb 0.03 > "$tmp/small.yaml" 2>/dev/null || fail "init at 0.03 GiB exited non-zero"
grep -q "^  state: 8bit" "$tmp/small.yaml" || fail "0.03 GiB should choose 8-bit moments"
sed -i "s|RECIPE.yaml|$tmp/small.yaml|" "$tmp/small.yaml"
"$farthing" plan "$tmp/small.yaml" --budget-gb 0.03 >/dev/null || fail "plan says the 0.03 GiB recipe does not fit"
echo "ok: 0.03 GiB -> $(sed -n 3p "$tmp/small.yaml" | cut -d: -f2-)"

out="$("$farthing" "${model[@]}" --budget-gb 0.001 2>&1 >/dev/null)" && fail "a 1 MiB budget was accepted"
grep -qF "even the most frugal settings need" <<<"$out" || fail "unexpected message: $out"
echo "ok: 1 MiB -> exit 1: $out"

# Where it trains: auto picks cuda only with a GPU visible; cuda sizes to the GPU's free memory,
# and without a GPU needs --budget-gb.
gpu_visible=0
"$farthing" info 2>/dev/null | grep -qF "devices visible: yes" && gpu_visible=1
"$farthing" "${model[@]}" --budget-gb 1 --device auto > "$tmp/auto.yaml" 2>/dev/null || fail "init --device auto failed"
if [ "$gpu_visible" -eq 0 ]; then
  grep -q "^  device: cpu  # " "$tmp/auto.yaml" || fail "--device auto without a GPU should write cpu: $(grep device: "$tmp/auto.yaml")"
  out="$("$farthing" "${model[@]}" --device cuda 2>&1 >/dev/null)" && fail "--device cuda without a GPU or budget was accepted"
  grep -qF "no CUDA device is visible" <<<"$out" && grep -qF -- "--budget-gb" <<<"$out" || fail "unexpected message: $out"
  echo "ok: no GPU: --device auto -> cpu; --device cuda without --budget-gb -> $out"
fi
"$farthing" "${model[@]}" --budget-gb 1 --device cuda > "$tmp/cuda.yaml" 2>/dev/null || fail "init --device cuda --budget-gb 1 failed"
grep -q "^  device: cuda  # .*the GPU's memory" "$tmp/cuda.yaml" || fail "--device cuda should write cuda: $(grep device: "$tmp/cuda.yaml")"
out="$("$farthing" "${model[@]}" --device tpu 2>&1)" && fail "--device tpu was accepted"
grep -qF "init: --device 'tpu'; expected cpu, cuda or auto" <<<"$out" || fail "unexpected message: $out"
echo "ok: --device cuda writes train.device: cuda; --device tpu refused"

out="$("$farthing" init "$tmp/nope.bin" 2>&1)" && fail "a missing model file was accepted"
grep -qF "model file '$tmp/nope.bin' does not exist" <<<"$out" || fail "unexpected message: $out"
out="$("$farthing" "${model[@]}" --out "$tmp/roomy.yaml" 2>&1)" && fail "init overwrote an existing recipe"
grep -qF "$tmp/roomy.yaml already exists" <<<"$out" || fail "unexpected message: $out"
echo "ok: missing model and existing --out refused naming the path"
