#!/usr/bin/env bash
# test_export_gemma3.sh — Gemma 3 end to end against transformers: a tiny random Gemma3ForCausalLM
# (norm gains 1 + w, sandwich norms, GeGLU, q/k norms, GQA, head_dim 16 with hidden 32 and 4 heads,
# query_pre_attn_scalar 24, sliding and global layers with a window of 4 shorter than the prompts,
# each with its RoPE base, a tied head) saved by transformers as a Hugging Face folder is fine-tuned
# by `farthing train` for 2 bf16 steps (bf16 activations), exported with `farthing export`, and
# transformers loads the export in fp32: its next-token logits after three prompts equal
# `farthing generate`'s within 1e-5, and the exported norm weights are w (not 1 + w). A config.json
# with soft-capped logits is one error line. Skips (77) without ../shared's stories260K tokenizer or
# without torch/transformers.
# The source folder holds tokenizer files with the family's chat template (tests/support/
# with_chat_template.sh), which the run reads and the export carries out: transformers renders
# the export's template as jinja2 does.
# usage: test_export_gemma3.sh FARTHING SHARED_DIR SOURCE_DIR
source "$3/tests/train/loop/train_test_common.sh"
python3 -c "import torch, transformers" 2>/dev/null || { echo "SKIP: torch/transformers absent"; exit 77; }

python3 - "$WORK/src" <<'PY'
import sys, torch, transformers
torch.manual_seed(6)
config = transformers.Gemma3TextConfig(
    vocab_size=512, hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, max_position_embeddings=128, rms_norm_eps=1e-6,
    query_pre_attn_scalar=24, sliding_window=4,
    layer_types=["sliding_attention", "full_attention", "sliding_attention"],
    rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
    tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=None)
model = transformers.Gemma3ForCausalLM(config)
with torch.no_grad():
    for name, p in model.named_parameters():  # norm weights w away from 0, so a gain of w (not 1 + w) shows
        p.copy_(0.1 * torch.randn_like(p))
model.save_pretrained(sys.argv[1])
PY
source "$3/tests/support/with_chat_template.sh"
add_tokenizer_with_template "$WORK/src" "$SHARED/models/stories260K/tok512.bin" gemma3
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "model.path=$WORK/src" \
  --set "model.tokenizer=$WORK/src" \
  --set train.steps=2 --set schedule.warmup_steps=1 --set "checkpoint.run_dir=$WORK/run" >"$WORK/train" 2>&1 \
  || { cat "$WORK/train"; fail "2 steps of the tiny Gemma 3"; }
CKPT="$WORK/run/checkpoints/step_00000002.h5"
"$FARTHING" export --from "$CKPT" --out "$WORK/hf" \
  2>"$WORK/err" || { cat "$WORK/err"; fail "export of the tiny Gemma 3"; }
grep -q '"model_type": "gemma3_text"' "$WORK/hf/config.json" || fail "the export's config.json is not gemma3_text: $(cat "$WORK/hf/config.json")"
# transformers' next-token logits after each prompt (longer than the window) against `farthing
# generate --logits-out` on the checkpoint (the KV-cache decoder), both through the exported tokenizer.
for prompt in "Once upon a time there was a little girl" "The cat sat on the mat and" "Lily"; do
  "$FARTHING" generate --model "$CKPT" --tokenizer "$WORK/hf" --prompt "$prompt" --max-new-tokens 1 \
    --logits-out "$WORK/logits.f32" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; fail "farthing generate"; }
  python3 - "$WORK/hf" "$prompt" "$WORK/logits.f32" "$WORK/src" <<'PY' || fail "transformers' logits of the export differ from farthing's"
import sys, numpy as np, torch, transformers
hf, prompt, ours, src = sys.argv[1], sys.argv[2], np.fromfile(sys.argv[3], dtype="<f4"), sys.argv[4]
tok = transformers.AutoTokenizer.from_pretrained(hf)
model = transformers.AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32).eval()
assert type(model).__name__ == "Gemma3ForCausalLM", type(model).__name__
# Two small steps move the weights little: exported norm weights stay near the source's w (~0.1),
# far from 1 + w.
before = transformers.AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32).state_dict()
w = model.state_dict()["model.layers.0.post_attention_layernorm.weight"]
assert float((w - before["model.layers.0.post_attention_layernorm.weight"]).abs().max()) < 0.05, w
with torch.no_grad():
    ids = tok(prompt, return_tensors="pt").input_ids
    ref = model(ids).logits[0, -1].numpy()
diff = float(np.max(np.abs(ours - ref))) if ours.shape == ref.shape else float("inf")
print(f"{prompt!r} ({ids.shape[1]} tokens): max |farthing - transformers| = {diff:.3g} over {ref.size} logits")
sys.exit(0 if diff <= 1e-5 else 1)
PY
done

python3 - "$WORK/src/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["final_logit_softcapping"] = 30.0
json.dump(c, open(sys.argv[1], "w"))
PY
expect_error "a Gemma 3 config.json with final_logit_softcapping" "final_logit_softcapping must be null" -- \
  "$FARTHING" generate --model "$WORK/src" --tokenizer "$WORK/hf" --prompt "Lily" --max-new-tokens 1
# The export carries the model folder's tokenizer files as they are: its chat template renders in
# transformers as in jinja2.
check_export_chat_template "$WORK/hf" gemma3
echo "ok: tiny Gemma 3 trained, exported and reloaded by transformers"
