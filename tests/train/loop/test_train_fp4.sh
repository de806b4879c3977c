#!/usr/bin/env bash
# FP4 linear layers (train.precision: nvfp4 | mxfp4, the nvfp4 / mxfp4 sections) through the CLI on
# stories260K:
#  - both recipes train (the loss drops); nvfp4's first loss differs from bf16's (its forward GEMMs
#    are FP4), mxfp4's equals that of bf16 with fp32 activation storage (model.bf16_activations
#    false: FP4 layers quantize from fp32 activations, so they keep them) and then departs;
#  - each nvfp4 ablation (no SR, no RHT, no bf16 blocks, 1D weights) changes the losses, and so
#    does mxfp4 without its 3/4 pre-scale;
#  - exact resume: nvfp4 stopped at step 3 and resumed gives the straight run's losses and final
#    checkpoint bit for bit (the Hadamard signs and SR bits are keyed by the seed and the step);
#  - the thread count and the strict test device (NnOps' host emulation) do not change the bits;
#  - bad nvfp4 / mxfp4 keys get a one-line error naming the key.
source "$(dirname "$0")/train_test_common.sh"

FP4=("${SMALL[@]}" --set train.grad_accum=2)
run() {  # run NAME [--set ...]: trains into $WORK/NAME
  local name="$1"; shift
  "$FARTHING" train "$RECIPE" "${FP4[@]}" "$@" --set "checkpoint.run_dir=$WORK/$name" >/dev/null
}
first_loss() { losses "$WORK/$1/metrics.jsonl" | sed -n 1p | cut -d: -f2; }
last_loss() { losses "$WORK/$1/metrics.jsonl" | tail -1 | cut -d: -f2; }

run bf16 --set train.precision=bf16
run bf16-fp32-acts --set train.precision=bf16 --set model.bf16_activations=false
for p in nvfp4 mxfp4; do
  run $p --set train.precision=$p
  awk -v a="$(first_loss $p)" -v b="$(last_loss $p)" 'BEGIN { exit !(b < a) }' \
    || fail "$p did not reduce the loss ($(first_loss $p) -> $(last_loss $p))"
  ! diff -q <(losses "$WORK/bf16/metrics.jsonl") <(losses "$WORK/$p/metrics.jsonl") >/dev/null \
    || fail "$p's losses equal bf16's: the FP4 path did not run"
  echo "ok: $p trains (loss $(first_loss $p) -> $(last_loss $p); bf16 $(first_loss bf16) -> $(last_loss bf16))"
done
[ "$(first_loss nvfp4)" != "$(first_loss bf16-fp32-acts)" ] || fail "nvfp4's first loss equals bf16's: its forward is not FP4"
[ "$(first_loss mxfp4)" = "$(first_loss bf16-fp32-acts)" ] \
  || fail "mxfp4's first loss $(first_loss mxfp4) differs from bf16's with fp32 activations $(first_loss bf16-fp32-acts): its forward should be bf16"
[ "$(first_loss bf16)" != "$(first_loss bf16-fp32-acts)" ] \
  || fail "model.bf16_activations=false did not change bf16's first loss: the knob is not wired"
echo "ok: nvfp4's forward is FP4, mxfp4's is bf16"

for ablation in nvfp4.sr=none nvfp4.rht=none nvfp4.bf16_last_fraction=0 nvfp4.weight_scaling=1d; do
  name="abl-${ablation//[.=]/-}"
  run "$name" --set train.precision=nvfp4 --set "$ablation"
  ! diff -q <(losses "$WORK/nvfp4/metrics.jsonl") <(losses "$WORK/$name/metrics.jsonl") >/dev/null \
    || fail "the ablation $ablation did not change nvfp4's losses"
  echo "ok: $ablation changes the run (last loss $(last_loss $name) vs $(last_loss nvfp4))"
done

# mxfp4's 3/4 pre-scale (Tseng et al.) is on by default and is a live knob.
run mxfp4-no-prescale --set train.precision=mxfp4 --set mxfp4.sr_prescale=false
! diff -q <(losses "$WORK/mxfp4/metrics.jsonl") <(losses "$WORK/mxfp4-no-prescale/metrics.jsonl") >/dev/null \
  || fail "mxfp4.sr_prescale=false did not change mxfp4's losses"
echo "ok: mxfp4.sr_prescale=false changes the run (last loss $(last_loss mxfp4-no-prescale) vs $(last_loss mxfp4))"

# Exact resume.
run split --set train.precision=nvfp4 --stop-at 3
run split --set train.precision=nvfp4 --resume latest
diff <(losses "$WORK/nvfp4/metrics.jsonl") <(losses "$WORK/split/metrics.jsonl") || fail "nvfp4 resume: losses differ"
same_checkpoint "$WORK/nvfp4/checkpoints/step_00000006.h5" "$WORK/split/checkpoints/step_00000006.h5"
echo "ok: nvfp4 stopped at step 3 and resumed == the straight run bit for bit"

OMP_NUM_THREADS=1 run nvfp4-t1 --set train.precision=nvfp4
same_checkpoint "$WORK/nvfp4/checkpoints/step_00000006.h5" "$WORK/nvfp4-t1/checkpoints/step_00000006.h5"
run mxfp4-strict --set train.precision=mxfp4 --set train.device=strict
same_checkpoint "$WORK/mxfp4/checkpoints/step_00000006.h5" "$WORK/mxfp4-strict/checkpoints/step_00000006.h5"
echo "ok: nvfp4 at 1 thread, and mxfp4 on the strict device (host emulation), equal the CPU runs bit for bit"

expect_error "an FP4 block size" "nvfp4.block" "16 (NVFP4) or 32" -- \
  "$FARTHING" train "$RECIPE" "${FP4[@]}" --set train.precision=nvfp4 --set nvfp4.block=24 --set "checkpoint.run_dir=$WORK/bad1"
expect_error "a Hadamard size" "mxfp4.rht_size" "4, 16, 64 or 256" -- \
  "$FARTHING" train "$RECIPE" "${FP4[@]}" --set train.precision=mxfp4 --set mxfp4.rht_size=32 --set "checkpoint.run_dir=$WORK/bad2"
expect_error "an unknown RHT choice" "nvfp4.rht" "wgrad" -- \
  "$FARTHING" train "$RECIPE" "${FP4[@]}" --set train.precision=nvfp4 --set nvfp4.rht=forward --set "checkpoint.run_dir=$WORK/bad3"
expect_error "a bf16 share out of range" "nvfp4.bf16_last_fraction" "0..1" -- \
  "$FARTHING" train "$RECIPE" "${FP4[@]}" --set train.precision=nvfp4 --set nvfp4.bf16_last_fraction=1.5 --set "checkpoint.run_dir=$WORK/bad4"
