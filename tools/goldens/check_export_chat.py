#!/usr/bin/env python3
"""check_export_chat.py — transformers' verdict on a `farthing export` that should chat.

    python3 tools/goldens/check_export_chat.py EXPORT_DIR [--source SOURCE_DIR] [--prompt TEXT]
                                               [--max-new-tokens N]

Loads EXPORT_DIR with AutoTokenizer and AutoModelForCausalLM, as a user of the export would, and
checks (a line per check, exit 1 on a failure, 77 when transformers or torch is absent):
  - tokenizer.chat_template is set (apply_chat_template fails without one);
  - the tokenizer's eos_token_id is config.json's and generation_config.json's eos_token_id (one of
    them, where generation_config lists several), so generate() stops where the template ends a turn;
  - with --source: config.json's bos/eos ids and the tokenizer's chat template and eos token are the
    source folder's;
  - apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True) renders,
    and generate() continues it greedily; the reply is printed.
Used by tests/cli/test_export_chat.sh on a fine-tuned stories260K, and by hand on SmolLM2-135M
(the transcript in the issue's report).
"""
import argparse
import json
import os
import sys

try:
    import torch
    import transformers
except ImportError as e:  # the goldens need them; farthing never does
    print(f"SKIP: {e.name} is not installed (pip install torch transformers)")
    sys.exit(77)


def ids_of(value):
    return set(value) if isinstance(value, list) else {value}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("export_dir")
    ap.add_argument("--source")
    ap.add_argument("--prompt", default="Tell me a story.")
    ap.add_argument("--max-new-tokens", type=int, default=16)
    args = ap.parse_args()
    failures = []

    def check(ok, what):
        print(("ok: " if ok else "FAIL: ") + what)
        if not ok:
            failures.append(what)

    tok = transformers.AutoTokenizer.from_pretrained(args.export_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(args.export_dir, dtype=torch.float32).eval()
    config = json.load(open(os.path.join(args.export_dir, "config.json")))
    generation = json.load(open(os.path.join(args.export_dir, "generation_config.json")))
    check(bool(tok.chat_template), "tokenizer.chat_template is set")
    check(tok.eos_token_id is not None and tok.eos_token_id in ids_of(config.get("eos_token_id")),
          f"tokenizer eos {tok.eos_token!r} (id {tok.eos_token_id}) is config.json's eos_token_id "
          f"{config.get('eos_token_id')}")
    check(tok.eos_token_id in ids_of(generation.get("eos_token_id")),
          f"tokenizer eos id {tok.eos_token_id} is among generation_config.json's eos_token_id "
          f"{generation.get('eos_token_id')}")
    if args.source:
        source_tok = transformers.AutoTokenizer.from_pretrained(args.source)
        source_config = json.load(open(os.path.join(args.source, "config.json")))
        for key in ("bos_token_id", "eos_token_id"):
            check(config.get(key) == source_config.get(key),
                  f"config.json {key} {config.get(key)} is the source's {source_config.get(key)}")
        check(tok.chat_template == source_tok.chat_template, "the chat template is the source's")
        check(tok.eos_token == source_tok.eos_token, f"eos token {tok.eos_token!r} is the source's")

    messages = [{"role": "user", "content": args.prompt}]
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    print(f"prompt as rendered: {text!r}")
    encoded = tok(text, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**encoded, max_new_tokens=args.max_new_tokens, do_sample=False)
    new = out[0, encoded["input_ids"].shape[1]:]
    check(0 < len(new) <= args.max_new_tokens, f"generate() gave {len(new)} new token(s)")
    print(f"reply: {tok.decode(new, skip_special_tokens=False)!r}")
    stopped = len(new) > 0 and int(new[-1]) in ids_of(generation.get("eos_token_id"))
    print(f"stopped at eos: {'yes' if stopped else 'no (reached --max-new-tokens)'}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
