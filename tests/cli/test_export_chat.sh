#!/usr/bin/env bash
# test_export_chat.sh — an export that chats. stories260K as a Hugging Face folder whose
# tokenizer_config.json carries a chat template and whose generation_config.json has settings of
# its own is fine-tuned for 2 steps; `farthing export` of the run, given as the run directory, as
# `--from latest --recipe`, and as the checkpoint with --tokenizer FOLDER, carries that
# tokenizer_config.json and generation_config.json byte for byte and config.json's bos/eos ids;
# where transformers is installed, tools/goldens/check_export_chat.py loads the export, applies
# its chat template and generates. A --from it cannot read is one error line naming the forms it
# takes, and writes nothing.
# usage: test_export_chat.sh FARTHING SHARED_DIR SOURCE_DIR   (exit 77: skipped)
source "$3/tests/train/loop/train_test_common.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 edits this test's tokenizer_config.json"; exit 77; }

"$FARTHING" export --from "$SHARED/models/stories260K/stories260K.bin" --out "$WORK/src" \
  --tokenizer "$SHARED/models/stories260K/tok512.bin" 2>"$WORK/err" || { cat "$WORK/err"; fail "export to a folder"; }
python3 - "$WORK/src" <<'PY'
import json, os, sys
src = sys.argv[1]
path = os.path.join(src, "tokenizer_config.json")
config = json.load(open(path))
config["chat_template"] = ("{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '</s>' }}{% endfor %}"
                           "{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}")
json.dump(config, open(path, "w"), indent=2)
json.dump({"bos_token_id": 1, "eos_token_id": 2, "max_new_tokens": 24, "repetition_penalty": 1.1},
          open(os.path.join(src, "generation_config.json"), "w"), indent=2)
PY
# The trainer finds tokenizer.json beside model.path (model.tokenizer cleared).
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "model.path=$WORK/src" --set model.tokenizer= \
  --set train.steps=2 --set schedule.warmup_steps=1 --set "checkpoint.run_dir=$WORK/run" >"$WORK/train" 2>&1 \
  || { cat "$WORK/train"; fail "2 steps from the folder"; }

check_export() {  # DIR: what the source folder says, carried over
  cmp -s "$WORK/src/tokenizer_config.json" "$1/tokenizer_config.json" || fail "$1/tokenizer_config.json is not the source's"
  cmp -s "$WORK/src/generation_config.json" "$1/generation_config.json" || fail "$1/generation_config.json is not the source's"
  python3 - "$WORK/src/config.json" "$1/config.json" <<'PY' || fail "$1/config.json's special ids are not the source's"
import json, sys
src, out = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(any(src.get(k) != out.get(k) for k in ("bos_token_id", "eos_token_id")) or out.get("eos_token_id") is None)
PY
}
"$FARTHING" export --from "$WORK/run" --out "$WORK/hf_run" 2>"$WORK/err" || { cat "$WORK/err"; fail "export --from RUN_DIR"; }
check_export "$WORK/hf_run"
grep -qF "step_00000002.h5" "$WORK/err" || fail "export --from RUN_DIR did not take the latest checkpoint: $(cat "$WORK/err")"
echo "ok: export --from RUN_DIR: the source's tokenizer_config.json (chat template, eos), generation_config.json, ids"
"$FARTHING" export --from latest --recipe "$WORK/run/recipe.yaml" --out "$WORK/hf_latest" 2>"$WORK/err" \
  || { cat "$WORK/err"; fail "export --from latest --recipe"; }
check_export "$WORK/hf_latest"
echo "ok: export --from latest --recipe RECIPE: the same"

# The issue's attempt: the checkpoint file itself with --tokenizer naming the model folder.
"$FARTHING" export --from "$WORK/run/checkpoints/step_00000002.h5" --tokenizer "$WORK/src" --out "$WORK/hf_tok" \
  2>"$WORK/err" || { cat "$WORK/err"; fail "export --from CKPT --tokenizer FOLDER"; }
check_export "$WORK/hf_tok"
echo "ok: export --from CKPT --tokenizer FOLDER: the same"

expect_error "--from a path that does not exist" "does not exist; expected a run directory" "a llama2.c .bin" -- \
  "$FARTHING" export --from "$WORK/nothing" --out "$WORK/bad"
expect_error "--from a file no reader takes" "cannot read" "as llama2.c .bin" "a .gguf, or a llama2.c .bin" -- \
  "$FARTHING" export --from "$WORK/train" --out "$WORK/bad"
expect_error "--from latest without a recipe" "--from latest: the newest checkpoint of which run?" -- \
  "$FARTHING" export --from latest --out "$WORK/bad"
[ ! -e "$WORK/bad" ] || fail "a refused export wrote $WORK/bad"

if python3 -c "import torch, transformers" 2>/dev/null; then
  python3 "$SRC/tools/goldens/check_export_chat.py" "$WORK/hf_run" --source "$WORK/src" --prompt "Once upon a time" \
    >"$WORK/golden" 2>&1 || { cat "$WORK/golden"; fail "transformers cannot chat with the export"; }
  echo "ok: transformers: $(grep -c '^ok:' "$WORK/golden") checks; $(grep '^reply:' "$WORK/golden")"
else
  echo "note: transformers or torch absent: tools/goldens/check_export_chat.py not run"
fi
