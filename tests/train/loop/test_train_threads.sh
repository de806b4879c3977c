#!/usr/bin/env bash
# The thread count never changes a run's bits: np=1 at 3 OpenMP threads against np=2
# at 1 thread per rank (ZeRO-1) and at 2 threads per rank (ZeRO-3), the global batch fixed, give
# the same losses and the same final checkpoint bit for bit. Before the CPU GEMMs were tiled by
# shape (kernels/cpu/gemm_tiling.h), oneDNN's AVX2 kernels split their reductions by thread count
# and this failed on AVX2 machines; ctest runs it again under each oneDNN ISA cap below the
# machine's own (tests/support/with_onednn_isa_cap.sh), so any machine checks those kernels, and
# there first checks that oneDNN took the cap (tests/support/check_onednn_isa_cap.sh).
source "$(dirname "$0")/train_test_common.sh"
MPIRUN=(mpirun --oversubscribe)
unset OMP_NUM_THREADS

CFG=("${SMALL[@]}" --set train.steps=4 --set train.micro_batch=4 --set optimizer.state=8bit
     --set optimizer.master=f32 --set optimizer.weight_rounding=stochastic)
if [ -n "${FARTHING_ONEDNN_ISA_CAP:-}" ]; then  # under with_onednn_isa_cap.sh: the cap took effect here
  OMP_NUM_THREADS=1 ONEDNN_VERBOSE=1 "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set train.steps=2 \
    --set schedule.warmup_steps=1 --set "checkpoint.run_dir=$WORK/isa" > "$WORK/onednn_verbose.log"
  bash "$SRC/tests/support/check_onednn_isa_cap.sh" "$FARTHING_ONEDNN_ISA_CAP" "$WORK/onednn_verbose.log"
fi
OMP_NUM_THREADS=3 "$FARTHING" train "$RECIPE" "${CFG[@]}" --set train.grad_accum=2 \
  --set "checkpoint.run_dir=$WORK/np1-t3" >/dev/null
for run in "1 1" "3 2"; do
  read -r stage threads <<<"$run"
  "${MPIRUN[@]}" -np 2 -x OMP_NUM_THREADS=$threads "$FARTHING" train "$RECIPE" "${CFG[@]}" \
    --set distributed.zero_stage=$stage --set train.grad_accum=1 --set "checkpoint.run_dir=$WORK/np2-s$stage" >/dev/null
  diff <(losses "$WORK/np1-t3/metrics.jsonl") <(losses "$WORK/np2-s$stage/metrics.jsonl") \
    || fail "ZeRO-$stage np=2 at $threads thread(s) per rank: losses differ from np=1 at 3 threads"
  same_checkpoint "$WORK/np1-t3/checkpoints/step_00000004.h5" "$WORK/np2-s$stage/checkpoints/step_00000004.h5"
  echo "ok: ZeRO-$stage np=2 at $threads thread(s) per rank == np=1 at 3 threads, bit for bit${ONEDNN_MAX_CPU_ISA:+ (oneDNN capped at $ONEDNN_MAX_CPU_ISA)}"
done
