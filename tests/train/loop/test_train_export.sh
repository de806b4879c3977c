#!/usr/bin/env bash
# `farthing export` of a training checkpoint: bf16 by default (config.json torch_dtype
# bfloat16, BF16 tensors: half the f32 export's bytes), the tokenizer the run's stored recipe names
# (found without --tokenizer, also through a quoted path with a space), generation_config.json's
# bos/eos from it, shards + model.safetensors.index.json above --max-shard-size.
source "$(dirname "$0")/train_test_common.sh"
command -v python3 >/dev/null || { echo "SKIP: no python3 on PATH (reads the safetensors headers)"; exit 77; }

mkdir -p "$WORK/tok dir"
cp "$SHARED/models/stories260K/tok512.bin" "$WORK/tok dir/tok512.bin"
"$FARTHING" train "$RECIPE" "${SMALL[@]}" --set train.steps=2 --set schedule.warmup_steps=1 \
  --set "model.tokenizer=$WORK/tok dir/tok512.bin" --set "checkpoint.run_dir=$WORK/run" >/dev/null
ckpt="$WORK/run/checkpoints/$(cat "$WORK/run/checkpoints/latest")"
"$FARTHING" export --from "$ckpt" --out "$WORK/hf" 2> "$WORK/err" || { cat "$WORK/err"; fail "export exited non-zero"; }
grep -qF "bf16 (the model's own dtype)" "$WORK/err" || fail "export did not say bf16: $(cat "$WORK/err")"
"$FARTHING" export --from "$ckpt" --out "$WORK/f32" --dtype f32 2>/dev/null || fail "export --dtype f32 failed"
"$FARTHING" export --from "$ckpt" --out "$WORK/sharded" --max-shard-size 300KB 2>/dev/null || fail "sharded export failed"
python3 - "$WORK" <<'EOF' || fail "the exports are not what they should be"
import json, os, struct, sys
w = sys.argv[1]
def dtypes(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return {v["dtype"] for k, v in json.loads(f.read(n)).items() if k != "__metadata__"}
config = json.load(open(f"{w}/hf/config.json"))
gen = json.load(open(f"{w}/hf/generation_config.json"))
checks = {
    "config torch_dtype bfloat16": config["torch_dtype"] == "bfloat16",
    "tensors BF16": dtypes(f"{w}/hf/model.safetensors") == {"BF16"},
    "f32 export F32": dtypes(f"{w}/f32/model.safetensors") == {"F32"},
    "half the f32 bytes": os.path.getsize(f"{w}/hf/model.safetensors") < 0.51 * os.path.getsize(f"{w}/f32/model.safetensors"),
    "tokenizer files from the run's recipe": os.path.exists(f"{w}/hf/tokenizer.json") and os.path.exists(f"{w}/hf/tokenizer_config.json"),
    "generation_config bos 1 eos 2": gen.get("bos_token_id") == 1 and gen.get("eos_token_id") == 2,
}
index = json.load(open(f"{w}/sharded/model.safetensors.index.json"))
shards = sorted(set(index["weight_map"].values()))
checks["2+ shards of <= 300KB + header"] = len(shards) >= 2 and all(
    os.path.getsize(f"{w}/sharded/{s}") <= 300000 + 8192 for s in shards)
checks["shards BF16"] = all(dtypes(f"{w}/sharded/{s}") == {"BF16"} for s in shards)
for name, ok in checks.items():
    print(("ok: " if ok else "FAIL: ") + name)
sys.exit(0 if all(checks.values()) else 1)
EOF
# The recipe keeps an fp32 master and rounds the bf16 weights stochastically, so the two differ:
# the bf16 export must hold the checkpoint's bf16 weights bit for bit (the model the run computed
# with), the f32 export the master (more than bf16's 8 mantissa bits somewhere).
tensor="model.layers.0.self_attn.q_proj.weight"
h5dump -d "model/$tensor" -b LE -o "$WORK/working.bin" "$ckpt" >/dev/null || fail "h5dump of model/$tensor failed"
python3 - "$WORK" "$tensor" <<'EOF' || fail "the exports do not hold the checkpoint's weights"
import json, struct, sys
w, name = sys.argv[1], sys.argv[2]
def tensor_bytes(path, name):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        begin, end = header[name]["data_offsets"]
        f.seek(8 + n + begin)
        return f.read(end - begin)
working = open(f"{w}/working.bin", "rb").read()
bf16 = tensor_bytes(f"{w}/hf/model.safetensors", name)
f32 = tensor_bytes(f"{w}/f32/model.safetensors", name)
low_bits = [struct.unpack_from("<I", f32, i)[0] & 0xFFFF for i in range(0, len(f32), 4)]
checks = {
    "bf16 export == the checkpoint's bf16 weights": bf16 == working,
    "f32 export is the master (low 16 bits not all zero)": any(low_bits),
}
for k, ok in checks.items():
    print(("ok: " if ok else "FAIL: ") + k)
sys.exit(0 if all(checks.values()) else 1)
EOF

# The tokenizer moved away: a note, no tokenizer files, still exit 0.
mv "$WORK/tok dir" "$WORK/moved"
"$FARTHING" export --from "$ckpt" --out "$WORK/notok" 2> "$WORK/err" || { cat "$WORK/err"; fail "export without the tokenizer failed"; }
grep -qF "is not there from here; pass --tokenizer PATH" "$WORK/err" || fail "no note about the missing tokenizer: $(cat "$WORK/err")"
[ ! -e "$WORK/notok/tokenizer.json" ] || fail "tokenizer.json written without a tokenizer"
echo "ok: a training checkpoint exports bf16 with the run's tokenizer; a moved tokenizer is a note"
