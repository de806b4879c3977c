#!/usr/bin/env bash
# sim_check.sh [BUILD_DIR] — the hand-written CUDA kernels' parity tests (ctest label gpu-sim:
# tests/kernels' *_sim entries, small sizes) under a GPU simulator, on a machine without a GPU.
#   FARTHING_GPU_SIMULATOR=<folder holding the simulator's libcudart.so*> (e.g. GPGPU-Sim's
#     lib/<gcc>/<cuda>/release): put first on LD_LIBRARY_PATH, so the test binaries' CUDA runtime
#     calls reach the simulator instead of a driver.
#   FARTHING_GPU_SIMULATOR_CONFIG=<folder with gpgpusim.config> (and the files it names, such as
#     the interconnect config): copied into the tests' working folder (BUILD_DIR/tests/kernels,
#     where ctest runs them).
# Builds its own folder (BUILD_DIR, default build-sim) for sm_75 with the shared CUDA runtime
# (-DCMAKE_CUDA_ARCHITECTURES=75 -DCMAKE_CUDA_RUNTIME_LIBRARY=Shared): the simulator executes the
# PTX nvcc embeds and replaces libcudart.so, which a static runtime would bypass. Only the three
# parity test binaries and the whole-model one are built. GEMMs: FARTHING_SIM_GEMM_DOUBLE=ON puts a plain CUDA kernel
# (kernels/cuda/matmul_sim_double.cu, a test double) behind MatmulLt in this build only, since a
# simulator cannot run cuBLASLt. Anything else the simulator needs at run time (for GPGPU-Sim,
# CUDA_INSTALL_PATH naming a toolkit with cuobjdump) comes from the caller's environment.
# Without FARTHING_GPU_SIMULATOR: one line saying how to point it at one, exit 77 (skipped, the
# tests' convention). Exit 2: the simulator folder holds no libcudart. Otherwise ctest's status.
# What runs there, and what a simulator cannot run (cuBLASLt, cuDNN, NCCL, tensor cores):
# docs/cuda_ops.md ("verified under simulation"). Relies on: cmake, ctest, nvcc.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(realpath -m "${1:-$src/build-sim}")"
sim="${FARTHING_GPU_SIMULATOR:-}"
config="${FARTHING_GPU_SIMULATOR_CONFIG:-}"
if [[ -z $sim ]]; then
  echo "sim_check: no GPU simulator given (set FARTHING_GPU_SIMULATOR=<folder with its libcudart.so>" \
       "and FARTHING_GPU_SIMULATOR_CONFIG=<folder with gpgpusim.config>); skipped"
  exit 77
fi
if ! compgen -G "$sim/libcudart.so*" >/dev/null; then
  echo "sim_check: FARTHING_GPU_SIMULATOR=$sim holds no libcudart.so*" >&2
  exit 2
fi
if [[ -n $config && ! -f $config/gpgpusim.config ]]; then
  echo "sim_check: FARTHING_GPU_SIMULATOR_CONFIG=$config holds no gpgpusim.config" >&2
  exit 2
fi

jobs="${SIM_CHECK_JOBS:-2}"
mkdir -p "$build"
log="$build/sim_check.configure.log"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=75 \
  -DCMAKE_CUDA_RUNTIME_LIBRARY=Shared -DFARTHING_SIM_GEMM_DOUBLE=ON -DFARTHING_CUDNN=OFF >"$log" 2>&1 ||
  { tail -30 "$log"; echo "sim_check: configure failed ($log)" >&2; exit 1; }
grep -q 'CUDA backend ON' "$log" || { echo "sim_check: the configure found no CUDA toolkit ($log)" >&2; exit 1; }
cmake --build "$build" -j "$jobs" --target test_cuda_parity test_cuda_optim_parity test_nn_ops_parity \
  test_model_on_device_ops

run_dir="$build/tests/kernels"  # the gpu-sim tests' folder: ctest runs each test in its own
[[ -z $config ]] || cp -f "$config"/* "$run_dir"/
# Every kernel runs to completion before its launch returns: the simulator then needs no stream
# scheduling of its own, and a kernel's failure surfaces at its launch.
export CUDA_LAUNCH_BLOCKING=1
export LD_LIBRARY_PATH="$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "sim_check: running the gpu-sim tests under $sim (config ${config:-none}, working folder $run_dir)"
cd "$build"
ctest -L gpu-sim --output-on-failure --timeout "${SIM_CHECK_TIMEOUT:-3000}" "${@:2}"
