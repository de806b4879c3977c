#!/usr/bin/env bash
# Gradients written in place (docs/parameter_store.md, "Gradients in place"): alone, with fp32
# kept sums, each block's gradients of a micro-batch are written into the kept sums (the step's
# first) or added whole onto them. Against np=2 (one micro-batch per rank: at ZeRO-1 each rank's
# gradients written into its kept copy and all-reduced there, at ZeRO 2-3 written into an
# accumulator that is not zeroed, then summed over ranks in rank order) np=1 with two
# micro-batches must give the same losses and final checkpoint bit for bit, at ZeRO 1, 2 and 3,
# under bf16 and fp32 compute. The micro-batch is 8 x 64 = 512 rows: the weight gradients' GEMMs
# reduce over more rows than oneDNN's K-block (256 on AVX-512, 64 on AVX2), so a GEMM that added
# the kept sum before its last K-block (oneDNN's own accumulate) would change the association and
# fail here. Then two micro-batches a rank at np=2 (exact resume: an element left unwritten would
# hold last step's or another unit's values in the straight run and fresh ones in the resumed), a tied model whose loss runs in one chunk (its embedding in place,
# its token rows set aside), an untied model (head and embedding in place too), and exact resume
# of an in-place run.
source "$(dirname "$0")/train_test_common.sh"
MPIRUN=(mpirun --oversubscribe)

CFG=("${SMALL[@]}" --set train.steps=3 --set train.micro_batch=8 --set optimizer.state=8bit
     --set optimizer.master=f32 --set optimizer.weight_rounding=stochastic)
for precision in bf16 fp32; do
  "$FARTHING" train "$RECIPE" "${CFG[@]}" --set train.precision=$precision --set train.grad_accum=2 \
    --set "checkpoint.run_dir=$WORK/np1-$precision" >/dev/null
  stages="1 2 3"
  [ $precision = fp32 ] && stages=3  # fp32 compute reads the master: one stage shows its path
  for stage in $stages; do
    "${MPIRUN[@]}" -np 2 "$FARTHING" train "$RECIPE" "${CFG[@]}" --set train.precision=$precision \
      --set distributed.zero_stage=$stage --set train.grad_accum=1 --set "checkpoint.run_dir=$WORK/np2-$precision-s$stage" >/dev/null
    diff <(losses "$WORK/np1-$precision/metrics.jsonl") <(losses "$WORK/np2-$precision-s$stage/metrics.jsonl") \
      || fail "$precision ZeRO-$stage: np=2 losses differ from np=1 with its gradients in place"
    same_checkpoint "$WORK/np1-$precision/checkpoints/step_00000003.h5" \
      "$WORK/np2-$precision-s$stage/checkpoints/step_00000003.h5"
    echo "ok: $precision ZeRO-$stage np=2 == np=1 (two micro-batches, gradients in place) bit for bit"
  done
done
# The tied model with its loss in one chunk: its embedding in place too, the micro-batch's token
# rows set aside while the head's product lands on the running sums, then added back. np=1 ==
# np=2 at ZeRO-1 (in place over both ranks; tests/dist/test_param_store.cpp has every stage).
TIED=("${CFG[@]}" --set model.loss_chunk_rows=512)
"$FARTHING" train "$RECIPE" "${TIED[@]}" --set train.grad_accum=2 --set "checkpoint.run_dir=$WORK/tied-np1" >/dev/null
"${MPIRUN[@]}" -np 2 "$FARTHING" train "$RECIPE" "${TIED[@]}" --set distributed.zero_stage=1 \
  --set train.grad_accum=1 --set "checkpoint.run_dir=$WORK/tied-np2" >/dev/null
diff <(losses "$WORK/tied-np1/metrics.jsonl") <(losses "$WORK/tied-np2/metrics.jsonl") \
  || fail "tied, loss in one chunk, ZeRO-1: np=2 losses differ from np=1 with the embedding in place"
same_checkpoint "$WORK/tied-np1/checkpoints/step_00000003.h5" "$WORK/tied-np2/checkpoints/step_00000003.h5"
echo "ok: tied embedding in place (rows set aside), ZeRO-1 np=2 == np=1 bit for bit"
# Two micro-batches a rank at np=2: each written into an accumulator that is not zeroed, summed
# over ranks, then kept (copied, then added). ZeRO-2 resumed from step 1 gives the straight run's
# bits: the resumed process starts from fresh buffers, the straight one from last step's.
A2=("${CFG[@]}" --set train.micro_batch=4 --set train.grad_accum=2)
"${MPIRUN[@]}" -np 2 "$FARTHING" train "$RECIPE" "${A2[@]}" --set distributed.zero_stage=2 \
  --set "checkpoint.run_dir=$WORK/a2-s2" >/dev/null
"${MPIRUN[@]}" -np 2 "$FARTHING" train "$RECIPE" "${A2[@]}" --set distributed.zero_stage=2 \
  --set "checkpoint.run_dir=$WORK/a2-split" --stop-at 1 >/dev/null
"${MPIRUN[@]}" -np 2 "$FARTHING" train "$RECIPE" "${A2[@]}" --set distributed.zero_stage=2 \
  --set "checkpoint.run_dir=$WORK/a2-split" --resume latest >/dev/null
diff <(losses "$WORK/a2-s2/metrics.jsonl") <(losses "$WORK/a2-split/metrics.jsonl") \
  || fail "np=2, two micro-batches a rank: the resumed run's losses differ from the straight run's"
same_checkpoint "$WORK/a2-s2/checkpoints/step_00000003.h5" "$WORK/a2-split/checkpoints/step_00000003.h5"
echo "ok: np=2, two micro-batches a rank: resumed == straight, bit for bit"
# An untied model (stories260K with its head made a tensor of its own) whose loss runs in one
# chunk: the head and the embedding are in place too, the embedding's rows summed per distinct
# token first (a token seen twice must not add twice onto the kept sums). np=1 == np=2, ZeRO-1.
"$FARTHING" export --from "$SHARED/models/stories260K/stories260K.bin" --out "$WORK/untied" >/dev/null
python3 "$SRC/tests/support/untie_head.py" "$WORK/untied"
UNTIED=("${CFG[@]}" --set "model.path=$WORK/untied" --set model.loss_chunk_rows=512)
"$FARTHING" train "$RECIPE" "${UNTIED[@]}" --set train.grad_accum=2 --set "checkpoint.run_dir=$WORK/untied-np1" >/dev/null
"${MPIRUN[@]}" -np 2 "$FARTHING" train "$RECIPE" "${UNTIED[@]}" --set train.grad_accum=1 \
  --set "checkpoint.run_dir=$WORK/untied-np2" >/dev/null
diff <(losses "$WORK/untied-np1/metrics.jsonl") <(losses "$WORK/untied-np2/metrics.jsonl") \
  || fail "untied model: np=2 losses differ from np=1 with the head and embedding in place"
same_checkpoint "$WORK/untied-np1/checkpoints/step_00000003.h5" "$WORK/untied-np2/checkpoints/step_00000003.h5"
echo "ok: untied head and embedding in place: np=2 == np=1 bit for bit"
# The same in-place run on the strict test device (device memory the host may not touch: the
# rows' slots travel like the tokens) gives the CPU's bits.
"$FARTHING" train "$RECIPE" "${UNTIED[@]}" --set train.grad_accum=2 --set train.device=strict \
  --set "checkpoint.run_dir=$WORK/untied-strict" >/dev/null
diff <(losses "$WORK/untied-np1/metrics.jsonl") <(losses "$WORK/untied-strict/metrics.jsonl") \
  || fail "untied model on the strict device: losses differ from the CPU's"
same_checkpoint "$WORK/untied-np1/checkpoints/step_00000003.h5" "$WORK/untied-strict/checkpoints/step_00000003.h5"
echo "ok: untied head and embedding in place on the strict device == the CPU bit for bit"
# Exact resume: 3 steps straight == 1 step, save, resume to 3 (bf16, ZeRO-3 alone, in place).
"$FARTHING" train "$RECIPE" "${CFG[@]}" --set train.grad_accum=2 --set distributed.zero_stage=3 \
  --set "checkpoint.run_dir=$WORK/straight" >/dev/null
"$FARTHING" train "$RECIPE" "${CFG[@]}" --set train.grad_accum=2 --set distributed.zero_stage=3 \
  --set "checkpoint.run_dir=$WORK/split" --stop-at 1 >/dev/null
"$FARTHING" train "$RECIPE" "${CFG[@]}" --set train.grad_accum=2 --set distributed.zero_stage=3 \
  --set "checkpoint.run_dir=$WORK/split" --resume latest >/dev/null
diff <(losses "$WORK/straight/metrics.jsonl") <(losses "$WORK/split/metrics.jsonl") \
  || fail "resumed in-place run: losses differ from the straight run"
same_checkpoint "$WORK/straight/checkpoints/step_00000003.h5" "$WORK/split/checkpoints/step_00000003.h5"
echo "ok: the in-place run resumes bit for bit"
