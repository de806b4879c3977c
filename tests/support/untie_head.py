#!/usr/bin/env python3
"""untie_head.py DIR: make the HF Llama directory DIR (config.json + one model.safetensors, as
`farthing export` writes a tied model) untied: lm_head.weight becomes its own tensor, a copy of
model.embed_tokens.weight, and config.json says tie_word_embeddings false. Standard library only:
tests use it to train an untied model made from a tied one (tests/train/loop/test_train_grads_in_place.sh)."""
import json
import struct
import sys
from pathlib import Path

d = Path(sys.argv[1])
blob = (d / "model.safetensors").read_bytes()
n = struct.unpack("<Q", blob[:8])[0]
header = json.loads(blob[8:8 + n])
data = blob[8 + n:]
embed = header["model.embed_tokens.weight"]
if "lm_head.weight" in header:
    sys.exit(f"untie_head.py: {d}/model.safetensors already has lm_head.weight")
begin, end = embed["data_offsets"]
header["lm_head.weight"] = {"dtype": embed["dtype"], "shape": embed["shape"], "data_offsets": [len(data), len(data) + end - begin]}
data += data[begin:end]
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
(d / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + data)
config = json.loads((d / "config.json").read_text())
config["tie_word_embeddings"] = False
(d / "config.json").write_text(json.dumps(config, indent=2))
