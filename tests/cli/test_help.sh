#!/usr/bin/env bash
# farthing's command line: `farthing --help`, every verb's --help and every bench suite's --help
# list their options (with defaults where they have one), and a wrong option is refused in one
# line on stderr naming the option and the command, exit status 2, before anything runs.
# Usage: test_help.sh FARTHING
set -euo pipefail
farthing="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# VERB WORDS | ARGUMENTS THAT SATISFY ITS REQUIRED ONES | WHAT ITS --help MUST NAME
cases=(
  "train|r.yaml|RECIPE --set --resume --stop-at --quiet"
  "eval|r.yaml|RECIPE --set --checkpoint --batches --quiet"
  "plan|r.yaml|RECIPE --set --world-size --preset --budget-gb --json --interconnect --profile --compute-tflops --memory-gbs --roofline --fit --measure-ops"
  "init|model.bin|MODEL_FILE --data --tokenizer --budget-gb --device --out"
  "inspect|ckpt.h5|CKPT --all --top --recipe --json"
  "export|--from a --out b|--from --out --recipe --dtype --max-shard-size --max-shard-bytes --tokenizer"
  "generate|--model m.bin|--model --tokenizer --prompt --max-new-tokens --temperature --top-k --top-p --seed --logits-out --stop"
  "tokenize|--tokenizer t.json --ids x|--tokenizer --ids INPUT --output --field --bos --eos --no-special"
  "plot|run|RUN_DIR --out"
  "info||--help"
  "data||preview"
  "data preview|r.yaml|RECIPE --set --examples --max-tokens"
  "bench||numerics optim train dist gemm ops precision"
  "bench numerics||--json --threads --device --elements --min-seconds"
  "bench optim||--json --threads --device --elements --min-seconds"
  "bench train||--json --threads --device --preset --seq --batch --min-seconds --torch-amp --profile-ops --torch-compile"
  "bench dist||--json --threads --preset --seq --batch --out --profile --reduce-bucket-mib"
  "bench gemm||--json --threads --device --preset --seq --batch --min-seconds"
  "bench ops||--json --threads --device"
  "bench precision||--json --threads --device --quick --out --fp4 --steps --seed --only --seq --batch"
)

"$farthing" --help > "$tmp/help" 2> "$tmp/err" || fail "farthing --help exited non-zero: $(cat "$tmp/err")"
for c in "${cases[@]}"; do
  IFS='|' read -r words _ _ <<<"$c"
  [[ $words == *" "* ]] && continue
  grep -qE "^  $words( |$)" "$tmp/help" || fail "farthing --help does not list the verb $words"
done
grep -qF -- "--verbose" "$tmp/help" || fail "farthing --help does not mention --verbose"
echo "ok: farthing --help lists every verb"

for c in "${cases[@]}"; do
  IFS='|' read -r words args names <<<"$c"
  # shellcheck disable=SC2086  # words and names are lists
  "$farthing" $words --help > "$tmp/help" 2> "$tmp/err" || fail "farthing $words --help exited non-zero: $(cat "$tmp/err")"
  [ -s "$tmp/err" ] && fail "farthing $words --help wrote to stderr: $(cat "$tmp/err")"
  grep -qF "Usage: farthing $words" "$tmp/help" || fail "farthing $words --help has no usage line: $(head -3 "$tmp/help")"
  for n in $names; do
    grep -qE -- "(^|[ ,])$n([ =,]|$)" "$tmp/help" || fail "farthing $words --help does not list $n; got:"$'\n'"$(cat "$tmp/help")"
  done
  # A wrong option, with the required arguments given: one line, naming it and the command, exit 2.
  rc=0
  # shellcheck disable=SC2086
  "$farthing" $words $args --no-such-option > "$tmp/out" 2> "$tmp/err" || rc=$?
  [ "$rc" -eq 2 ] || fail "farthing $words $args --no-such-option: exit $rc, expected 2: $(cat "$tmp/err")"
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "farthing $words --no-such-option: not one line on stderr:"$'\n'"$(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "farthing $words --no-such-option wrote to stdout: $(cat "$tmp/out")"
  grep -qF "farthing $words: unknown option '--no-such-option'" "$tmp/err" \
    || fail "farthing $words --no-such-option: the error does not name the option and the command: $(cat "$tmp/err")"
done
echo "ok: every verb's and every bench suite's --help lists its options; a wrong option is one line, exit 2"

# Defaults are shown beside the options that have one.
expect_in_help() {  # expect_in_help "WORDS" TEXT
  # shellcheck disable=SC2086
  "$farthing" $1 --help | grep -qF -- "$2" || fail "farthing $1 --help does not show '$2'"
}
expect_in_help "plan" "--world-size N=1"
expect_in_help "inspect" "--top N=10"
expect_in_help "init" "--device cpu|cuda|auto=auto"
expect_in_help "bench train" "--min-seconds FLOAT=0.3"
expect_in_help "data preview" "--max-tokens N=400"
expect_in_help "generate" "--max-new-tokens N=128"
echo "ok: defaults shown"

# A suite refuses an option that only another suite reads; values are checked before anything runs.
expect_refused() {  # expect_refused TEXT ARGS...
  local text="$1" rc=0; shift
  "$farthing" "$@" > /dev/null 2> "$tmp/err" || rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -qF -- "$text" "$tmp/err" \
    || fail "farthing $*: exit $rc, expected 2 and one line with '$text'; got: $(cat "$tmp/err")"
  echo "ok: farthing $* -> $(cat "$tmp/err")"
}
expect_refused "farthing bench dist: unknown option '--device'" bench dist --device cuda
expect_refused "farthing bench: unknown suite 'nope'" bench nope
expect_refused "farthing: unknown verb 'nope'" nope
expect_refused "farthing plan: --world-size '0' is not a whole number >= 1" plan r.yaml --world-size 0
expect_refused "farthing inspect: --top needs a value" inspect ckpt.h5 --top
expect_refused "farthing train: no RECIPE given" train --quiet
expect_refused "farthing init: --device 'tpu'; expected cpu, cuda or auto" init model.bin --device tpu
expect_refused "farthing train: --set 'optimizer.lr' is not key=value" train r.yaml --set optimizer.lr
rc=0
"$farthing" > /dev/null 2> "$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && grep -qF "farthing: no verb given" "$tmp/err" || fail "farthing alone: exit $rc: $(head -2 "$tmp/err")"
echo "PASS"
