# run_common.sh — what the GPU check's training scripts share (train_smoke.sh,
# zero_staged_check.sh, train_presets.sh); sourced, not run.
# Relies on: python3, nvidia-smi on a GPU machine.

# skip_without_gpu NAME DEVICE: exits 77 (skipped) when DEVICE is cuda and no GPU is visible.
skip_without_gpu() {
  if [[ $2 == cuda ]] && ! nvidia-smi -L >/dev/null 2>&1; then
    echo "$1: no CUDA device visible; skipped"
    exit 77
  fi
}

# write_tokens PATH VOCAB N SEED: N random token ids below VOCAB in farthing's token file format
# (data.format tokens), from Python's generator seeded with SEED: no tokenizer, no download.
write_tokens() {
  python3 - "$@" <<'PY'
import struct, sys, random
path, vocab, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
ids = [rng.randrange(vocab) for _ in range(n)]
with open(path, "wb") as f:
    f.write(b"FTOK" + struct.pack("<IIIQ", 1, vocab, 24, n))
    f.write(struct.pack("<%di" % n, *ids))
PY
}
