#!/usr/bin/env python3
"""make_seeds.py — writes the seed corpus of every fuzz target into tests/fuzz/corpus/<target>/.

Small synthetic files in each reader's format, written from the layouts the readers document
(framework/ckpt/*.h, framework/data/*.h): nothing is copied from ../shared or from real models.
The h5_checkpoint seeds come from farthing's own writer (h5_ckpt_driver), written separately:
    tests/fuzz/make_seeds.py [H5_SEED_DIR]   (copies *.h5 from H5_SEED_DIR when given)
Deterministic: rerunning gives the same bytes."""
import json, os, random, shutil, struct, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
rng = random.Random(20)


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def f32s(values):
    return b"".join(struct.pack("<f", v) for v in values)


def rand_f32(n):
    return [rng.uniform(-1, 1) for _ in range(n)]


# --- safetensors -------------------------------------------------------------------------
def safetensors(tensors):
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


put("safetensors", "f32_bf16_f16.safetensors", safetensors({
    "model.embed_tokens.weight": ("F32", [4, 3], f32s(rand_f32(12))),
    "model.norm.weight": ("BF16", [3], bytes([0x80, 0x3f] * 3)),
    "lm_head.weight": ("F16", [2, 3], bytes([0x00, 0x3c] * 6)),
}))
put("safetensors", "scalar_and_empty.safetensors", safetensors({
    "scalar": ("F32", [], f32s([1.5])), "empty": ("F32", [0, 4], b""),
}))

# --- GGUF --------------------------------------------------------------------------------
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


class Gguf:
    def __init__(self):
        self.kv, self.n_kv, self.tensors = b"", 0, []

    def add(self, key, type_code, payload):
        self.kv += gstr(key) + struct.pack("<I", type_code) + payload
        self.n_kv += 1

    def string(self, key, v): self.add(key, 8, gstr(v))
    def u32(self, key, v): self.add(key, 4, struct.pack("<I", v))
    def f32(self, key, v): self.add(key, 6, struct.pack("<f", v))
    def boolean(self, key, v): self.add(key, 7, struct.pack("<B", v))
    def strings(self, key, vs): self.add(key, 9, struct.pack("<IQ", 8, len(vs)) + b"".join(gstr(v) for v in vs))
    def f32s(self, key, vs): self.add(key, 9, struct.pack("<IQ", 6, len(vs)) + f32s(vs))
    def i32s(self, key, vs): self.add(key, 9, struct.pack("<IQ", 5, len(vs)) + b"".join(struct.pack("<i", v) for v in vs))
    def tensor(self, name, dims, type_code, data): self.tensors.append((name, dims, type_code, data))

    def build(self, alignment=32):
        out = b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), self.n_kv) + self.kv
        offset, offsets = 0, []
        for name, dims, t, data in self.tensors:
            out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
            out += struct.pack("<IQ", t, offset)
            offsets.append(offset)
            offset = (offset + len(data) + alignment - 1) // alignment * alignment
        out += b"\0" * (-len(out) % alignment)
        start = len(out)
        for (name, dims, t, data), off in zip(self.tensors, offsets):
            out += b"\0" * (start + off - len(out)) + data
        return out


# block bytes of 32 elements per ggml type (F32 0, F16 1, Q4_0 2, Q4_1 3, Q5_0 6, Q5_1 7, Q8_0 8, BF16 30)
BLOCK = {0: (1, 4), 1: (1, 2), 30: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34)}


def quant_data(t, n):
    elems, size = BLOCK[t]
    out = bytearray()
    for _ in range(n // elems):
        block = bytearray(rng.getrandbits(8) for _ in range(size))
        if t not in (0, 1, 30):
            block[0:2] = struct.pack("<e", rng.uniform(0.01, 0.1))  # a sane fp16 scale
            if t in (3, 7):
                block[2:4] = struct.pack("<e", rng.uniform(-0.1, 0.1))
        elif t == 0:
            block = bytearray(struct.pack("<f", rng.uniform(-1, 1)))
        out += block
    return bytes(out)


vocab = ["<unk>", "<s>", "</s>"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["Ġ", "Ġa", "ab", "Ġab", "1", "2", "12"]
g = Gguf()
g.string("general.architecture", "llama")
g.u32("llama.embedding_length", 32)
g.u32("llama.block_count", 1)
g.u32("llama.feed_forward_length", 64)
g.u32("llama.attention.head_count", 2)
g.u32("llama.attention.head_count_kv", 1)
g.f32("llama.attention.layer_norm_rms_epsilon", 1e-5)
g.string("tokenizer.ggml.model", "gpt2")
g.string("tokenizer.ggml.pre", "smollm")
g.strings("tokenizer.ggml.tokens", vocab)
g.i32s("tokenizer.ggml.token_type", [3, 3, 3] + [1] * (len(vocab) - 3))
g.strings("tokenizer.ggml.merges", ["Ġ a", "a b", "Ġ ab", "1 2"])
g.u32("tokenizer.ggml.bos_token_id", 1)
g.u32("tokenizer.ggml.eos_token_id", 2)
for i, (name, t) in enumerate([("token_embd.weight", 8), ("output_norm.weight", 0), ("blk.0.attn_norm.weight", 1),
                               ("blk.0.ffn_norm.weight", 30), ("blk.0.attn_q.weight", 2), ("blk.0.attn_k.weight", 3),
                               ("blk.0.ffn_up.weight", 6), ("blk.0.ffn_down.weight", 7)]):
    dims = [32] if "norm" in name else [32, 4]
    g.tensor(name, dims, t, quant_data(t, 32 * (1 if len(dims) == 1 else 4)))
put("gguf", "llama_all_quants_gpt2_tokenizer.gguf", g.build())

g = Gguf()
g.string("general.architecture", "llama")
g.u32("general.alignment", 64)
g.string("tokenizer.ggml.model", "llama")
spm = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ["▁", "▁a", "b", "ab"]
g.strings("tokenizer.ggml.tokens", spm)
g.f32s("tokenizer.ggml.scores", [0.0] * 3 + [0.0] * 256 + [-1.0, -2.0, -3.0, -4.0])
g.i32s("tokenizer.ggml.token_type", [2, 3, 3] + [6] * 256 + [1] * 4)
g.boolean("tokenizer.ggml.add_space_prefix", 1)
g.add("nested", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 4, 2) + struct.pack("<II", 7, 8))
g.tensor("output.weight", [32, 2], 0, quant_data(0, 64))
put("gguf", "llama_spm_tokenizer_aligned64.gguf", g.build(64))

# --- one block pair per dequantizer --------------------------------------------------------
TYPES = [0, 1, 30, 2, 3, 6, 7, 8, 14, 99]  # tests/fuzz/targets/gguf_quant.cpp's kTypes
for index, t in enumerate(TYPES):
    if t in BLOCK:
        put("gguf_quant", "type_%d" % t, bytes([index]) + quant_data(t, 64))
    else:
        put("gguf_quant", "type_%d" % t, bytes([index]) + bytes(64))

put("gguf_quant", "f32_no_whole_element", bytes([0, 0, 3, 0x4F]))  # n = 0: fuzz found memcpy(nullptr) UB

# --- llama2.c ------------------------------------------------------------------------------
def llama2c(dim, hidden, layers, heads, kv_heads, vocab, seq_len, tied):
    head_dim = dim // heads
    kv_dim = head_dim * kv_heads
    n = vocab * dim + layers * (dim + dim * dim + 2 * kv_dim * dim + dim * dim + dim + 3 * hidden * dim) + dim
    n += seq_len * head_dim  # freq_cis_real + imag
    if not tied:
        n += vocab * dim
    return struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab if tied else -vocab, seq_len) + f32s(rand_f32(n))


put("llama2c", "tied.bin", llama2c(8, 16, 1, 2, 1, 16, 4, True))
put("llama2c", "untied_two_layers.bin", llama2c(8, 8, 2, 2, 2, 8, 2, False))

# --- tok512 (llama2.c tokenizer) ------------------------------------------------------------
pieces = ["<unk>", "\n<s>\n", "\n</s>\n"] + ["<0x%02X>" % b for b in range(256)] + [" ", "a", "b", " a", "ab", " ab", "1", "é"]
out = struct.pack("<i", max(len(p.encode()) for p in pieces))
for i, p in enumerate(pieces):
    b = p.encode()
    out += struct.pack("<fi", -float(i), len(b)) + b
put("tok512", "tok.bin", out)

# --- tokenizer.json ---------------------------------------------------------------------------
def byte_level_chars():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


chars = byte_level_chars()
bl_vocab = {chars[b]: b for b in range(256)}
for extra in ["Ġa", "ab", "Ġab", "12"]:
    bl_vocab[extra] = len(bl_vocab)
byte_level = {
    "version": "1.0",
    "added_tokens": [{"id": len(bl_vocab), "content": "<|endoftext|>", "special": True},
                     {"id": len(bl_vocab) + 1, "content": "<|im_start|>", "special": True, "lstrip": True}],
    "normalizer": None,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "Split", "pattern": {"Regex": "[A-Z]+|\\s+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}]},
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|endoftext|>"}}]},
    "model": {"type": "BPE", "vocab": bl_vocab, "merges": ["Ġ a", "a b", ["Ġ", "ab"], "1 2"], "ignore_merges": False},
}
put("tokenizer_json", "byte_level.json", json.dumps(byte_level, ensure_ascii=False))
spm_vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
for b in range(256):
    spm_vocab["<0x%02X>" % b] = len(spm_vocab)
for extra in ["▁", "a", "▁a", "b", "ab", "▁ab"]:
    spm_vocab[extra] = len(spm_vocab)
spm_like = {
    "added_tokens": [{"id": 1, "content": "<s>", "special": True}, {"id": 2, "content": "</s>", "special": True}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                                       {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": None,
    "model": {"type": "BPE", "vocab": spm_vocab, "merges": ["▁ a", "a b", "▁ ab"], "byte_fallback": True,
              "unk_token": "<unk>"},
}
put("tokenizer_json", "sentencepiece_like.json", json.dumps(spm_like, ensure_ascii=False))
metaspace = dict(spm_like, normalizer=None, pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"})
put("tokenizer_json", "metaspace.json", json.dumps(metaspace, ensure_ascii=False))

# --- pre-tokenizer regexes ----------------------------------------------------------------------
gpt2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
llama3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
text = "Hello world's 12345 café\n\n  tabs\t😀 end"
put("pretokenizer", "gpt2", gpt2 + "\0" + text)
put("pretokenizer", "llama3", llama3 + "\0" + text)
put("pretokenizer", "digits_then_gpt2", r"\p{N}" + "\0" + gpt2 + "\0" + text)
put("pretokenizer", "empty_matches", "x*\0" + text)

# --- SentencePiece .model (protobuf) ---------------------------------------------------------------
def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def sp_piece(text, score, type_code):
    return field(1, 2, field(1, 2, text.encode()) + field(2, 5, struct.pack("<f", score)) + field(3, 0, varint(type_code)))


model = sp_piece("<unk>", 0, 2) + sp_piece("<s>", 0, 3) + sp_piece("</s>", 0, 3)
for b in range(256):
    model += sp_piece("<0x%02X>" % b, 0, 6)
for i, p in enumerate(["▁", "▁a", "b", "ab", "▁ab", "<sep>"]):
    model += sp_piece(p, -float(i), 4 if p == "<sep>" else 1)
model += field(2, 2, field(3, 0, varint(2)) + field(35, 0, varint(1)) + field(7, 2, b"ignored"))
model += field(3, 2, field(3, 0, varint(1)) + field(1, 2, b"nmt_nfkc"))
put("sentencepiece", "bpe.model", model)

# --- chat templates (byte 0: 0 a tokenizer_config.json, 1 a Jinja file, 2 an inline template) -------------
templates = {
    "llama3": "{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n{{ message['content'] | trim }}<|eot_id|>{% endfor %}",
    "llama3_instruct": "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>{% endif %}",
    "qwen2_5": "{%- if messages[0]['role'] != 'system' %}<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>{% endif %}",
    "smollm2": "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>",
    "chatml": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}",
}
for name, t in templates.items():
    put("chat_template", name + ".json", b"\0" + json.dumps({"chat_template": t, "bos_token": "<s>"}).encode())
    put("chat_template", name + ".jinja", b"\1" + t.encode())
put("chat_template", "list_form.json", b"\0" + json.dumps({"chat_template": [
    {"name": "tool_use", "template": templates["llama3"]}, {"name": "default", "template": templates["chatml"]}]}).encode())
# Templates no built-in format recognises, for the Jinja interpreter (byte 0 == 2: the setting is
# the template itself, as an inline data.chat_template). The byte tokenizer's EOS is <|end_of_text|>.
interpreted = {
    # Mistral-style: roles must alternate, else raise_exception (the fixed conversation has a
    # system message first, so resolve refuses it; the direct render still runs).
    "alternating": "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
                   "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
                   "user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}"
                   "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
                   "{{ message['content'] + eos_token }}{% endif %}{% endfor %}",
    # Zephyr-style, one statement per line (trim_blocks / lstrip_blocks do the layout).
    "zephyr": "{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
              "{{ '<|user|>\\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n"
              "{{ '<|system|>\\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n"
              "{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\n{% endif %}\n"
              "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}",
    # Most of the subset at once: namespace, slicing, filters, methods, tests, comments, whitespace control.
    "features": "{#- a comment -#}\n{%- set ns = namespace(system='', turns=0) -%}\n"
                "{%- if messages[0].role == 'system' -%}{%- set ns.system = messages[0].content | trim -%}"
                "{%- set rest = messages[1:] -%}{%- else -%}{%- set rest = messages -%}{%- endif -%}\n"
                "{{- bos_token ~ (ns.system ~ '\\n' if ns.system else '') -}}\n"
                "{%- for m in rest -%}\n  {%- set ns.turns = ns.turns + 1 -%}\n"
                "  {%- if m.role == 'assistant' -%}{{ '### Assistant: ' + m.content.strip() + eos_token + '\\n' }}\n"
                "  {%- elif m.role in ['user', 'tool'] -%}{{ '### ' ~ m.role ~ ' #' ~ loop.index ~ ': ' ~ "
                "m['content'] | trim ~ '\\n' }}\n  {%- endif -%}\n{%- endfor -%}\n"
                "{%- if add_generation_prompt and ns.turns is even %}### Assistant:{% endif %}",
    # Outside the subset: refused at load, naming the construct.
    "macro": "{% macro turn(m) %}{{ m.content }}{% endmacro %}{% for m in messages %}{{ turn(m) }}{% endfor %}",
}
for name, t in interpreted.items():
    put("chat_template", "interpreted_" + name + ".txt", b"\2" + t.encode())

# --- JSONL datasets ------------------------------------------------------------------------------
put("jsonl", "all_kinds.jsonl", "\n".join([
    json.dumps({"text": "Plain text, with BOS and EOS trained."}),
    "",
    json.dumps({"prompt": "Q: 2+2?", "response": " 4"}),
    json.dumps({"prompt": "Say hi", "completion": " hi", "id": 7}),
    json.dumps({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                             {"role": "assistant", "content": "Hello!"}, {"role": "tool", "content": "{}"},
                             {"role": "assistant", "content": "Done."}]}),
    json.dumps({"text": "unicode: café 😀 <|im_start|> stays text"}),
]) + "\n")
put("jsonl", "one_line_no_newline.jsonl", json.dumps({"text": "x"}))

# --- FTOK token files ------------------------------------------------------------------------------
def ftok(ids, vocab, header_bytes=24):
    return b"FTOK" + struct.pack("<IIIQ", 1, vocab, header_bytes, len(ids)) + b"".join(struct.pack("<I", i) for i in ids)


put("token_file", "ten_ids.tok", ftok(list(range(10)), 512))
put("token_file", "empty.tok", ftok([], 2))

# --- recipes -----------------------------------------------------------------------------------------
put("recipe", "preset_full.yaml", """model:
  preset: stories260k
  activation_checkpointing: per_block
data:
  train: corpus.txt
  seq_len: 64
optimizer:
  lr: 3.0e-4
  state: 8bit
  master: none
  weight_rounding: stochastic
schedule:
  kind: cosine
  warmup_steps: 5
train:
  steps: 20
  micro_batch: 2
  grad_accum: 2
  precision: bf16
checkpoint:
  run_dir: runs/fuzz
  save_every: 10
distributed:
  zero_stage: 3
#!set optimizer.lr=1e-4
#!set train.steps=30
""")
put("recipe", "path_model.yaml", """model: {path: model.gguf, tokenizer: model.gguf}
data: {train: data.jsonl, format: jsonl, chat_template: chatml, eval: "", eval_fraction: 0.1}
train: {steps: 1, optimizer_in_backward: true, precision: fp16, nonfinite: fail}
""")

if len(sys.argv) > 1:
    for f in sorted(os.listdir(sys.argv[1])):
        if f.endswith(".h5"):
            d = os.path.join(ROOT, "h5_checkpoint")
            os.makedirs(d, exist_ok=True)
            shutil.copy(os.path.join(sys.argv[1], f), os.path.join(d, f))
print("seeds written under", ROOT)
