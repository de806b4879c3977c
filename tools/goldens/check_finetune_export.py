#!/usr/bin/env python3
"""check_finetune_export.py — transformers' verdict on a fine-tuned model that farthing exported.

After tools/demo.sh (or any `farthing export --from CHECKPOINT.h5 --out DIR --tokenizer ...`):
transformers loads DIR (config.json, model.safetensors, tokenizer.json), and

  1. its greedy continuation of PROMPT equals farthing's own (`farthing generate --model
     CHECKPOINT.h5 --temperature 0`), token for token: every step's argmax agrees;
  2. its next-token logits after PROMPT equal farthing's to within --tolerance (max |diff|),
     when --farthing-logits FILE (float32 little-endian, vocab values, written by
     `farthing generate --logits-out FILE --max-new-tokens 1`) is given.

Prints one line per check; exits non-zero on a failure.

    python3 tools/goldens/check_finetune_export.py --hf runs/smollm2_135m_cpu_demo/hf \
        --checkpoint runs/smollm2_135m_cpu_demo/checkpoints/step_00000020.h5 \
        --farthing build/bin/farthing --prompt "And God said unto Noah,"
"""
import argparse
import subprocess
import sys

import numpy as np
import torch
import transformers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hf", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--farthing", default="build/bin/farthing")
    ap.add_argument("--prompt", default="And God said unto Noah,")
    ap.add_argument("--max-new-tokens", type=int, default=40)
    ap.add_argument("--tolerance", type=float, default=2e-3)
    args = ap.parse_args()

    tok = transformers.AutoTokenizer.from_pretrained(args.hf)
    model = transformers.AutoModelForCausalLM.from_pretrained(args.hf, dtype=torch.float32)
    model.eval()
    ids = tok(args.prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        logits = model(ids).logits[0, -1].numpy().astype(np.float32)
        out = model.generate(ids, max_new_tokens=args.max_new_tokens, do_sample=False, eos_token_id=None,
                             pad_token_id=tok.eos_token_id)
    hf_text = tok.decode(out[0, ids.shape[1]:], skip_special_tokens=False)

    logits_file = "/tmp/farthing_finetune_logits.f32"
    subprocess.run([args.farthing, "generate", "--model", args.checkpoint, "--tokenizer", args.hf,
                    "--prompt", args.prompt, "--max-new-tokens", "1", "--logits-out", logits_file],
                   check=True, capture_output=True)
    ours = np.fromfile(logits_file, dtype="<f4")
    diff = float(np.max(np.abs(ours - logits))) if ours.shape == logits.shape else float("inf")
    ok_logits = diff <= args.tolerance
    print(f"{'ok' if ok_logits else 'FAIL'}: next-token logits after the prompt, max |farthing - transformers| = {diff:.3g}"
          f" (tolerance {args.tolerance}; argmax {int(np.argmax(ours))} vs {int(np.argmax(logits))})")

    gen = subprocess.run([args.farthing, "generate", "--model", args.checkpoint, "--tokenizer", args.hf,
                          "--prompt", args.prompt, "--max-new-tokens", str(args.max_new_tokens)],
                         check=True, capture_output=True, text=True).stdout
    farthing_text = gen[len(args.prompt):] if gen.startswith(args.prompt) else gen
    ok_text = farthing_text.rstrip("\n") == hf_text or farthing_text.rstrip("\n").startswith(hf_text) or \
        hf_text.startswith(farthing_text.rstrip("\n"))
    print(f"{'ok' if ok_text else 'FAIL'}: greedy continuation, transformers {hf_text!r}")
    if not ok_text:
        print(f"      farthing {farthing_text!r}")
    return 0 if (ok_logits and ok_text) else 1


if __name__ == "__main__":
    sys.exit(main())
