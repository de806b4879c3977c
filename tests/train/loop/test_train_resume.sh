#!/usr/bin/env bash
# Exact resume through the CLI: N steps straight == K steps, save, `--resume latest`
# to N — every logged loss and every byte of state (weights, master, moments) — for an fp32
# configuration, for 8-bit moments with stochastic rounding and no master, and for ZeRO-3's unit
# storage and the optimizer step fused into backward (which must also equal the plain step), and
# for documents kept apart in packed sequences (data.packing documents). Also: the loss
# decreases on tinyshakespeare, a fresh run refuses a run_dir that holds checkpoints, and
# `farthing inspect` names the dynamic map of 8-bit moments.
source "$(dirname "$0")/train_test_common.sh"

check_config() {
  local name="$1"; shift
  local -a cfg=("$@")
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${cfg[@]}" --set "checkpoint.run_dir=$WORK/$name-straight" >/dev/null
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${cfg[@]}" --set "checkpoint.run_dir=$WORK/$name-split" --stop-at 3 >/dev/null
  [ "$(cat "$WORK/$name-split/checkpoints/latest")" = "step_00000003.h5" ] || fail "$name: --stop-at 3 did not save step 3"
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${cfg[@]}" --set "checkpoint.run_dir=$WORK/$name-split" --resume latest >/dev/null
  diff <(losses "$WORK/$name-straight/metrics.jsonl") <(losses "$WORK/$name-split/metrics.jsonl") \
    || fail "$name: logged losses differ between the straight and the resumed run"
  [ "$(losses "$WORK/$name-straight/metrics.jsonl" | wc -l)" -eq 6 ] || fail "$name: expected 6 loss records"
  same_checkpoint "$WORK/$name-straight/checkpoints/step_00000006.h5" "$WORK/$name-split/checkpoints/step_00000006.h5"
  # Learning happened: the last training loss is below the first.
  local first last
  first="$(losses "$WORK/$name-straight/metrics.jsonl" | sed -n 1p | cut -d: -f2)"
  last="$(losses "$WORK/$name-straight/metrics.jsonl" | tail -1 | cut -d: -f2)"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "$name: loss did not decrease ($first -> $last)"
  echo "ok: $name resumes bit for bit; loss $first -> $last"
}

check_config fp32 --set train.precision=fp32 --set optimizer.state=f32 --set optimizer.master=f32 \
  --set optimizer.weight_rounding=nearest
check_config 8bit-sr --set train.precision=bf16 --set optimizer.state=8bit --set optimizer.master=none \
  --set optimizer.weight_rounding=stochastic --set optimizer.embedding_f32_state=false

# Documents kept apart (data.packing documents): tinyshakespeare's speeches as JSONL text lines,
# several to a sequence of 64, long ones split, the rest padded; the starts are part of the data,
# so the resumed run sees the same sequences.
python3 - "$WORK/shakespeare_256k.txt" "$WORK/speeches.jsonl" <<'PY'
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
with open(sys.argv[2], "w") as f:
    for speech in text.split("\n\n")[:600]:
        if speech.strip():
            f.write(json.dumps({"text": speech}) + "\n")
PY
check_config documents --set "data.train=$WORK/speeches.jsonl" --set data.packing=documents \
  --set train.precision=fp32 --set optimizer.state=f32 --set optimizer.master=f32 --set optimizer.weight_rounding=nearest

# farthing inspect names the map that coded 8-bit moments (the checkpoint's optim group records
# it), and shows none where the moments are not 8-bit.
"$FARTHING" inspect "$WORK/8bit-sr-straight/checkpoints/step_00000006.h5" > "$WORK/inspect_8bit.txt"
grep -qE "^  8-bit map +bitsandbytes-dynamic-torch1\.13$" "$WORK/inspect_8bit.txt" \
  || fail "inspect does not name the 8-bit map: $(grep -A3 '^optimizer' "$WORK/inspect_8bit.txt")"
"$FARTHING" inspect --json "$WORK/8bit-sr-straight/checkpoints/step_00000006.h5" \
  | grep -q '"dynamic_map_8bit": "bitsandbytes-dynamic-torch1.13"' || fail "inspect --json does not name the 8-bit map"
"$FARTHING" inspect "$WORK/fp32-straight/checkpoints/step_00000006.h5" | grep -q "8-bit map" \
  && fail "inspect names an 8-bit map for f32 moments"
echo "ok: inspect names the 8-bit map (bitsandbytes-dynamic-torch1.13), and none for f32 moments"

# ZeRO-3's unit storage (one process) and the optimizer step fused into backward resume exactly
# too, and give the same bits as the plain configuration they share.
PLAIN=(--set train.precision=bf16 --set optimizer.state=8bit --set optimizer.master=f32
       --set optimizer.weight_rounding=stochastic --set train.max_grad_norm=0 --set train.nonfinite=fail)
check_config plain "${PLAIN[@]}"
check_config zero3 "${PLAIN[@]}" --set distributed.zero_stage=3
check_config fused "${PLAIN[@]}" --set train.optimizer_in_backward=true
for variant in zero3 fused; do
  diff <(losses "$WORK/plain-straight/metrics.jsonl") <(losses "$WORK/$variant-straight/metrics.jsonl") \
    || fail "$variant losses differ from the plain configuration"
  same_checkpoint "$WORK/plain-straight/checkpoints/step_00000006.h5" "$WORK/$variant-straight/checkpoints/step_00000006.h5"
  echo "ok: $variant == plain bit for bit"
done

# A fresh run never overwrites an existing run's checkpoints.
expect_error "fresh run into a used run_dir" "already holds checkpoints" "--resume latest" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/fp32-straight"

# checkpoint.save_final=false: a run that reaches train.steps ends without writing one (a
# throughput check's choice); its save_every checkpoints are still written.
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set checkpoint.save_every=4 --set checkpoint.save_final=false \
  --set "checkpoint.run_dir=$WORK/no-final" >/dev/null
[[ -f "$WORK/no-final/checkpoints/step_00000004.h5" ]] || fail "save_final=false: step 4 (save_every) was not saved"
[[ ! -e "$WORK/no-final/checkpoints/step_00000006.h5" ]] || fail "save_final=false: the final step 6 was saved"
echo "ok: save_final=false keeps save_every's checkpoints and writes none at the end"
