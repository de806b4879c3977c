#!/usr/bin/env bash
# test_train_chat_template.sh — data.chat_template given inline with --set: a tiny chat
# fine-tune of stories260K through `farthing train`, its JSONL "messages" rendered by the Jinja
# interpreter (a Phi-3-style template no built-in format recognises, ending turns with <|end|>),
# trains and records the template in the run's recipe.yaml; a malformed or unsupported inline
# template fails at load with a non-zero exit and one message naming data.chat_template, the line
# and column, and what was expected. The tokenizer is a byte-level tokenizer.json written here
# (ids 0-255 bytes, 256 <s>, 257 </s>, 258 <|end|>, 259 "is": inside stories260K's 512-token
# vocabulary).
# usage: test_train_chat_template.sh FARTHING SHARED_DIR SOURCE_DIR   (exit 77: skipped)
source "$3/tests/train/loop/train_test_common.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 writes this test's tokenizer.json and data"; exit 77; }

python3 - "$WORK" <<'EOF'
import json, os, sys
work = sys.argv[1]
# GPT-2's byte-level alphabet: byte b is written as chr(alphabet[b]).
printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
alphabet, extra = {}, 0
for b in range(256):
    if b in printable:
        alphabet[b] = b
    else:
        alphabet[b] = 256 + extra
        extra += 1
vocab = {chr(alphabet[b]): b for b in range(256)}
vocab["is"] = 259  # one merge: the loader wants a BPE model to have some
added = [{"id": 256 + i, "content": t, "special": True} for i, t in enumerate(["<s>", "</s>", "<|end|>"])]
with open(os.path.join(work, "tokenizer.json"), "w") as f:
    json.dump({"model": {"type": "BPE", "vocab": vocab, "merges": ["i s"]},
               "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False}, "added_tokens": added}, f)
with open(os.path.join(work, "chat.jsonl"), "w") as f:
    for i in range(200):
        f.write(json.dumps({"messages": [{"role": "user", "content": f"What is {i} plus {i}?"},
                                         {"role": "assistant", "content": f"It is {2 * i}."}]}) + "\n")
EOF

CHAT=(--set "model.tokenizer=$WORK/tokenizer.json" --set "data.train=$WORK/chat.jsonl" --set train.steps=3)
# YAML double quotes around the template: "\n" there is a newline inside the Jinja string literal.
TEMPLATE="{% for m in messages %}{{ '<|' + m.role + '|>\n' + m.content + '<|end|>\n' }}{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
"$FARTHING" train "$RECIPE" "${SMALL[@]}" "${CHAT[@]}" --set "checkpoint.run_dir=$WORK/run" \
  --set "data.chat_template=\"$TEMPLATE\"" > "$WORK/train.log" 2>&1 || { cat "$WORK/train.log"; fail "chat training with an inline template failed"; }
[ "$(losses "$WORK/run/metrics.jsonl" | wc -l)" -eq 3 ] || { cat "$WORK/train.log"; fail "expected 3 training records"; }
grep -qF "<|end|>" "$WORK/run/recipe.yaml" || fail "the run's recipe.yaml does not record the inline template"
echo "ok: 3 steps of chat training with an inline template"

expect_error "unsupported construct in an inline template" "data.chat_template" "line 1 column 39" "the filter 'upper'" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${CHAT[@]}" --set "checkpoint.run_dir=$WORK/bad1" \
  --set 'data.chat_template="{% for m in messages %}{{ m.content | upper }}{% endfor %}"'
expect_error "unclosed block in an inline template" "data.chat_template" "line 1 column 4" "expected {% endfor %}" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${CHAT[@]}" --set "checkpoint.run_dir=$WORK/bad2" \
  --set 'data.chat_template="{% for m in messages %}{{ m.content }}"'
expect_error "no end-of-turn token after the content" "data.chat_template" "does not start with a special token" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${CHAT[@]}" --set "checkpoint.run_dir=$WORK/bad3" \
  --set 'data.chat_template="{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"'
echo "PASS"
