#!/usr/bin/env python3
"""gen_tokenizer_goldens.py — token ids from Hugging Face `tokenizers` for farthing's C++ BPE.

What: for the gpt2, llama2, llama3 and qwen2_5 tokenizer.json files in ../shared/tokenizers,
encode (add_special_tokens=False, so no BOS; added/special tokens in the text are split as HF
does by default) each of TEXTS from ../shared/text and each of the short STRINGS below. For a
text: the id count, FNV-1a 64 of the ids (each as uint32 little-endian bytes) and the first
FIRST_IDS ids; for a string: all of its ids. Also checks that every text is already NFC
(farthing does not apply Qwen2.5's NFC normaliser; see framework/data/tokenizer.h).
Read by: tests/tokenizers/test_tokenizer_hf_goldens.cpp. Output: tests/data/tokenizers/hf_goldens.json.

Regenerate (deterministic; needs `pip install tokenizers`, version recorded in the file):

    python3 tools/goldens/gen_tokenizer_goldens.py [--shared ../shared]
"""
import argparse
import json
import os
import unicodedata

import tokenizers

TOKENIZERS = ["gpt2", "llama2", "llama3", "qwen2_5"]
TEXTS = [
    "text/tinyshakespeare.txt",
    "text/sotu/1790_george_washington_n.txt",
    "text/sotu/1840_martin_van_buren_d.txt",
    "text/sotu/2015_barack_obama_d.txt",
    "text/sotu/2021_joseph_r_biden_d.txt",
]
STRINGS = [
    "Hello world",
    " Hello  world\n\n\tHELLO World's 12345 don't I'M",
    "caf\u00e9 na\u00efve \u2014 \u65e5\u672c\u8a9e \U0001F600 \u0645\u0631\u062d\u0628\u0627",
    "   leading and trailing   ",
    "<s>special</s> <|endoftext|> <|begin_of_text|>x<|im_start|>user",
    "1,234,567.89 + 3.14e-10 = ???",
]
FIRST_IDS = 2000


def fnv1a64(ids):
    h = 0xCBF29CE484222325
    for i in ids:
        for b in int(i).to_bytes(4, "little"):
            h ^= b
            h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(root, "..", "shared"))
    args = ap.parse_args()
    texts = {}
    for rel in TEXTS:
        with open(os.path.join(args.shared, rel), encoding="utf-8") as f:
            texts[rel] = f.read()
        assert unicodedata.normalize("NFC", texts[rel]) == texts[rel], rel + " is not NFC"
    out = {"tokenizers_version": tokenizers.__version__, "first_ids": FIRST_IDS, "texts": TEXTS,
           "strings": STRINGS, "results": {}}
    for name in TOKENIZERS:
        tok = tokenizers.Tokenizer.from_file(os.path.join(args.shared, "tokenizers", name, "tokenizer.json"))
        res = {"texts": {}, "strings": []}
        for rel, text in texts.items():
            ids = tok.encode(text, add_special_tokens=False).ids
            res["texts"][rel] = {"count": len(ids), "fnv1a64": fnv1a64(ids), "first": ids[:FIRST_IDS]}
        for s in STRINGS:
            res["strings"].append(tok.encode(s, add_special_tokens=False).ids)
        out["results"][name] = res
        print(name, {k: v["count"] for k, v in res["texts"].items()})
    path = os.path.join(root, "tests", "data", "tokenizers", "hf_goldens.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
