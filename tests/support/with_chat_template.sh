# with_chat_template.sh — sourced by the export tests: gives a Hugging Face model folder the
# tokenizer files a user's folder has, with a chat template, so that `farthing train` reads the
# tokenizer from the model folder and `farthing export` of its checkpoint carries them back out.
#   add_tokenizer_with_template MODEL_DIR TOKENIZER TEMPLATE_NAME
# writes MODEL_DIR/tokenizer.json and tokenizer_config.json: TOKENIZER's files as `farthing export`
# writes them, plus "chat_template": the template TEMPLATE_NAME of tests/data/tokenizers/
# jinja_goldens.json (the texts farthing's Jinja is checked against jinja2 with).
#   check_export_chat_template EXPORT_DIR TEMPLATE_NAME
# transformers loads EXPORT_DIR's tokenizer and its apply_chat_template renders a conversation
# exactly as jinja2 renders that template; the eos is the source's.
# Needs FARTHING, WORK, SRC (train_test_common.sh) and fail().
add_tokenizer_with_template() {
  local model_dir="$1" tokenizer="$2" name="$3"
  "$FARTHING" export --from "$model_dir" --out "$WORK/tokenizer_files" --tokenizer "$tokenizer" >/dev/null 2>"$WORK/err" \
    || { cat "$WORK/err"; fail "writing the tokenizer files of $tokenizer"; }
  python3 - "$WORK/tokenizer_files" "$model_dir" "$SRC/tests/data/tokenizers/jinja_goldens.json" "$name" <<'PY' \
    || fail "adding the $name chat template to $model_dir"
import json, shutil, sys
files, model_dir, goldens, name = sys.argv[1:5]
text = next(t["text"] for t in json.load(open(goldens))["templates"] if t["name"] == name)
config = json.load(open(f"{files}/tokenizer_config.json"))
config["chat_template"] = text
json.dump(config, open(f"{model_dir}/tokenizer_config.json", "w"), indent=2)
shutil.copy(f"{files}/tokenizer.json", f"{model_dir}/tokenizer.json")
PY
}

check_export_chat_template() {
  local export_dir="$1" name="$2"
  python3 - "$export_dir" "$SRC/tests/data/tokenizers/jinja_goldens.json" "$name" <<'PY' \
    || fail "the export's chat template ($name) does not render in transformers as in jinja2"
import json, sys, jinja2, transformers
export_dir, goldens, name = sys.argv[1:4]
text = next(t["text"] for t in json.load(open(goldens))["templates"] if t["name"] == name)
tok = transformers.AutoTokenizer.from_pretrained(export_dir)
assert tok.chat_template == text, "the export's tokenizer has no chat template, or another one"
messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye"}]
ours = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
env.globals["raise_exception"] = lambda m: (_ for _ in ()).throw(Exception(m))
ref = env.from_string(text).render(messages=messages, add_generation_prompt=True, bos_token=tok.bos_token,
                                   eos_token=tok.eos_token)
assert ours == ref, f"transformers rendered {ours!r}, jinja2 {ref!r}"
print(f"the export's {name} chat template in transformers: {ours!r}")
PY
}
