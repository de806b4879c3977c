#!/usr/bin/env bash
# tools/test.sh — set up, build and run the whole test suite (README's test command; CI runs it).
# Tests that need ../shared skip with a message when it is absent; CUDA tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "${FARTHING_BUILD_DIR:-build}" --output-on-failure -j2 "$@"
