#!/usr/bin/env bash
# tools/test.sh — set up, build and run the whole test suite (README's test command; CI runs it).
# Tests that need ../shared skip with a message when it is absent; CUDA tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
tools/setup.sh
echo "test: install and build took $((SECONDS - start)) s"
build_dir=${FARTHING_BUILD_DIR:-build}

# A package installed by hand here would keep this build green and a fresh machine red (oneDNN's
# CMake config needs OpenCL's headers, which only an install step brings). shared/'s check reads the build folder and
# tools/*.sh and fails on any package the build used that neither the image nor setup.sh brings.
fresh_check=../shared/tools/fresh-machine-check
if [[ -x $fresh_check ]]; then
  "$fresh_check" "$build_dir"
else
  echo "test: $fresh_check absent; skipping the fresh-machine package check"
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
start=$SECONDS
status=0
ctest --test-dir "$build_dir" --output-on-failure -j2 "$@" || status=$?
echo "test: ctest took $((SECONDS - start)) s"
exit "$status"
