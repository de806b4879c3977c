#!/usr/bin/env bash
# test_export_qwen3.sh — Qwen3 end to end against transformers: a tiny random Qwen3ForCausalLM
# (q/k norms, GQA, head_dim 16 with hidden 32 and 4 heads, tied head) saved by transformers as a
# Hugging Face folder is fine-tuned by `farthing train` for 2 bf16 steps (bf16 activations, so the
# q/k norms' bf16 forms), exported with `farthing export` (its bf16 weights as trained, which
# `farthing generate` reads from the checkpoint too), and transformers loads the export in fp32:
# its next-token logits after three prompts equal `farthing generate`'s within 1e-5. A config.json with
# YaRN rope scaling (Qwen3's long-context setting) is one error line. Skips (77) without ../shared's stories260K tokenizer or without torch/transformers.
# The source folder holds tokenizer files with the family's chat template (tests/support/
# with_chat_template.sh), which the run reads and the export carries out: transformers renders
# the export's template as jinja2 does.
# usage: test_export_qwen3.sh FARTHING SHARED_DIR SOURCE_DIR
source "$3/tests/train/loop/train_test_common.sh"
python3 -c "import torch, transformers" 2>/dev/null || { echo "SKIP: torch/transformers absent"; exit 77; }

python3 - "$WORK/src" <<'PY'
import sys, torch, transformers
torch.manual_seed(5)
config = transformers.Qwen3Config(
    vocab_size=512, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, max_position_embeddings=128, rms_norm_eps=1e-6,
    rope_theta=1000000.0, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
model = transformers.Qwen3ForCausalLM(config)
with torch.no_grad():
    for name, p in model.named_parameters():  # norms away from 1, so a missing q/k norm shows
        p.copy_((1.0 if name.endswith("norm.weight") else 0.0) + 0.1 * torch.randn_like(p))
model.save_pretrained(sys.argv[1])
PY
source "$3/tests/support/with_chat_template.sh"
add_tokenizer_with_template "$WORK/src" "$SHARED/models/stories260K/tok512.bin" qwen3_thinking_style
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "model.path=$WORK/src" \
  --set "model.tokenizer=$WORK/src" \
  --set train.steps=2 --set schedule.warmup_steps=1 --set "checkpoint.run_dir=$WORK/run" >"$WORK/train" 2>&1 \
  || { cat "$WORK/train"; fail "2 steps of the tiny Qwen3"; }
CKPT="$WORK/run/checkpoints/step_00000002.h5"
"$FARTHING" export --from "$CKPT" --out "$WORK/hf" \
  2>"$WORK/err" || { cat "$WORK/err"; fail "export of the tiny Qwen3"; }
grep -q '"model_type": "qwen3"' "$WORK/hf/config.json" || fail "the export's config.json is not qwen3: $(cat "$WORK/hf/config.json")"
# transformers' next-token logits after each prompt against `farthing generate --logits-out` on the
# checkpoint (the KV-cache decoder), both through the exported tokenizer.
for prompt in "Once upon a time" "The cat sat on the mat and" "Lily"; do
  "$FARTHING" generate --model "$CKPT" --tokenizer "$WORK/hf" --prompt "$prompt" --max-new-tokens 1 \
    --logits-out "$WORK/logits.f32" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; fail "farthing generate"; }
  python3 - "$WORK/hf" "$prompt" "$WORK/logits.f32" <<'PY' || fail "transformers' logits of the export differ from farthing's"
import sys, numpy as np, torch, transformers
hf, prompt, ours = sys.argv[1], sys.argv[2], np.fromfile(sys.argv[3], dtype="<f4")
tok = transformers.AutoTokenizer.from_pretrained(hf)
model = transformers.AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32).eval()
assert type(model).__name__ == "Qwen3ForCausalLM", type(model).__name__
with torch.no_grad():
    ref = model(tok(prompt, return_tensors="pt").input_ids).logits[0, -1].numpy()
diff = float(np.max(np.abs(ours - ref))) if ours.shape == ref.shape else float("inf")
print(f"{prompt!r}: max |farthing - transformers| = {diff:.3g} over {ref.size} logits")
sys.exit(0 if diff <= 1e-5 else 1)
PY
done

python3 - "$WORK/src/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
rope = c.get("rope_parameters") or {}
rope.update({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})
c["rope_parameters"] = rope
json.dump(c, open(sys.argv[1], "w"))
PY
expect_error "a Qwen3 config.json with YaRN rope scaling" "rope type 'yarn' is not supported" -- \
  "$FARTHING" generate --model "$WORK/src" --tokenizer "$WORK/hf" --prompt "Lily" --max-new-tokens 1
# The export carries the model folder's tokenizer files as they are: its chat template renders in
# transformers as in jinja2.
check_export_chat_template "$WORK/hf" qwen3_thinking_style
echo "ok: tiny Qwen3 trained, exported and reloaded by transformers"
