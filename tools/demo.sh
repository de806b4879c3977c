#!/usr/bin/env bash
# tools/demo.sh — set up, build and run farthing's main job (README's first command).
# Until the trainer lands (issue 6), the main job is the numerics benchmark: every cast,
# stochastic-rounding cast and 8-bit block quantizer against memcpy on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
build/bin/farthing info
build/bin/farthing bench numerics "$@"
