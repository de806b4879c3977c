#!/usr/bin/env bash
# A model whose vocabulary is not a multiple of 128 (its logits rows padded in memory,
# models::logits_row_stride): a tiny GPT-2 (vocabulary 300, logits rows 384 apart, written here as
# a safetensors folder) trained from a token file, needing nothing from ../shared.
#   - The strict test device runs the padded head and loss bit for bit as the CPU (losses and
#     every byte of the final checkpoint), at fp32, bf16 with bf16 activations (bf16 logits) and
#     bf16 with fp32 activations (the logits' gradient narrowed for the head's GEMMs), in loss
#     chunks of 24 rows over 64 (a short last chunk).
#   - The checkpoint and its export keep the true vocabulary: the embedding (the tied head) is
#     (300, 32), and the exported config.json says vocab_size 300.
# usage: test_train_vocab_padding.sh FARTHING_BINARY SHARED_DIR SOURCE_DIR  (exit 77: no python3)
set -euo pipefail
FARTHING="$1"
SRC="$3"
export OMP_WAIT_POLICY=passive
command -v python3 >/dev/null || { echo "SKIP: no python3 on PATH (writes the model and reads the export)"; exit 77; }
WORK="$(mktemp -d /tmp/farthing_vocab_padding.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 - "$WORK" <<'EOF'
import json, os, random, struct, sys
work = sys.argv[1]
V, C, L, H, P = 300, 32, 2, 4, 64
os.makedirs(f"{work}/gpt2", exist_ok=True)
json.dump({"model_type": "gpt2", "vocab_size": V, "n_embd": C, "n_layer": L, "n_head": H, "n_positions": P,
           "n_inner": 2 * C}, open(f"{work}/gpt2/config.json", "w"))
shapes = {"transformer.wte.weight": [V, C], "transformer.wpe.weight": [P, C],
          "transformer.ln_f.weight": [C], "transformer.ln_f.bias": [C]}
for i in range(L):
    p = f"transformer.h.{i}."
    shapes.update({p + "ln_1.weight": [C], p + "ln_1.bias": [C], p + "attn.c_attn.weight": [C, 3 * C],
                   p + "attn.c_attn.bias": [3 * C], p + "attn.c_proj.weight": [C, C], p + "attn.c_proj.bias": [C],
                   p + "ln_2.weight": [C], p + "ln_2.bias": [C], p + "mlp.c_fc.weight": [C, 2 * C],
                   p + "mlp.c_fc.bias": [2 * C], p + "mlp.c_proj.weight": [2 * C, C], p + "mlp.c_proj.bias": [C]})
rng = random.Random(7)
header, blobs, offset = {}, [], 0
for name, shape in shapes.items():
    n = 1
    for d in shape:
        n *= d
    ones = name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight")
    values = [1.0] * n if ones else [rng.gauss(0.0, 0.1) for _ in range(n)]
    blob = struct.pack(f"<{n}f", *values)
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
    blobs.append(blob)
    offset += len(blob)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(f"{work}/gpt2/model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
# 20,000 ids below V: a token file (FTOK, version 1, vocab, header 24, count), no tokenizer needed.
ids = [(i * 7919 + (i // 13) * 31) % V for i in range(20000)]
with open(f"{work}/ids.tok", "wb") as f:
    f.write(b"FTOK" + struct.pack("<III", 1, V, 24) + struct.pack("<Q", len(ids)) + struct.pack(f"<{len(ids)}I", *ids))
EOF

RECIPE="$SRC/recipes/stories/260k_full_single_device.yaml"
TINY=(--set "model.path=$WORK/gpt2" --set model.tokenizer= --set "data.train=$WORK/ids.tok"
      --set train.micro_batch=2 --set data.seq_len=32 --set model.loss_chunk_rows=24 --set train.steps=4
      --set schedule.warmup_steps=1 --set train.eval_batches=1 --set train.eval_every=0 --set checkpoint.save_every=0
      --quiet)
losses() { grep -o '"loss":[^,}]*' "$1"; }
run() {  # run NAME DEVICE [extra args...]
  local name="$1" device="$2"; shift 2
  "$FARTHING" train "$RECIPE" "${TINY[@]}" --set "train.device=$device" --set "checkpoint.run_dir=$WORK/$name" "$@" \
    >"$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log"; fail "$name: training exited non-zero"; }
}
check() {  # check NAME [config...]: the strict device == the CPU, bit for bit
  local name="$1"; shift
  run "$name-cpu" cpu "$@"
  run "$name-strict" strict "$@"
  [ "$(losses "$WORK/$name-cpu/metrics.jsonl" | wc -l)" -eq 4 ] || fail "$name: expected 4 loss records"
  losses "$WORK/$name-cpu/metrics.jsonl" | grep -qiE 'nan|inf' && fail "$name: a non-finite loss"
  diff <(losses "$WORK/$name-cpu/metrics.jsonl") <(losses "$WORK/$name-strict/metrics.jsonl") >/dev/null \
    || fail "$name: losses differ between cpu and strict"
  h5diff --exclude-path /recipe --exclude-attribute / "$WORK/$name-cpu/checkpoints/step_00000004.h5" \
    "$WORK/$name-strict/checkpoints/step_00000004.h5" >/dev/null || fail "$name: final checkpoints differ"
  echo "ok: $name: the strict device == cpu bit for bit ($(losses "$WORK/$name-cpu/metrics.jsonl" | tail -1))"
}
check fp32 --set train.precision=fp32 --set optimizer.state=f32 --set optimizer.master=f32 \
  --set optimizer.weight_rounding=nearest
check bf16 --set train.precision=bf16
check bf16-fp32-acts --set train.precision=bf16 --set model.bf16_activations=false

# The checkpoint and its export keep the true vocabulary.
ckpt="$WORK/bf16-cpu/checkpoints/step_00000004.h5"
h5ls -r "$ckpt" | grep -E 'wte\.weight .*\{300, 32\}' >/dev/null \
  || fail "the checkpoint's embedding is not (300, 32): $(h5ls -r "$ckpt" | grep wte)"
"$FARTHING" export --from "$ckpt" --out "$WORK/hf" >"$WORK/export.log" 2>&1 || { cat "$WORK/export.log"; fail "export"; }
python3 - "$WORK/hf" <<'EOF' || fail "the export does not keep the vocabulary of 300"
import json, struct, sys
d = sys.argv[1]
assert json.load(open(f"{d}/config.json"))["vocab_size"] == 300
with open(f"{d}/model.safetensors", "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
shapes = {k: v["shape"] for k, v in header.items() if k != "__metadata__"}
wte = [s for k, s in shapes.items() if k.endswith("wte.weight")]
assert wte == [[300, 32]], shapes
EOF
echo "ok: the checkpoint and the export keep the vocabulary of 300"
