#!/usr/bin/env bash
# test_init.sh — `farthing init MODEL_FILE` (the guided first run) on stories260K: the
# recipe it writes parses, fits the budget by `farthing plan`'s own check, trains; a smaller
# budget moves down the ladder (8-bit moments, then no master); a budget nothing fits is exit 1
# naming it; chat data is read: the template found, BOS/EOS off with the reasons, seq_len, the
# eval share and the step sized to it, counting the sequences as the run packs them (chat data as
# documents: init's count is the one `data preview` and the run print), and a warning when one
# step outgrows the training split;
# without data it says so; bad input (missing model, missing --data, existing --out) is one
# error line naming the path.
# usage: test_init.sh FARTHING_BINARY SHARED_DIR     (exit 77: skipped, ../shared absent)
set -u
farthing="$1"
shared="$2"
dir="$shared/models/stories260K"
[ -f "$dir/stories260K.bin" ] || { echo "SKIP: $dir/stories260K.bin absent (set FARTHING_SHARED_DIR)"; exit 77; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMP_WAIT_POLICY=passive
fail() { echo "FAIL: $*"; exit 1; }
model=(init "$dir/stories260K.bin" --tokenizer "$dir/tok512.bin" --data "$shared/text/tinyshakespeare.txt")

# Roomy budget: the comfortable rung; plan agrees that it fits; it trains.
"$farthing" "${model[@]}" --budget-gb 1 --out "$tmp/roomy.yaml" 2> "$tmp/err" || { cat "$tmp/err"; fail "init exited non-zero"; }
grep -q "^  state: f32" "$tmp/roomy.yaml" || fail "1 GiB should keep fp32 AdamW state: $(grep state: "$tmp/roomy.yaml")"
grep -q "^  master: f32" "$tmp/roomy.yaml" || fail "1 GiB should keep the fp32 master"
grep -q "^  packing: stream  # " "$tmp/roomy.yaml" || fail "plain text should pack as a stream: $(grep packing: "$tmp/roomy.yaml")"
head -1 "$tmp/roomy.yaml" | grep -qF "farthing train $tmp/roomy.yaml" || fail "first line is not the command: $(head -1 "$tmp/roomy.yaml")"
[ "$(grep -cE '^  [a-z_0-9]+: .*  # ' "$tmp/roomy.yaml")" -eq "$(grep -cE '^  [a-z_0-9]+:' "$tmp/roomy.yaml")" ] \
  || fail "a key without a comment: $(grep -E '^  [a-z_0-9]+:' "$tmp/roomy.yaml" | grep -v '  # ')"
"$farthing" plan "$tmp/roomy.yaml" --budget-gb 1 >/dev/null || fail "plan says the roomy recipe does not fit 1 GiB"
"$farthing" train "$tmp/roomy.yaml" --set train.steps=2 --set schedule.warmup_steps=1 --set data.seq_len=64 --set train.micro_batch=2 \
  --set "checkpoint.run_dir=$tmp/run" --quiet > "$tmp/train" 2>&1 || { cat "$tmp/train"; fail "the init recipe does not train"; }
echo "ok: 1 GiB -> fp32 state + master, plan agrees, trains: $(tail -1 "$tmp/train")"

# 30 MiB: down the ladder, still within plan's own budget check.
"$farthing" "${model[@]}" --budget-gb 0.03 > "$tmp/small.yaml" 2>/dev/null || fail "init at 0.03 GiB exited non-zero"
grep -q "^  state: 8bit" "$tmp/small.yaml" || fail "0.03 GiB should choose 8-bit moments"
sed -i "s|RECIPE.yaml|$tmp/small.yaml|" "$tmp/small.yaml"
"$farthing" plan "$tmp/small.yaml" --budget-gb 0.03 >/dev/null || fail "plan says the 0.03 GiB recipe does not fit"
echo "ok: 0.03 GiB -> $(sed -n 3p "$tmp/small.yaml" | cut -d: -f2-)"

out="$("$farthing" "${model[@]}" --budget-gb 0.001 2>&1 >/dev/null)" && fail "a 1 MiB budget was accepted"
grep -qF "even the most frugal settings need" <<<"$out" || fail "unexpected message: $out"
echo "ok: 1 MiB -> exit 1: $out"

# Chat data: init reads it. A byte-level tokenizer.json (ids 0-255 bytes, 256 <s>, 257 </s>,
# 258 <|im_start|>, 259 <|im_end|>: inside stories260K's vocabulary) with a ChatML template in the
# tokenizer_config.json beside it, and 40 conversations of 44-50 tokens: 90% fit 64 tokens; packed
# as documents, one conversation a sequence of 64 (two do not fit), 40 sequences where one stream
# would make 30; 2 held out (5%), 8 sequences a step (a quarter of the 38, at most 8).
if command -v python3 >/dev/null; then
  python3 - "$tmp" <<'PY'
import json, os, sys
tmp = sys.argv[1]
printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
alphabet, extra = {}, 0
for b in range(256):
    alphabet[b] = b if b in printable else 256 + extra
    extra += b not in printable
vocab = {chr(alphabet[b]): b for b in range(256)}
vocab["qz"] = 260
added = [{"id": 256 + i, "content": t, "special": True} for i, t in enumerate(["<s>", "</s>", "<|im_start|>", "<|im_end|>"])]
json.dump({"model": {"type": "BPE", "vocab": vocab, "merges": ["q z"]},
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False}, "added_tokens": added},
          open(os.path.join(tmp, "tokenizer.json"), "w"))
chatml = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
json.dump({"chat_template": chatml, "eos_token": "<|im_end|>"}, open(os.path.join(tmp, "tokenizer_config.json"), "w"))
with open(os.path.join(tmp, "chat.jsonl"), "w") as f:
    for i in range(40):
        f.write(json.dumps({"messages": [{"role": "user", "content": f"What is {i} plus {i}?"},
                                         {"role": "assistant", "content": f"It is {2 * i}."}]}) + "\n")
with open(os.path.join(tmp, "qa.jsonl"), "w") as f:
    for i in range(40):
        f.write(json.dumps({"prompt": f"What is {i} plus {i}? ", "response": f"It is {2 * i}."}) + "\n")
with open(os.path.join(tmp, "tiny.jsonl"), "w") as f:
    f.write(json.dumps({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]}) + "\n")
with open(os.path.join(tmp, "tiny_text.jsonl"), "w") as f:
    f.write(json.dumps({"text": "Once upon a time."}) + "\n")
PY
  chat=(init "$dir/stories260K.bin" --tokenizer "$tmp/tokenizer.json" --budget-gb 1)
  "$farthing" "${chat[@]}" --data "$tmp/chat.jsonl" --out "$tmp/chat.yaml" 2>"$tmp/err" || { cat "$tmp/err"; fail "init on chat data"; }
  grep -q '^  chat_template: "chatml"  # the template in tokenizer_config.json beside tokenizer.json' "$tmp/chat.yaml" \
    || fail "chat_template: $(grep chat_template: "$tmp/chat.yaml")"
  grep -q "^  add_bos: false  # the template opens each conversation itself" "$tmp/chat.yaml" || fail "add_bos: $(grep add_bos: "$tmp/chat.yaml")"
  grep -q "^  add_eos: false  # each assistant turn ends with <|im_end|>, which is trained" "$tmp/chat.yaml" \
    || fail "add_eos: $(grep add_eos: "$tmp/chat.yaml")"
  grep -q "^  seq_len: 64  # " "$tmp/chat.yaml" || fail "seq_len for 44-50 token chats: $(grep seq_len: "$tmp/chat.yaml")"
  grep -q "^  packing: documents  # each example sees only itself" "$tmp/chat.yaml" \
    || fail "packing for chat data: $(grep packing: "$tmp/chat.yaml")"
  grep -q "^  eval_fraction: 0.05  # " "$tmp/chat.yaml" || fail "eval_fraction: $(grep eval_fraction: "$tmp/chat.yaml")"
  grep -q "^  micro_batch: 8  # " "$tmp/chat.yaml" && grep -q "^  grad_accum: 1  # " "$tmp/chat.yaml" \
    || fail "8 sequences a step: $(grep -E 'micro_batch:|grad_accum:' "$tmp/chat.yaml" | tr '\n' ' ')"
  grep -qF "seq_len 64 packs 40 sequence(s), 38 to train on, 2 held out." "$tmp/chat.yaml" \
    || fail "init's count is not the documents packing's: $(sed -n 5p "$tmp/chat.yaml")"
  grep -q "^# Data: $tmp/chat.jsonl, chat; 40 document(s)" "$tmp/chat.yaml" || fail "no Data: line: $(sed -n 5p "$tmp/chat.yaml")"
  ! grep -qi "warning" "$tmp/chat.yaml" "$tmp/err" || fail "a warning for data that fits: $(grep -i warning "$tmp/err")"
  "$farthing" train "$tmp/chat.yaml" --set train.steps=2 --set schedule.warmup_steps=0 --set "checkpoint.run_dir=$tmp/chat_run" \
    >"$tmp/train" 2>&1 || { cat "$tmp/train"; fail "the chat recipe does not train"; }
  # The same count from the preview and from the run, read off their own lines.
  "$farthing" data preview "$tmp/chat.yaml" --examples 0 >"$tmp/preview" 2>&1 || { cat "$tmp/preview"; fail "preview of the init recipe"; }
  init_count=$(sed -nE 's/.*packs ([0-9]+) sequence\(s\), ([0-9]+) to train on, ([0-9]+) held out.*/\1 \2 \3/p' "$tmp/chat.yaml")
  preview_count=$(sed -nE 's/^  sequences +([0-9]+) of seq_len 64: ([0-9]+) to train on, ([0-9]+) held out.*/\1 \2 \3/p' "$tmp/preview")
  run_count=$(sed -nE 's/.*document\(s\) into ([0-9]+) sequence\(s\) of 64 tokens.*/\1/p' "$tmp/train")
  [ -n "$init_count" ] && [ "$init_count" = "$preview_count" ] && [ "${init_count%% *}" = "$run_count" ] \
    || fail "sequences (all, train, held out): init '$init_count', preview '$preview_count', run '$run_count'"
  echo "ok: init, preview and the run pack $init_count sequences (all, train, held out)"
  echo "ok: chat data -> $(grep -E '^  (chat_template|add_bos|add_eos|seq_len|micro_batch|steps):' "$tmp/chat.yaml" | cut -d'#' -f1 | tr -s ' ' | tr '\n' ';'); trains"
  # Prompt/response data: the EOS after each response is trained; the template found is named.
  "$farthing" "${chat[@]}" --data "$tmp/qa.jsonl" >"$tmp/qa.yaml" 2>"$tmp/err" || { cat "$tmp/err"; fail "init on prompt/response data"; }
  grep -q "^  add_eos: true  # EOS after each response is trained" "$tmp/qa.yaml" || fail "prompt/response add_eos: $(grep add_eos: "$tmp/qa.yaml")"
  grep -q "^  add_bos: false  # the tokenizer adds no BOS when it encodes" "$tmp/qa.yaml" || fail "prompt/response add_bos: $(grep add_bos: "$tmp/qa.yaml")"
  grep -q '^  chat_template: "chatml"  # the template in .*; prompt/response lines are joined as they are' "$tmp/qa.yaml" \
    || fail "prompt/response chat_template: $(grep chat_template: "$tmp/qa.yaml")"
  echo "ok: prompt/response data -> $(grep -E '^  (chat_template|add_bos|add_eos):' "$tmp/qa.yaml" | cut -d'#' -f1 | tr -s ' ' | tr '\n' ';')"
  # One conversation of 25 tokens, packed as a document, fills one padded sequence: no warning.
  # The same few tokens as a stream pack into no sequence: the recipe is written, with a warning.
  "$farthing" "${chat[@]}" --data "$tmp/tiny.jsonl" >"$tmp/tiny.yaml" 2>"$tmp/err" || { cat "$tmp/err"; fail "init on tiny data"; }
  grep -qF "seq_len 32 packs 1 sequence(s), 1 to train on, 0 held out." "$tmp/err" && ! grep -qi warning "$tmp/err" \
    || fail "one conversation should pack into one sequence, unwarned: $(cat "$tmp/err")"
  "$farthing" "${chat[@]}" --data "$tmp/tiny_text.jsonl" >"$tmp/tiny_text.yaml" 2>"$tmp/err" || { cat "$tmp/err"; fail "init on tiny text"; }
  grep -qF "warning: one step takes 1 sequences of 32 tokens, more than the 0 the training split holds" "$tmp/err" \
    || fail "no warning for a step larger than the split: $(cat "$tmp/err")"
  grep -qF "# WARNING: one step takes" "$tmp/tiny_text.yaml" || fail "the tiny recipe does not carry the warning"
  echo "ok: tiny data -> one padded sequence as a document; as a stream $(grep warning "$tmp/err")"
  out="$("$farthing" "${chat[@]}" --data "$tmp/absent.jsonl" --out "$tmp/absent.yaml" 2>&1)" && fail "a missing --data was accepted"
  grep -qF "init: --data '$tmp/absent.jsonl' does not exist" <<<"$out" && [ ! -e "$tmp/absent.yaml" ] || fail "unexpected: $out"
  echo "ok: missing --data refused: $out"
fi
"$farthing" init "$dir/stories260K.bin" --tokenizer "$dir/tok512.bin" --budget-gb 1 >"$tmp/blind.yaml" 2>/dev/null \
  || fail "init without data exited non-zero"
grep -q "^# No data read (data/train.txt is not there)" "$tmp/blind.yaml" || fail "no note on sizing without data: $(sed -n 5p "$tmp/blind.yaml")"

# Where it trains: auto picks cuda only with a GPU visible; cuda sizes to the GPU's free memory,
# and without a GPU needs --budget-gb.
gpu_visible=0
"$farthing" info 2>/dev/null | grep -qF "devices visible: yes" && gpu_visible=1
"$farthing" "${model[@]}" --budget-gb 1 --device auto > "$tmp/auto.yaml" 2>/dev/null || fail "init --device auto failed"
if [ "$gpu_visible" -eq 0 ]; then
  grep -q "^  device: cpu  # " "$tmp/auto.yaml" || fail "--device auto without a GPU should write cpu: $(grep device: "$tmp/auto.yaml")"
  out="$("$farthing" "${model[@]}" --device cuda 2>&1 >/dev/null)" && fail "--device cuda without a GPU or budget was accepted"
  grep -qF "no CUDA device is visible" <<<"$out" && grep -qF -- "--budget-gb" <<<"$out" || fail "unexpected message: $out"
  echo "ok: no GPU: --device auto -> cpu; --device cuda without --budget-gb -> $out"
fi
"$farthing" "${model[@]}" --budget-gb 1 --device cuda > "$tmp/cuda.yaml" 2>/dev/null || fail "init --device cuda --budget-gb 1 failed"
grep -q "^  device: cuda  # .*the GPU's memory" "$tmp/cuda.yaml" || fail "--device cuda should write cuda: $(grep device: "$tmp/cuda.yaml")"
out="$("$farthing" "${model[@]}" --device tpu 2>&1)" && fail "--device tpu was accepted"
grep -qF "init: --device 'tpu'; expected cpu, cuda or auto" <<<"$out" || fail "unexpected message: $out"
echo "ok: --device cuda writes train.device: cuda; --device tpu refused"

out="$("$farthing" init "$tmp/nope.bin" 2>&1)" && fail "a missing model file was accepted"
grep -qF "model file '$tmp/nope.bin' does not exist" <<<"$out" || fail "unexpected message: $out"
out="$("$farthing" "${model[@]}" --out "$tmp/roomy.yaml" 2>&1)" && fail "init overwrote an existing recipe"
grep -qF "$tmp/roomy.yaml already exists" <<<"$out" || fail "unexpected message: $out"
echo "ok: missing model and existing --out refused naming the path"
