#!/usr/bin/env bash
# check.sh — the one command to run on a GPU machine: unpack the package from
# tools/gpu/package.sh, run every CUDA test, the device benchmarks and (time allowing) the CPU
# suite, and write gpu-report.md.
#
# Steps, in order of what matters most when time is short: unpack; nvidia-smi; find the
# machine's CUDA and NCCL libraries; the first part: every op of real training steps timed
# (train.profile: ops) for GPT-2 124M and Llama-3.2-1B beside PyTorch on this GPU (bench train:
# eager with bf16 autocast, SDPA and fused AdamW, and torch.compile for GPT-2), the Llama-3.1-8B
# and Qwen2.5-7B recipes' own step (the H200 recipes on an H200; two micro-batches, clipping)
# beside the low-memory fused 8B step, each run's MFU also against the GEMM ceiling this visit
# measured (the A/B pairs follow in a full check); the package's library closure (closure.sh) and
# how this machine's loader resolves every binary (resolve.sh); every ctest test labelled cuda; the NnOps
# parity table (test_nn_ops_parity: CUDA vs CPU per op and shape; test_ptx_numerics skips there
# without nvcc); packed documents through cuDNN's ragged batch (cudnn-documents: those parity
# rows, failing where they fall back to the fp32 kernel); the FP8 GEMMs' plans (cuBLASLt FP8 or the dense fallback) and FP8 vs BF16 TFLOP/s
# at Llama-3.1-8B shapes (fp8-gemm); whole models through the CUDA ops (test_model_on_device_ops);
# the one-GPU trainer against the CPU (train_smoke.sh) and its exact resume (train_presets.sh
# resume-135m); two ranks under the package's mpirun, and
# ZeRO-3 over two ranks on the one GPU through host staging (zero_staged_check.sh); `farthing
# info`; `farthing bench gemm|ops|train --device cuda`; the trainer at Llama-3.2-1B, Llama-3.1-8B
# (bf16 and fp8) and Qwen2.5-7B (train_presets.sh); `farthing bench numerics|optim --device cuda`;
# versions. Each step runs under its own `timeout` of at most 90 s (killed 5 s later if it
# ignores the signal) and the whole run under a budget (default 420 s): a step that would
# overrun it is cut short, later ones are marked "no time". A hang costs one step, never the
# run. The report goes to $OUT/gpu-report.md when OUT is set (that folder comes back from the
# GPU machine), else ./gpu-report.md; every step's full log to <report folder>/farthing-check/.
#
# usage: tools/gpu/check.sh          (from anywhere in the repository copy that holds .gpu/)
#   FARTHING_GPU_PACKAGE     the archive (default .gpu/farthing-gpu.tar.xz)
#   FARTHING_GPU_UNPACK_DIR  an empty or absent folder to unpack into (default: a new temp dir)
#   FARTHING_CHECK_BUDGET_S  the whole run's budget in seconds (default 420)
#   FARTHING_CHECK_STEP_MAX_S  the longest any step may run (default 90; dry_run.sh raises it
#                            for this 2-core machine)
#   FARTHING_CHECK_PART      "profile": only the first part (about 5 minutes), the step profiles
#                            beside their peers (below); unset: the first part, then everything else
#   FARTHING_CHECK_ONLY      an extended regular expression: only the steps whose names match run
#                            (besides unpack, which every step needs); the others are listed as
#                            "not selected". For a second, shorter visit that reruns what failed.
# exit status: 0 all passed (skips allowed), 1 a step failed, timed out or got no time, 2 no CUDA device
# (the CUDA tests and benchmarks skipped: a dry run), 3 no package.
# Relies on: bash, coreutils (timeout), tar and xz (or python3's lzma), ctest, python3 (finding
# NCCL, versions, the report); readelf when present (the closure step).
# Tested by: tools/gpu/dry_run.sh (this machine, no GPU: stops at "no CUDA device").
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
archive="${FARTHING_GPU_PACKAGE:-$root/.gpu/farthing-gpu.tar.xz}"
part="${FARTHING_CHECK_PART:-}"
[[ -z $part || $part == profile ]] || { echo "check.sh: FARTHING_CHECK_PART is '$part'; expected 'profile' or unset" >&2; exit 3; }
budget_s="${FARTHING_CHECK_BUDGET_S:-$([[ $part == profile ]] && echo 330 || echo 600)}"
report_dir="${OUT:-$PWD}"
log_dir="$report_dir/farthing-check"
report="$report_dir/gpu-report.md"
step_max_s="${FARTHING_CHECK_STEP_MAX_S:-90}"
SECONDS=0

[[ -f "$archive" ]] || { echo "check.sh: $archive not found; run tools/gpu/package.sh on the build machine" >&2; exit 3; }
mkdir -p "$log_dir"
steps_tsv="$log_dir/steps.tsv"
: >"$steps_tsv"

# run_step NAME MAX_SECONDS COMMAND... — runs with a timeout cut to the budget left; logs to
# $log_dir/NAME.log; records "name, exit code, outcome, seconds" in steps.tsv; never aborts.
run_step() {
  local name="$1" max_s="$2"; shift 2
  local log="$log_dir/$name.log" left=$((budget_s - SECONDS)) limit rc state start=$SECONDS
  if [[ -n ${FARTHING_CHECK_ONLY:-} && $name != unpack ]] && ! [[ $name =~ ^($FARTHING_CHECK_ONLY)$ ]]; then
    printf '%s\t-\tnot selected\t0\n' "$name" >>"$steps_tsv"
    return 0
  fi
  ((max_s > step_max_s)) && [[ $name != profile-* ]] && max_s=$step_max_s  # the first part sets its own
  limit=$((left - 5 < max_s ? left - 5 : max_s))
  if ((limit < 1)); then
    echo "== $name: no time left in the ${budget_s} s budget"
    printf '%s\t-\tno time\t0\n' "$name" >>"$steps_tsv"
    return 0
  fi
  echo "== $name (timeout ${limit} s): $*"
  timeout -k 5 "$limit" "$@" >"$log" 2>&1
  rc=$?
  case $rc in
    0) state=pass ;;
    77) state=skip ;;
    124|137) state=TIMEOUT ;;
    126|127) state=NOT-RUN ;;
    *) state=FAIL ;;
  esac
  tail -n 25 "$log" | sed 's/^/   | /'
  echo "== $name: exit $rc ($state) in $((SECONDS - start)) s"
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$state" "$((SECONDS - start))" >>"$steps_tsv"
  return 0
}

echo "== farthing GPU check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) cores; budget ${budget_s} s"
unpack_dir="${FARTHING_GPU_UNPACK_DIR:-$(mktemp -d /tmp/farthing-gpu.XXXXXX)}"
mkdir -p "$unpack_dir"
# xz through tar where the machine has it, else Python's lzma (Python is always there).
if command -v xz >/dev/null; then
  run_step unpack 60 tar -C "$unpack_dir" -xJf "$archive"
else
  run_step unpack 60 python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
    "$archive" "$unpack_dir"
fi
PKG="$unpack_dir/farthing-gpu"
[[ -x "$PKG/bin/farthing" ]] || { echo "check.sh: unpacking $archive gave no farthing-gpu/bin/farthing" >&2; exit 3; }
export PKG
# The package's libraries were built against Debian 12's glibc; an older one cannot load them.
glibc_have="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
glibc_need="$(cat "$PKG/GLIBC_MIN" 2>/dev/null || echo 0)"
if [[ -n "$glibc_have" && "$(printf '%s\n%s\n' "$glibc_have" "$glibc_need" | sort -V | head -n1)" != "$glibc_need" ]]; then
  echo "check.sh: this machine has glibc $glibc_have; the package needs >= $glibc_need (build it on an older system)" >&2
  exit 3
fi
echo "== glibc $glibc_have (the package needs >= $glibc_need)"
# shellcheck source=/dev/null
source "$PKG/env.sh"
export FARTHING_TEST_DATA_DIR="$root/tests/data"
# The shared reference folder beside this repository copy, as the test list passes it to the
# test scripts (tests that need it skip when it is absent, as on a bare GPU machine).
export FARTHING_SHARED_DIR="${FARTHING_SHARED_DIR:-$root/../shared}"
export OMP_WAIT_POLICY=passive

if command -v nvidia-smi >/dev/null; then
  run_step nvidia-smi 20 nvidia-smi
else
  echo "== nvidia-smi: not installed (no NVIDIA driver here)"
  printf 'nvidia-smi\t-\tabsent\t0\n' >>"$steps_tsv"
fi

# The machine's CUDA and NCCL libraries (never carried): the toolkit's folders, then any
# Python wheel's nvidia/*/lib (NCCL comes from nvidia-nccl-cu13 there). Only folders holding
# one of them join LD_LIBRARY_PATH, so the machine's tools keep their own libraries.
cuda_dirs="$(timeout 30 python3 "$here/find_cuda_libs.py" 2>"$log_dir/find_cuda_libs.log")"
[[ -n "$cuda_dirs" ]] && export LD_LIBRARY_PATH="$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "== CUDA/NCCL library folders: ${cuda_dirs:-none found}"

if command -v readelf >/dev/null; then
  run_step closure 30 "$here/closure.sh" "$PKG" "$here/gpu_machine_libs.txt"
fi
run_step resolve 60 "$here/resolve.sh" "$PKG" "$here/gpu_machine_libs.txt"

# The first part: the step profiles (train/plan/step_profile_report.h prints each: wall = busy +
# idle, time by phase, each op kind beside its roofline at this GPU's datasheet rates, the
# largest idle gaps, the host's launches, copies and waits) beside their peers.
gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)"
case "$gpu_name" in *H100*) roofline=h100 ;; *) roofline=h200 ;; esac
# On an H200 the recipe runs are the H200 recipes' (no recomputation, micro-batch 4: plan --fit h200).
[[ $roofline == h200 ]] && export TRAIN_PRESETS_H200=1
echo "== device: ${gpu_name:-none visible}; roofline and memory figures for the $roofline"
presets_work="$log_dir/train-presets-work"
run_step profile-gpt2 150 "$PKG/bin/farthing" bench train --device cuda --profile-ops --torch-compile --min-seconds 0.3
# The bf16 GEMM ceiling that run measured (NnOps::matmul at 8192^3), for every MFU below.
ceiling="$(grep -o 'bf16 GEMM 8192^3 through NnOps::matmul [0-9.]*' "$log_dir/profile-gpt2.log" 2>/dev/null | awk '{print $NF}' | head -n1)"
export FARTHING_GEMM_CEILING_TFLOPS="${ceiling:-0}"
run_step profile-llama-1b 150 "$PKG/bin/farthing" bench train --device cuda --preset llama3.2-1b --seq 2048 --batch 4 \
  --profile-ops --min-seconds 0.3
for preset_case in llama-8b-recipe llama-8b qwen-7b-recipe; do
  run_step "profile-$preset_case" 110 env TRAIN_PRESETS_PROFILE=1 "$here/train_presets.sh" "$PKG/bin/farthing" \
    "$presets_work" "$preset_case"
done
if [[ $part == profile ]]; then
  python3 "$here/report.py" "$log_dir" "$archive" "$root" >"$report" || echo "check.sh: report.py failed" >&2
  echo "== first part done: report $report (logs: $log_dir), total $SECONDS s"
  cat "$report"
  grep -qE $'\t(FAIL|TIMEOUT|NOT-RUN)\t' "$steps_tsv" && exit 1
  exit 0
fi
# The A/B pairs on the same warm machine, each against llama-8b-recipe above: the head and loss in
# 64-row chunks against the whole micro-batch, the recipe without recomputation, cuDNN's
# nondeterministic attention backward against the deterministic one, and cuBLASLt's algorithms
# timed per shape (train.gemm_algorithm timed) against the heuristic's first, with both plan logs.
for preset_case in llama-8b-head-64 llama-8b-no-recompute llama-8b-nondeterministic-attention llama-8b-timed-gemms; do
  run_step "ab-$preset_case" 110 env TRAIN_PRESETS_PROFILE=1 "$here/train_presets.sh" "$PKG/bin/farthing" \
    "$presets_work" "$preset_case"
done

# ctest on the package's relocated test list. WORKING_DIRECTORY folders are created first.
ctest_dir="$PKG/ctest"
sed -e "s|@PKG@|$PKG|g" -e "s|@SRC@|$root|g" "$ctest_dir/CTestTestfile.cmake.in" >"$ctest_dir/CTestTestfile.cmake"
grep -o 'WORKING_DIRECTORY "[^"]*"' "$ctest_dir/CTestTestfile.cmake" | cut -d'"' -f2 | sort -u | xargs -r mkdir -p
# ctest in the package's test folder (no --test-dir: older ctest lacks it); no matching test
# is an error, so a package without its CUDA tests cannot pass.
in_ctest_dir() { (cd "$ctest_dir" && exec ctest --no-tests=error --output-on-failure "$@"); }
export -f in_ctest_dir
export ctest_dir
run_step cuda-tests 90 bash -c 'in_ctest_dir "$@"' _ -L cuda --timeout 80
# The model ops, CUDA against the CPU reference (not labelled cuda: the CPU suite runs them too).
run_step cuda-tests-nn-parity 90 bash -c 'in_ctest_dir "$@"' _ -R '^(test_nn_ops_parity|test_ptx_numerics)$' --timeout 85
# FP8 GEMMs: the parity table's matmul_fp8 rows again with each plan's path logged (cuBLASLt's
# FP8 kernels, or the exact dense fallback and why), then FP8 against BF16 throughput at
# Llama-3.1-8B's projection shapes (a disabled test of the same binary).
run_step fp8-gemm 45 env FARTHING_FP8_PLAN_LOG=1 "$PKG/bin/test_nn_ops_parity" --gtest_also_run_disabled_tests \
  --gtest_filter='NnOps/Cuda.MatchesCpuWithinItsClass/matmul_fp8_*:Fp8GemmThroughput.*'
# Packed documents through cuDNN's ragged batch (attention_cudnn.h): the parity table's
# attention_*_bf16_documents_* rows again, failing where cuDNN did not load or they ran the fp32
# kernel instead (the log keeps the engine's line saying why).
run_step cudnn-documents 45 bash -c 'out="$("$PKG/bin/test_nn_ops_parity" \
  --gtest_filter="NnOps/Cuda.MatchesCpuWithinItsClass/attention_*_bf16_documents_*" 2>&1)"; rc=$?; echo "$out"
  grep -q "attention through cuDNN" <<<"$out" || { echo "cudnn-documents: cuDNN did not load"; exit 1; }
  ! grep -q "runs the fp32 CUDA kernel" <<<"$out" || { echo "cudnn-documents: the rows ran the fp32 kernel"; exit 1; }
  exit $rc'
# Whole models (a training step's loss and gradients, decoding logits) through the CUDA ops:
# the small models, then SmolLM2-135M in fp32 and bf16, then in FP8 (the twelve cases together
# outrun one step's 85 s on an H200).
run_step cuda-tests-model-on-device 90 "$PKG/bin/test_model_on_device_ops" --gtest_filter='Models/CudaStaged.*:-*smollm2*'
run_step cuda-tests-model-on-device-135m 90 "$PKG/bin/test_model_on_device_ops" \
  --gtest_filter='Models/CudaStaged.*smollm2_135m_f32:Models/CudaStaged.*smollm2_135m_bf16'
run_step cuda-tests-model-on-device-135m-fp8 90 "$PKG/bin/test_model_on_device_ops" \
  --gtest_filter='Models/CudaStaged.*smollm2_135m_fp8'
# The one-GPU trainer: GPT-2 124M, 4 steps on cuda and on the cpu, losses within 2% (train_smoke.sh).
run_step train-smoke 90 "$here/train_smoke.sh" "$PKG/bin/farthing" "$log_dir/train-smoke-work"
# Exact resume on the GPU (SmolLM2-135M: 3 steps + resume == 6 straight) and its curve against the CPU.
run_step train-resume-135m 90 "$here/train_presets.sh" "$PKG/bin/farthing" "$presets_work" resume-135m
# Two ranks under the package's mpirun (Open MPI's launcher, carried): the collectives on the host
# (test_collectives at np 2), then ZeRO-3 over two ranks sharing this GPU through the host-staged
# communicator, bit for bit against one rank (zero_staged_check.sh).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run_step mpirun-np2 30 "$PKG/bin/mpirun" --oversubscribe -np 2 "$PKG/bin/test_collectives" --gtest_brief=1
run_step zero-staged-np2 90 "$here/zero_staged_check.sh" "$PKG/bin/farthing" "$PKG/bin/mpirun" "$log_dir/zero-staged-work"
run_step farthing-info 20 "$PKG/bin/farthing" info
run_step bench-gemm 90 "$PKG/bin/farthing" bench gemm --device cuda
run_step bench-ops 90 "$PKG/bin/farthing" bench ops --device cuda
# The one-GPU trainer against torch on the same GPU (GPT-2 124M, batch 8 x seq 1024; MFU).
run_step bench-train 90 "$PKG/bin/farthing" bench train --device cuda --min-seconds 0.5
# The trainer at the aims' sizes (train_presets.sh): Llama-3.2-1B's MFU; Llama-3.1-8B's device
# peak and MFU with 8-bit AdamW + SR, no master, the optimizer in backward; then the same in FP8;
# Qwen2.5-7B's tokens/s; last, Llama-3.1-8B with the optimizer on the host (tokens/s and device
# peak beside the device-resident run's, and its losses bit for bit).
for preset_case in llama-1b llama-8b-fp8 qwen-7b llama-8b-offload; do  # llama-8b ran in the first part
  run_step "train-$preset_case" 90 "$here/train_presets.sh" "$PKG/bin/farthing" "$presets_work" "$preset_case"
done
# The same 8B recipe on paper at this GPU's datasheet rates (train/plan/roofline.h), for the
# report to set beside the measured step: each op's time at the roofline and the MFU it allows.
run_step roofline-8b 20 "$PKG/bin/farthing" plan "$root/recipes/llama3_1/8b_full_single_device.yaml" \
  --preset llama3.1-8b --roofline "$roofline"
# And each of its rows run on this GPU, op by op at the step's shapes (train/plan/roofline_measure.h):
# the measured time beside each roofline row, and the MFU the ops allow with no gaps between them.
run_step roofline-8b-measured 90 "$PKG/bin/farthing" plan "$root/recipes/llama3_1/8b_full_single_device.yaml" \
  --preset llama3.1-8b --set train.device=cuda --roofline "$roofline" --measure-ops
# The elementwise and optimizer kernels' rates last among the GPU steps: the trainer's runs above
# say more per second of GPU time.
run_step bench-numerics 90 "$PKG/bin/farthing" bench numerics --device cuda
run_step bench-optim 90 "$PKG/bin/farthing" bench optim --device cuda
run_step versions 20 python3 "$here/versions.py"
# The CPU suite is not carried (tools/gpu/ctest_manifest.py): it runs in CI, and GPU time is for
# what only a GPU can show.

python3 "$here/report.py" "$log_dir" "$archive" "$root" >"$report" || echo "check.sh: report.py failed" >&2
echo
echo "== report: $report (logs: $log_dir), total $SECONDS s"
cat "$report"

outcomes="$(cut -f3 "$steps_tsv")"
if grep -qE '^(FAIL|TIMEOUT|NOT-RUN)$' <<<"$outcomes"; then
  echo "== RESULT: something failed (see the report)"
  exit 1
fi
if grep -q '^no time$' <<<"$outcomes"; then
  echo "== RESULT: the budget ran out before every step ran (see the report)"
  exit 1
fi
if grep -q 'no CUDA device' "$log_dir"/bench-*.log 2>/dev/null; then
  echo "== RESULT: no CUDA device: the CUDA tests and benchmarks were skipped"
  exit 2
fi
echo "== RESULT: all passed"
exit 0
