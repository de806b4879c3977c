#!/usr/bin/env bash
# train_presets.sh FARTHING WORK_DIR CASE — the one-GPU trainer at the sizes its aims name
# (the throughput and memory aims, the FP8 step's speed-up), one case per call so that a GPU check gives each its
# own timeout. Random init and synthetic tokens (nothing can be downloaded there). CASE:
#   resume-135m  SmolLM2-135M, 6 steps straight against 3 + resume: every loss bit for bit; and
#                the same 6 steps on the CPU, each loss within 2% (bf16 GEMMs in other orders)
#   llama-1b     Llama-3.2-1B, seq 2048, bf16 + 8-bit AdamW: tokens/s, MFU, device peak
#   llama-8b     Llama-3.1-8B, seq 2048, 8-bit AdamW + SR, no master, optimizer in backward
#                (recipes/llama3_1/8b_full_single_device.yaml): device peak (aim <= 44 GiB), MFU
#   llama-8b-fp8 the same with precision fp8, block scaling (8b_full_single_device_fp8.yaml):
#                its tokens/s against llama-8b's when that ran in the same WORK_DIR (aim >= 1.3x)
#   llama-8b-offload  the llama-8b run with the optimizer on the host (optimizer.offload host,
#                8b_full_single_device_offload.yaml): tokens/s and device peak beside llama-8b's
#                (aim: peak <= 22 GiB), and its losses against llama-8b's bit for bit, when that
#                ran in the same WORK_DIR
#   qwen-7b      Qwen2.5-7B, seq 2048, micro-batch 2, its recipe's 8-bit AdamW + SR, no master:
#                tokens/s beside llm.q's published 14k tok/s (one H100, BF16)
#   llama-8b-recipe, qwen-7b-recipe  the step the roofline models: the recipe's own configuration
#                (micro-batch 2, clipping on, the optimizer after backward, blocks recomputed),
#                with grad_accum 2 so that gradients accumulate across micro-batches
#   llama-8b-head-64  llama-8b-recipe with the head and loss in 64-row chunks (model.loss_chunk_rows
#                64) against the recipe's whole micro-batch at once: an A/B pair with it
#   llama-8b-no-recompute  llama-8b-recipe without recomputation (activation_checkpointing none)
#   llama-8b-nondeterministic-attention  llama-8b-recipe with cuDNN's nondeterministic attention
#                backward (train.deterministic_attention false) against its deterministic one
#   llama-8b-timed-gemms  llama-8b-recipe with train.gemm_algorithm timed (up to 8 of cuBLASLt's
#                algorithms timed per GEMM shape on step 1, rank 0's fastest from step 2) against the
#                heuristic's first; both print their GEMM plan log (from profile.json when profiled)
# TRAIN_PRESETS_H200=1: the *-recipe cases (and their A/B pairs) take the H200 recipes
# (*_h200.yaml: micro-batch 4, no recomputation, the plan's --fit h200 choice).
# TRAIN_PRESETS_PROFILE=1 adds train.profile: ops to every run: each prints its step profile
# (every op timed on CUDA events, by phase, beside the roofline) and writes profile.json.
# FARTHING_GEMM_CEILING_TFLOPS (the bf16 GEMM rate measured this visit) adds the MFU against it.
# The throughput cases write no checkpoint (checkpoint.save_final=false): Llama-3.1-8B's final
# checkpoint alone takes longer than a check's step may run.
# Prints each run's last step (loss, tokens/s, MFU, peak) as metrics.jsonl has it; the figures
# are a few steps' worth, the first step (warm-up: cuBLASLt's plans, the pool) left out.
# TRAIN_PRESETS_DEVICE=strict with TRAIN_PRESETS_PRESET=stories260k and TRAIN_PRESETS_SEQ=64: a
# dry run of the same flow on the CPU kernels (every case then trains that small model).
# Exit 77 without a visible GPU. Needs python3. Its runs on a GPU: docs/results.md.
set -euo pipefail
farthing="$1"
work="$2"
case_name="$3"
device="${TRAIN_PRESETS_DEVICE:-cuda}"
src="$(cd "$(dirname "$0")/../.." && pwd)"
source "$src/tools/gpu/run_common.sh"
mkdir -p "$work"
skip_without_gpu train_presets "$device"

recipe_dir="$src/recipes"
h200_suffix=""
[[ ${TRAIN_PRESETS_H200:-0} == 1 ]] && h200_suffix=_h200
# The run's GEMM plans as profile.json records them (a profiled run on a GPU; nothing otherwise).
plan_log() {
  [[ -f $work/$1/profile.json ]] || return 0
  python3 - "$work/$1/profile.json" "$1" <<'PY'
import json, sys
plans = json.load(open(sys.argv[1])).get("gemm_plans", [])
print(f"train_presets: {sys.argv[2]}: {len(plans)} GEMM plans")
for p in plans:
    rate = f"{p['tflops']:.1f} TFLOP/s" if p["tflops"] > 0 else "not timed"
    cands = " ".join(f"{c:.1f}" for c in p["candidate_tflops"])
    print(f"  {p['key']}: {p['algorithm']}, {rate}" + (f" (candidates {cands})" if cands else "") + f"; {p['how']}")
PY
}

case "$case_name" in
  resume-135m) preset=smollm2-135m vocab=49152 seq=512 recipe=smollm2/135m_full_single_device.yaml ;;
  llama-1b) preset=llama3.2-1b vocab=128256 seq=2048 recipe=llama3_2/1b_full_single_device.yaml ;;
  llama-8b) preset=llama3.1-8b vocab=128256 seq=2048 recipe=llama3_1/8b_full_single_device.yaml ;;
  llama-8b-fp8) preset=llama3.1-8b vocab=128256 seq=2048 recipe=llama3_1/8b_full_single_device_fp8.yaml ;;
  llama-8b-offload) preset=llama3.1-8b vocab=128256 seq=2048 recipe=llama3_1/8b_full_single_device_offload.yaml ;;
  qwen-7b) preset=qwen2.5-7b vocab=152064 seq=2048 recipe=qwen2_5/7b_full_single_device.yaml ;;
  qwen-7b-recipe) preset=qwen2.5-7b vocab=152064 seq=2048 recipe=qwen2_5/7b_full_single_device${h200_suffix}.yaml ;;
  llama-8b-recipe|llama-8b-head-64|llama-8b-no-recompute|llama-8b-nondeterministic-attention|llama-8b-timed-gemms)
    preset=llama3.1-8b vocab=128256 seq=2048 recipe=llama3_1/8b_full_single_device${h200_suffix}.yaml ;;
  *) echo "train_presets: unknown case '$case_name' (resume-135m|llama-1b|llama-8b|llama-8b-fp8|llama-8b-offload|qwen-7b|llama-8b-recipe|qwen-7b-recipe|llama-8b-head-64|llama-8b-no-recompute|llama-8b-nondeterministic-attention|llama-8b-timed-gemms)" >&2; exit 2 ;;
esac
if [[ -n ${TRAIN_PRESETS_PRESET:-} ]]; then
  preset="$TRAIN_PRESETS_PRESET"
  case "$preset" in stories260k) vocab=512 ;; *) echo "train_presets: no vocabulary size known for $preset" >&2; exit 2 ;; esac
fi
seq="${TRAIN_PRESETS_SEQ:-$seq}"

tokens="$work/tokens-$vocab-$seq.tok"
[[ -f $tokens ]] || write_tokens "$tokens" "$vocab" $((48 * (seq + 1))) 2468  # every run's sequences and held-out batch

common=(--set "model.preset=$preset" --set model.path= --set model.tokenizer= --set "data.train=$tokens"
        --set data.format=tokens --set "data.seq_len=$seq" --set train.eval_batches=1 --set train.eval_every=0
        --set schedule.warmup_steps=1 --set train.log_every=1)
[[ ${TRAIN_PRESETS_PROFILE:-0} == 1 ]] && common+=(--set train.profile=ops)
run() {  # run NAME DEVICE [extra --set ...]: a training run into $work/NAME
  local name="$1" dev="$2"; shift 2
  local start=$SECONDS
  "$farthing" train "$recipe_dir/$recipe" "${common[@]}" --set "train.device=$dev" --set "checkpoint.run_dir=$work/$name" "$@"
  echo "train_presets: $name ($dev) took $((SECONDS - start)) s"
}
losses() { grep -o '"loss":[^,}]*' "$work/$1/metrics.jsonl"; }
# The last step's figures (later steps than the first: the first carries the warm-up).
summary() {
  python3 - "$work/$1/metrics.jsonl" "$1" "${FARTHING_GEMM_CEILING_TFLOPS:-0}" <<'PY'
import json, sys
ceiling = float(sys.argv[3]) * 1e12
rows = [r for r in map(json.loads, open(sys.argv[1])) if "loss" in r]
last = rows[-1]
steady = rows[1:] or rows
tok_s = sum(r["tokens"] for r in steady) / sum(r["step_seconds"] for r in steady)
mfu = last.get("mfu")
print(f"train_presets: {sys.argv[2]}: {len(rows)} steps, last loss {last['loss']:.5f}, "
      f"{tok_s:.0f} tokens/s over steps 2-{len(rows)}, "
      + (f"MFU {100 * mfu:.1f}% (last step), " if mfu is not None else "MFU n/a (no datasheet peak), ")
      + (f"{100 * last['model_flops_per_s'] / ceiling:.1f}% of the GEMM ceiling measured this visit, "
         if ceiling > 0 and "model_flops_per_s" in last else "")
      + f"device peak {last['peak_mem_bytes'] / 2**30:.2f} GiB")
with open(sys.argv[1] + ".tokens_per_s", "w") as f:
    f.write(f"{tok_s}\n")
PY
}

case "$case_name" in
  resume-135m)
    steps=(--set train.steps=6 --set train.micro_batch=4 --set train.grad_accum=1 --set checkpoint.save_every=3)
    rm -rf "$work/straight" "$work/split" "$work/on-cpu"
    run straight "$device" "${steps[@]}"
    run split "$device" "${steps[@]}" --stop-at 3
    run split "$device" "${steps[@]}" --resume latest
    summary straight
    [[ $(losses straight | wc -l) -eq 6 ]] || { echo "FAIL: expected 6 losses from the straight run"; exit 1; }
    diff <(losses straight) <(losses split) || { echo "FAIL: 3 steps + resume differ from 6 straight (diff above)"; exit 1; }
    echo "ok: resume-135m: 3 steps + resume == 6 straight, bit for bit, on $device"
    run on-cpu cpu "${steps[@]}" --set checkpoint.save_every=0 --set checkpoint.save_final=false
    python3 - "$work/straight/metrics.jsonl" "$work/on-cpu/metrics.jsonl" "$device" <<'PY'
import json, sys
def curve(path):
    return [r["loss"] for r in map(json.loads, open(path)) if "loss" in r]
dev, cpu = curve(sys.argv[1]), curve(sys.argv[2])
worst = max(abs(a - b) / abs(b) for a, b in zip(dev, cpu))
for step, (a, b) in enumerate(zip(dev, cpu), 1):
    print(f"step {step}: loss {sys.argv[3]} {a:.5f}  cpu {b:.5f}")
print(f"train_presets: resume-135m: worst relative loss difference {sys.argv[3]} vs cpu {worst:.2e} (limit 2e-2)")
sys.exit(0 if len(dev) == len(cpu) == 6 and worst <= 2e-2 else 1)
PY
    ;;
  llama-1b)
    rm -rf "$work/$case_name"
    run "$case_name" "$device" --set train.steps=4 --set train.micro_batch=4 --set train.grad_accum=1 \
      --set checkpoint.save_every=0 --set checkpoint.save_final=false
    summary "$case_name"
    ;;
  qwen-7b)
    rm -rf "$work/$case_name"
    run "$case_name" "$device" --set train.steps=3 --set train.micro_batch=2 --set train.grad_accum=1 \
      --set checkpoint.save_every=0 --set checkpoint.save_final=false
    summary "$case_name"
    echo "train_presets: qwen-7b: llm.q publishes 14k tokens/s for Qwen2.5-7B on one H100 in BF16 (not this GPU)"
    ;;
  llama-8b-recipe|qwen-7b-recipe|llama-8b-head-64|llama-8b-no-recompute|llama-8b-nondeterministic-attention|\
  llama-8b-timed-gemms)
    # The recipe as written (its micro-batch, clipping, the optimizer after backward), with two
    # micro-batches per step rather than 8-16 so that three steps fit a check's timeout.
    ab=()
    [[ $case_name == llama-8b-head-64 ]] && ab=(--set model.loss_chunk_rows=64)
    [[ $case_name == llama-8b-no-recompute ]] && ab=(--set model.activation_checkpointing=none)
    [[ $case_name == llama-8b-nondeterministic-attention ]] && ab=(--set train.deterministic_attention=false)
    [[ $case_name == llama-8b-timed-gemms ]] && ab=(--set train.gemm_algorithm=timed)
    rm -rf "$work/$case_name"
    run "$case_name" "$device" --set train.steps=3 --set train.grad_accum=2 \
      --set checkpoint.save_every=0 --set checkpoint.save_final=false "${ab[@]}"
    summary "$case_name"
    plan_log "$case_name"
    for base in llama-8b-recipe; do  # the A/B pair's other half, when it ran in this WORK_DIR
      if [[ $case_name != "$base" && $case_name == llama-8b-* && -f "$work/$base/metrics.jsonl.tokens_per_s" ]]; then
        python3 -c 'import sys; a, b = (float(open(p).read()) for p in sys.argv[1:3]); print(f"train_presets: {sys.argv[3]} against the recipe: {b / a:.3f}x tokens/s")' \
          "$work/$base/metrics.jsonl.tokens_per_s" "$work/$case_name/metrics.jsonl.tokens_per_s" "$case_name"
      fi
    done
    ;;
  llama-8b|llama-8b-fp8|llama-8b-offload)
    # The aim's setting: no gradients kept (each unit steps as backward finishes it), so no
    # accumulation, no clipping, and a non-finite gradient fails the run (it cannot skip a step
    # whose earlier units have stepped).
    rm -rf "$work/$case_name"
    run "$case_name" "$device" --set train.steps=3 --set train.micro_batch=1 --set train.grad_accum=1 \
      --set train.optimizer_in_backward=true --set train.max_grad_norm=0 --set train.nonfinite=fail \
      --set checkpoint.save_every=0 --set checkpoint.save_final=false
    summary "$case_name"
    if [[ $case_name == llama-8b-fp8 && -f "$work/llama-8b/metrics.jsonl.tokens_per_s" ]]; then
      python3 -c 'import sys; b, f = (float(open(p).read()) for p in sys.argv[1:]); print(f"train_presets: fp8 step speedup over bf16: {f / b:.2f}x (aim >= 1.3x)")' \
        "$work/llama-8b/metrics.jsonl.tokens_per_s" "$work/llama-8b-fp8/metrics.jsonl.tokens_per_s"
    fi
    if [[ $case_name == llama-8b-offload && -f "$work/llama-8b/metrics.jsonl" ]]; then
      summary llama-8b  # the device-resident run's figures again, beside the offloaded run's
      # The same settings but where the optimizer's state lives: the host's CPU kernels must give
      # the device kernel's bits.
      diff <(losses llama-8b) <(losses llama-8b-offload) \
        || { echo "FAIL: llama-8b-offload's losses differ from llama-8b's (diff above)"; exit 1; }
      echo "ok: llama-8b-offload: losses == llama-8b's (optimizer on the device) bit for bit"
    fi
    ;;
esac
