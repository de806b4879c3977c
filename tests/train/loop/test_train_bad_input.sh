#!/usr/bin/env bash
# Bad input through the CLI: each case gives a clear message naming the file, key or
# tensor, a non-zero exit, and overwrites nothing.
source "$(dirname "$0")/train_test_common.sh"

RUN=(--set "checkpoint.run_dir=$WORK/run")

# Recipes: malformed YAML, an unknown key, a wrong type (file, line and key named).
printf 'model:\n  preset: stories260k\n  path: [unclosed\n' > "$WORK/malformed.yaml"
expect_error "malformed YAML" "malformed.yaml" "malformed YAML" -- "$FARTHING" train "$WORK/malformed.yaml"
sed 's/^  lr: .*/  lr: 5.0e-4\n  learning_rat: 1.0e-3/' "$RECIPE" > "$WORK/unknown_key.yaml"
expect_error "unknown key" "unknown_key.yaml" "learning_rat" "lr" -- "$FARTHING" train "$WORK/unknown_key.yaml"
expect_error "wrong type" "optimizer.lr" "fast" "number" -- "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set optimizer.lr=fast
expect_error "train without a recipe" "no RECIPE given" "farthing init MODEL_FILE" -- "$FARTHING" train
if ! nvidia-smi -L >/dev/null 2>&1; then  # where a GPU is visible, cuda is a valid choice
  expect_error "train.device cuda without a GPU" "train.device" "'cuda'" "sees no CUDA device" "set train.device: cpu" -- \
    "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set train.device=cuda
fi

# Missing model and data files.
expect_error "missing model file" "/nonexistent/model.bin" "model.path" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${RUN[@]}" --set model.path=/nonexistent/model.bin
expect_error "missing data file" "/nonexistent/data.txt" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${RUN[@]}" --set data.train=/nonexistent/data.txt

# An empty dataset (fewer tokens than one sequence).
printf 'Too short.\n' > "$WORK/tiny.txt"
expect_error "empty dataset" "tiny.txt" "seq_len" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${RUN[@]}" --set "data.train=$WORK/tiny.txt"

# Out-of-range token ids: a token file made for a 1000-token vocabulary, holding id 700.
{
  printf 'FTOK'
  printf '\x01\x00\x00\x00\xe8\x03\x00\x00\x18\x00\x00\x00'  # version 1, vocab 1000, header 24
  printf '\x00\x01\x00\x00\x00\x00\x00\x00'                  # 256 tokens
  for _ in $(seq 255); do printf '\x05\x00\x00\x00'; done
  printf '\xbc\x02\x00\x00'                                  # id 700
} > "$WORK/ids.tok"
expect_error "out-of-range token id" "ids.tok" "700" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${RUN[@]}" --set "data.train=$WORK/ids.tok" --set data.eval_fraction=0.1

# Examples under data.packing documents: one longer than a sequence under data.long_documents
# error, and an empty response, each named by file:line; no run directory is made.
long_prompt="$(head -c 2000 "$WORK/shakespeare_256k.txt" | tr -d '\n"\\')"
printf '{"prompt": "Who?", "response": "Me."}\n{"prompt": "%s", "response": "Yes."}\n' "$long_prompt" >"$WORK/long.jsonl"
expect_error "document longer than seq_len" "long.jsonl:2" "longer than a sequence (data.seq_len 64" "data.long_documents is error" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/run_long" --set "data.train=$WORK/long.jsonl" \
  --set data.long_documents=error
printf '{"prompt": "Who?", "response": "Me."}\n{"prompt": "And you?", "response": ""}\n' >"$WORK/empty.jsonl"
expect_error "empty document" "empty.jsonl:2" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/run_empty" --set "data.train=$WORK/empty.jsonl"
[ ! -e "$WORK/run_long" ] && [ ! -e "$WORK/run_empty" ] || fail "refused data left a run directory"

# An unwritable run directory (its parent is a file).
touch "$WORK/a_file"
expect_error "unwritable run_dir" "$WORK/a_file/run" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/a_file/run"

# A checkpoint from another model: stories260K's checkpoint offered to a recipe for a model
# with other dimensions (a llama2.c file with a different header would do the same).
"$FARTHING" train "$RECIPE" "${SMALL[@]}" "${RUN[@]}" --set train.steps=1 --set schedule.warmup_steps=0 >/dev/null
before="$(md5sum "$WORK/run/checkpoints/step_00000001.h5")"
expect_error "checkpoint from another model" "holds another model" "hidden_size" -- \
  "$FARTHING" eval "$RECIPE" "${SMALL[@]}" "${RUN[@]}" --set model.path= --set model.preset=smollm2-135m \
  --checkpoint latest
expect_error "resume another model's run" "holds another model" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${RUN[@]}" --set model.path= --set model.preset=smollm2-135m \
  --resume latest
# That run packed its plain text as a stream: resuming it with documents kept apart would count
# other sequences, so it is refused naming both packings.
expect_error "resume with another packing" "data.packing stream" "packs its data as documents" -- \
  "$FARTHING" train "$RECIPE" "${SMALL[@]}" "${RUN[@]}" --set data.packing=documents --resume latest
[ "$before" = "$(md5sum "$WORK/run/checkpoints/step_00000001.h5")" ] || fail "a failed run changed the checkpoint"
[ "$(cat "$WORK/run/checkpoints/latest")" = "step_00000001.h5" ] || fail "a failed run moved latest"

# A disk that fills during a save: the run above copied onto a tmpfs with room for its
# checkpoint and half another; resuming to step 2 must fail the save cleanly and leave
# step 1 and `latest` untouched. (Needs root to mount; skipped, and said so, elsewhere.)
size="$(stat -c %s "$WORK/run/checkpoints/step_00000001.h5")"
mkdir -p "$WORK/small"
if mount -t tmpfs -o size=$(( size * 3 / 2 + 65536 )) tmpfs "$WORK/small" 2>/dev/null; then
  trap 'umount "$WORK/small" 2>/dev/null; rm -rf "$WORK"' EXIT
  cp -r "$WORK/run" "$WORK/small/run"
  expect_error "disk full during a save" "step_00000002" -- \
    "$FARTHING" train "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/small/run" --set train.steps=2 \
    --set schedule.warmup_steps=0 --resume latest
  [ "$(cat "$WORK/small/run/checkpoints/latest")" = "step_00000001.h5" ] || fail "disk full moved latest"
  [ "$(md5sum < "$WORK/small/run/checkpoints/step_00000001.h5")" = "$(md5sum < "$WORK/run/checkpoints/step_00000001.h5")" ] \
    || fail "disk full damaged the previous checkpoint"
  "$FARTHING" eval "$RECIPE" "${SMALL[@]}" --set "checkpoint.run_dir=$WORK/small/run" --checkpoint latest >/dev/null \
    || fail "the previous checkpoint does not load after a failed save"
else
  echo "SKIPPED CASE: disk full (cannot mount a small tmpfs here: not root?)"
fi
echo "ok: every bad input refused"
