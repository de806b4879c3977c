#!/usr/bin/env bash
# test_data_preview.sh — `farthing data preview RECIPE` on a chat fine-tune of stories260K (a
# byte-level tokenizer.json written here: ids 0-255 bytes, 256 <s>, 257 </s>, 258 <|im_start|>,
# 259 <|im_end|>, inside the model's 512-token vocabulary, and the built-in chatml template): the
# first example rendered with exactly its assistant content and <|im_end|> between ⟦ ⟧, and the
# counts (documents, tokens: computed here from the bytes; packed as documents, padded, and as a
# stream with no padding). The data errors of
# `train` and `preview`, each one line writing nothing: a missing data.train or data.eval names
# the key and where it was set (recipe file:line:column or --set), an empty document and a
# document of one token name file:line; the shipped recipes' placeholder data.train is named as one; `tokenize --field messages` points to the preview; and the warning when one step
# takes more sequences than the training split holds.
# usage: test_data_preview.sh FARTHING SHARED_DIR SOURCE_DIR   (exit 77: skipped)
source "$3/tests/train/loop/train_test_common.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 writes this test's tokenizer.json and data"; exit 77; }

python3 - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
alphabet, extra = {}, 0
for b in range(256):
    if b in printable:
        alphabet[b] = b
    else:
        alphabet[b] = 256 + extra
        extra += 1
vocab = {chr(alphabet[b]): b for b in range(256)}
vocab["qz"] = 260  # the loader wants a merge; "qz" never occurs in the data
added = [{"id": 256 + i, "content": t, "special": True} for i, t in enumerate(["<s>", "</s>", "<|im_start|>", "<|im_end|>"])]
with open(os.path.join(work, "tokenizer.json"), "w") as f:
    json.dump({"model": {"type": "BPE", "vocab": vocab, "merges": ["q z"]},
               "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False}, "added_tokens": added}, f)
total = 0
with open(os.path.join(work, "chat.jsonl"), "w") as f:
    for i in range(40):
        user, reply = f"What is {i} plus {i}?", f"It is {2 * i}."
        f.write(json.dumps({"messages": [{"role": "user", "content": user},
                                         {"role": "assistant", "content": reply}]}) + "\n")
        # <s> <|im_start|>user\n USER <|im_end|>\n <|im_start|>assistant\n REPLY <|im_end|>\n </s>
        total += 1 + 1 + len("user\n") + len(user) + 1 + 1 + 1 + len("assistant\n") + len(reply) + 1 + 1 + 1
with open(os.path.join(work, "expected_tokens"), "w") as f:
    f.write(str(total))
with open(os.path.join(work, "empty.jsonl"), "w") as f:
    f.write(json.dumps({"text": "fine"}) + "\n" + json.dumps({"text": ""}) + "\n")
with open(os.path.join(work, "one_token.jsonl"), "w") as f:
    f.write(json.dumps({"text": "fine"}) + "\n\n" + json.dumps({"text": "a"}) + "\n")
PY
PREVIEW_SMALL=("${SMALL[@]:0:${#SMALL[@]}-1}")  # SMALL less its final --quiet, a train option
CHAT=(--set "model.tokenizer=$WORK/tokenizer.json" --set "data.train=$WORK/chat.jsonl" --set data.chat_template=chatml
      --set data.seq_len=64 --set train.micro_batch=2)

"$FARTHING" data preview "$RECIPE" "${PREVIEW_SMALL[@]}" "${CHAT[@]}" --examples 2 >"$WORK/preview" 2>&1 \
  || { cat "$WORK/preview"; fail "data preview exited non-zero"; }
grep -qF "<|im_start|>assistant" "$WORK/preview" || fail "the rendered chat lacks the assistant header: $(head -20 "$WORK/preview")"
grep -qF "⟦It is 0.<|im_end|>⟧" "$WORK/preview" || fail "the first reply is not marked exactly as trained: $(head -20 "$WORK/preview")"
grep -qF "$WORK/chat.jsonl:1 (messages): 48 tokens, 9 trained" "$WORK/preview" \
  || fail "example 1's counts: $(grep -- '^---' "$WORK/preview" | head -1)"
[ "$(grep -c '^--- ' "$WORK/preview")" -eq 2 ] || fail "--examples 2 rendered $(grep -c '^--- ' "$WORK/preview")"
grep -qE "^  documents +40 \(messages\)" "$WORK/preview" || fail "documents: $(grep documents "$WORK/preview")"
grep -qE "^  tokens +$(cat "$WORK/expected_tokens") " "$WORK/preview" \
  || fail "tokens (expected $(cat "$WORK/expected_tokens")): $(grep '^  tokens' "$WORK/preview")"
# Chat data packs as documents: 44-50 token chats, one to a sequence of 64, the rest padding.
grep -qE "^  packing +documents: each document sees only itself" "$WORK/preview" \
  || fail "packing: $(grep packing "$WORK/preview")"
grep -qE "^  padding +[1-9][0-9]* tokens, [0-9.]+% of the sequences' 2560 \(no loss, no attention\)" "$WORK/preview" \
  || fail "padding: $(grep padding "$WORK/preview")"
grep -qE "^  documents cut +0 of 40 longer than a sequence" "$WORK/preview" || fail "documents cut: $(grep cut "$WORK/preview")"
# As a stream, the sequences are back to back and documents straddle their boundaries.
"$FARTHING" data preview "$RECIPE" "${PREVIEW_SMALL[@]}" "${CHAT[@]}" --set data.packing=stream >"$WORK/preview_stream" 2>&1 \
  || { cat "$WORK/preview_stream"; fail "data preview (stream) exited non-zero"; }
grep -qE "^  padding +0 tokens" "$WORK/preview_stream" || fail "padding: $(grep padding "$WORK/preview_stream")"
grep -qE "^  documents cut +[1-9][0-9]* of 40 start in one sequence" "$WORK/preview_stream" \
  || fail "documents cut: $(grep cut "$WORK/preview_stream")"
grep -qE "^  chat template +chatml" "$WORK/preview" || fail "chat template: $(grep 'chat template' "$WORK/preview")"
echo "ok: preview: $(grep -E '^  (tokens|trained tokens|documents cut)' "$WORK/preview" | tr -s ' ' | tr '\n' ';')"

# tokenize --field messages points to the preview instead of failing on a list.
expect_error "tokenize --field messages" "chat.jsonl:1 field 'messages' is a list (chat messages?)" "farthing data preview RECIPE" -- \
  "$FARTHING" tokenize --tokenizer "$WORK/tokenizer.json" "$WORK/chat.jsonl" --field messages -o "$WORK/chat.bin"
[ ! -e "$WORK/chat.bin" ] || fail "a refused tokenize wrote $WORK/chat.bin"

# A missing data file: the key and where it was set, from a recipe file and from --set; nothing written.
sed "s|^  train: .*|  train: $WORK/nope.jsonl|" "$RECIPE" >"$WORK/typo.yaml"
line=$(grep -n "^  train: $WORK/nope.jsonl" "$WORK/typo.yaml" | cut -d: -f1)
expect_error "train with a missing data.train (recipe)" "data.train at $WORK/typo.yaml:$line:" "is '$WORK/nope.jsonl', which does not exist" -- \
  "$FARTHING" train "$WORK/typo.yaml" --set "checkpoint.run_dir=$WORK/run_typo" --quiet
[ ! -e "$WORK/run_typo" ] || fail "a refused train wrote $WORK/run_typo"
expect_error "preview with a missing data.train (recipe)" "data.train at $WORK/typo.yaml:$line:" "which does not exist" -- \
  "$FARTHING" data preview "$WORK/typo.yaml"
expect_error "train with a missing data.eval (--set)" "data.eval at --set data.eval=$WORK/nope_eval.jsonl" "which does not exist" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "data.eval=$WORK/nope_eval.jsonl" --set "checkpoint.run_dir=$WORK/run_eval"
[ ! -e "$WORK/run_eval" ] || fail "a refused train wrote $WORK/run_eval"
# A shipped recipe's data.train is a placeholder: train names it and the key, and writes nothing.
placeholder=$(grep -m1 '^  train: ' "$SRC/recipes/gpt2/124m_full_single_device.yaml" | sed 's/^  train: //; s/ *#.*//')
[ "$placeholder" = '"<your data>"' ] || fail "recipes/gpt2/124m_full_single_device.yaml's data.train is $placeholder, not the placeholder"
sed "s|^  train: .*|  train: $placeholder|" "$RECIPE" >"$WORK/placeholder.yaml"
expect_error "train with the recipes' placeholder data.train" "is the placeholder '<your data>'" "--set data.train=PATH" -- \
  "$FARTHING" train "$WORK/placeholder.yaml" --set "checkpoint.run_dir=$WORK/run_placeholder" --quiet
[ ! -e "$WORK/run_placeholder" ] || fail "a refused train wrote $WORK/run_placeholder"
# An empty document: file:line.
expect_error "train with an empty document" "$WORK/empty.jsonl:2: has an empty \"text\": an empty document" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "data.train=$WORK/empty.jsonl" --set "checkpoint.run_dir=$WORK/run_empty"
[ ! -e "$WORK/run_empty" ] || fail "a refused train wrote $WORK/run_empty"
# A document of one token (no BOS/EOS around it) under documents packing: file:line from train
# and from the preview alike (line 3: a blank line is skipped but counted).
ONE=(--set "model.tokenizer=$WORK/tokenizer.json" --set "data.train=$WORK/one_token.jsonl" --set data.packing=documents
     --set data.add_bos=false --set data.add_eos=false --set data.seq_len=16)
expect_error "train with a one-token document" "$WORK/one_token.jsonl:3: a document of 1 token(s) has nothing to predict" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${ONE[@]}" --set "checkpoint.run_dir=$WORK/run_one"
[ ! -e "$WORK/run_one" ] || fail "a refused train wrote $WORK/run_one"
expect_error "preview with a one-token document" "$WORK/one_token.jsonl:3: a document of 1 token(s) has nothing to predict" -- \
  "$FARTHING" data preview "$RECIPE" "${PREVIEW_SMALL[@]}" "${ONE[@]}" --examples 0
out="$("$FARTHING" data preview "$RECIPE" "${PREVIEW_SMALL[@]}" "${ONE[@]}" --examples 0 2>&1)" || true
[ "$(wc -l <<<"$out")" -eq 1 ] || fail "the preview's one-token error is not one line: $out"
out="$("$FARTHING" train "$WORK/typo.yaml" --quiet 2>&1)" || true
[ "$(wc -l <<<"$out")" -eq 1 ] || fail "the missing-file error is not one line: $out"

# One step larger than the training split: trains, with a warning naming the numbers.
"$FARTHING" train "$RECIPE" "${SMALL[@]}" "${CHAT[@]}" --set data.seq_len=256 --set train.micro_batch=16 \
  --set train.steps=1 --set schedule.warmup_steps=0 --set "checkpoint.run_dir=$WORK/run_big" >"$WORK/big" 2>&1 \
  || { cat "$WORK/big"; fail "the oversized step did not train"; }
grep -qF "warning: one step takes 16 sequences" "$WORK/big" || fail "no warning for a step larger than the split: $(cat "$WORK/big")"
echo "ok: $(grep -o 'warning: one step takes[^:]*' "$WORK/big")"
