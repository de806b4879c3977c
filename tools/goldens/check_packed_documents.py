#!/usr/bin/env python3
"""check_packed_documents.py — documents packed into one farthing sequence against transformers,
each document run alone.

    python3 tools/goldens/check_packed_documents.py FARTHING SHARED_DIR

A random Llama (GQA, RoPE; vocab 512, 2 layers) is written as a Hugging Face folder; three
documents of different lengths are tokenized by `farthing tokenize` with stories260K's tokenizer
(SHARED_DIR/models/stories260K/tok512.bin), BOS and EOS added, as the dataset reader adds them.
  - transformers, fp64 on the CPU, runs each document alone at positions 0..n-1: its mean loss
    over its n - 1 next-token targets, and the three's token-weighted mean;
  - `farthing eval` (fp32 compute) reads the three as one JSONL under data.packing documents with
    data.seq_len holding all three in one sequence: its mean loss over that sequence's targets;
  - the same file under data.packing stream (one sequence, documents seeing those before them),
    for contrast.
Passes when farthing's documents mean is within 1e-5 relative of transformers' and the stream
mean is not (it must differ by more than 1e-4). Exit 77 when torch, transformers or the
tokenizer is absent. Prints the per-document losses and the means.
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

try:
    import torch
    import transformers
except ImportError as e:  # the goldens need them; farthing never does
    print(f"SKIP: {e.name} is not installed (pip install torch transformers)")
    sys.exit(77)

DOCS = [
    "Once upon a time there was a little girl named Lily. She liked to play in the park with her ball.",
    "Tom had a big red truck. He drove it around the house and made loud noises. His mom laughed.",
    "The sun was hot. A small bird sat on the tree and sang a song for everyone who walked by, and the "
    "children stopped to listen. They smiled and clapped, and the bird sang again, louder than before.",
]


def farthing(binary, *args):
    run = subprocess.run([binary, *args], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"FAIL: farthing {' '.join(args[:2])}: {run.stderr.strip()}")
    return run.stdout


def token_ids(binary, tokenizer, work, i, text):
    src, out = os.path.join(work, f"doc{i}.jsonl"), os.path.join(work, f"doc{i}.bin")
    with open(src, "w") as f:
        f.write(json.dumps({"text": text}) + "\n")
    farthing(binary, "tokenize", "--tokenizer", tokenizer, src, "-o", out, "--bos", "--eos")
    with open(out, "rb") as f:
        data = f.read()
    assert data[:4] == b"FTOK", out
    header = struct.unpack_from("<I", data, 12)[0]
    count = struct.unpack_from("<Q", data, 16)[0]
    return list(struct.unpack_from(f"<{count}I", data, header))


def eval_loss(binary, recipe, sets):
    out = farthing(binary, "eval", recipe, "--batches", "0", *sum((["--set", s] for s in sets), []))
    match = re.search(r"loss\s*[:=]?\s*([0-9.]+)", out)
    if not match:
        sys.exit(f"FAIL: no loss in farthing eval's output:\n{out}")
    return float(match.group(1))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, shared = sys.argv[1], sys.argv[2]
    tokenizer = os.path.join(shared, "models", "stories260K", "tok512.bin")
    if not os.path.isfile(tokenizer):
        print(f"SKIP: {tokenizer} not found")
        sys.exit(77)
    src_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    recipe = os.path.join(src_dir, "recipes", "stories", "260k_full_single_device.yaml")
    with tempfile.TemporaryDirectory() as work:
        torch.manual_seed(0)
        config = transformers.LlamaConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                                          rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False)
        model = transformers.LlamaForCausalLM(config)
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0.0, 0.2)
        model_dir = os.path.join(work, "model")
        model.save_pretrained(model_dir, safe_serialization=True)

        ids = [token_ids(binary, tokenizer, work, i, text) for i, text in enumerate(DOCS)]
        model = model.double().eval()
        sums, counts = [], []
        with torch.no_grad():
            for doc in ids:
                x = torch.tensor([doc])
                logits = model(x).logits[0, :-1]
                loss = torch.nn.functional.cross_entropy(logits, x[0, 1:], reduction="sum").item()
                sums.append(loss)
                counts.append(len(doc) - 1)
        hf_mean = sum(sums) / sum(counts)

        data = os.path.join(work, "docs.jsonl")
        with open(data, "w") as f:
            for text in DOCS:
                f.write(json.dumps({"text": text}) + "\n")
        total = sum(len(d) for d in ids)
        common = [f"model.path={model_dir}", f"model.tokenizer={tokenizer}", f"data.train={data}", f"data.eval={data}",
                  "train.precision=fp32", "train.micro_batch=1", f"checkpoint.run_dir={work}/run"]
        documents = eval_loss(binary, recipe, common + ["data.packing=documents", f"data.seq_len={total}"])
        stream = eval_loss(binary, recipe, common + ["data.packing=stream", f"data.seq_len={total - 1}"])

    for i, (s, n) in enumerate(zip(sums, counts)):
        print(f"document {i}: {n + 1} tokens, transformers fp64 alone: mean loss {s / n:.9f}")
    rel = abs(documents - hf_mean) / hf_mean
    print(f"transformers, each alone (fp64), token-weighted mean: {hf_mean:.9f}")
    print(f"farthing eval, one packed sequence, data.packing documents (fp32): {documents:.9f} (relative {rel:.2e})")
    print(f"farthing eval, one sequence, data.packing stream (fp32): {stream:.9f} "
          f"(relative {abs(stream - hf_mean) / hf_mean:.2e})")
    ok = rel < 1e-5 and abs(stream - hf_mean) / hf_mean > 1e-4
    print("ok" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
