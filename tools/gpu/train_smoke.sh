#!/usr/bin/env bash
# train_smoke.sh FARTHING [WORK_DIR] — the one-GPU trainer's first check, for a GPU session:
# the same steps of GPT-2 124M (random init, synthetic tokens, bf16 compute, 8-bit AdamW + SR,
# no master) with train.device cuda and cpu, one after the other. Prints both loss curves and
# fails when any step's loss differs by more than 2% (bf16 GEMMs and fp32 reductions in other
# orders: the runs are close, not equal), or when the CUDA run fails.
# Needs python3 (to write the token file). Exit 77 without a visible GPU. Its runs on a GPU: docs/results.md.
set -euo pipefail
farthing="$1"
work="${2:-$(mktemp -d /tmp/farthing_train_smoke.XXXXXX)}"
src="$(cd "$(dirname "$0")/../.." && pwd)"
source "$src/tools/gpu/run_common.sh"
mkdir -p "$work"
[[ -n ${TRAIN_SMOKE_DEVICES:-} ]] || skip_without_gpu train_smoke cuda
write_tokens "$work/tokens.tok" 50257 $((80 * 4 * 257)) 1234
common=(--set model.preset=gpt2-124m --set model.path= --set "data.train=$work/tokens.tok" --set data.format=tokens
        --set data.seq_len=256 --set train.micro_batch=4 --set train.grad_accum=1 --set train.steps=4
        --set schedule.warmup_steps=1 --set train.eval_batches=1 --set train.eval_every=0
        --set checkpoint.save_every=0 --set train.precision=bf16 --set optimizer.state=8bit
        --set optimizer.master=none --set optimizer.weight_rounding=stochastic --quiet)
for device in ${TRAIN_SMOKE_DEVICES:-cuda cpu}; do  # TRAIN_SMOKE_DEVICES="strict cpu": a dry run without a GPU
  rm -rf "$work/run-$device"
  start=$SECONDS
  "$farthing" train "$src/recipes/gpt2/124m_full_single_device.yaml" "${common[@]}" \
    --set "train.device=$device" --set "checkpoint.run_dir=$work/run-$device"
  echo "train_smoke: $device took $((SECONDS - start)) s"
done
python3 - "$work/run-cuda/metrics.jsonl" "$work/run-cpu/metrics.jsonl" <<'PY'
import json, sys
def curve(path):
    return [(r["loss"], r.get("tokens_per_s"), r.get("peak_mem_bytes")) for r in map(json.loads, open(path)) if "loss" in r]
cuda, cpu = curve(sys.argv[1]), curve(sys.argv[2])
assert len(cuda) == len(cpu) == 4, f"expected 4 steps each, got {len(cuda)} (cuda) and {len(cpu)} (cpu)"
worst = 0.0
for step, ((a, ta, ma), (b, tb, mb)) in enumerate(zip(cuda, cpu), 1):
    rel = abs(a - b) / abs(b)
    worst = max(worst, rel)
    print(f"step {step}: loss cuda {a:.5f}  cpu {b:.5f}  rel diff {rel:.2e}  tok/s cuda {ta:.0f} cpu {tb:.0f}  "
          f"peak cuda {ma / 2**20:.0f} MiB cpu {mb / 2**20:.0f} MiB")
print(f"train_smoke: worst relative loss difference {worst:.2e} (limit 2e-2)")
sys.exit(0 if worst <= 2e-2 else 1)
PY
