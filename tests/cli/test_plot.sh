#!/usr/bin/env bash
# test_plot.sh — `farthing plot RUN_DIR [RUN_DIR ...]` on hand-written metrics.jsonl: bad input
# (no run dir, a torn line, no loss record) fails with one line naming the file; without
# matplotlib the message says what to install; with it, an 800x450 PNG holding every training
# and eval point, and two runs on one plot; a PATH python3 without matplotlib hands over to
# /usr/bin/python3's (Debian's python3-matplotlib). Exit 77 (skipped) after the error checks when
# neither python3 has matplotlib.
# usage: test_plot.sh FARTHING_BINARY
set -u
farthing="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: no python3 on PATH (farthing plot runs tools/plot_run.py with it)"; exit 77; }
# Runs a command that must fail; its output must contain the given text.
expect_error() {
  local what="$1" needle="$2"; shift 2
  local out rc=0
  out="$("$@" 2>&1)" || rc=$?
  [ "$rc" -ne 0 ] || fail "$what: exit 0, expected an error; output: $out"
  grep -qF -- "$needle" <<<"$out" || fail "$what: message lacks '$needle'; got: $out"
  echo "ok: $what -> $(head -1 <<<"$out")"
}

"$farthing" plot --help | grep -q -- "--out PNG" || fail "--help does not list --out"
expect_error "no run dir" "$tmp/nope/metrics.jsonl does not exist" "$farthing" plot "$tmp/nope"

run="$tmp/run"
mkdir -p "$run"
for s in 1 2 3 4 5 6; do
  echo "{\"step\":$s,\"loss\":$(awk -v s=$s 'BEGIN { print 6 / s }'),\"lr\":0.001,\"grad_norm\":1.0}"
  [ $((s % 3)) -eq 0 ] && echo "{\"step\":$s,\"eval_loss\":$(awk -v s=$s 'BEGIN { print 7 / s }'),\"eval_tokens\":64}"
done > "$run/metrics.jsonl"
echo '{"step":0,"eval_loss":7.5,"eval_tokens":64}' | cat - "$run/metrics.jsonl" > "$run/m" && mv "$run/m" "$run/metrics.jsonl"

bad="$tmp/bad"
mkdir -p "$bad"
head -2 "$run/metrics.jsonl" > "$bad/metrics.jsonl"
echo '{"step":3,"lo' >> "$bad/metrics.jsonl"
expect_error "torn line" "$bad/metrics.jsonl:3 is not a JSON object" "$farthing" plot "$bad"
echo '{"step":1,"lr":0.1}' > "$bad/metrics.jsonl"
expect_error "no loss record" "holds no \"loss\" or \"eval_loss\" record" "$farthing" plot "$bad"

# Without matplotlib: a module of that name that fails to import stands in for its absence.
mkdir -p "$tmp/no_mpl/matplotlib"
echo 'raise ImportError("No module named matplotlib (test stand-in)")' > "$tmp/no_mpl/matplotlib/__init__.py"
expect_error "no matplotlib" "python3 -m pip install matplotlib" env PYTHONPATH="$tmp/no_mpl" "$farthing" plot "$run"
[ ! -e "$run/loss.png" ] || fail "a PNG was written without matplotlib"

python3 -c "import matplotlib" 2>/dev/null || /usr/bin/python3 -c "import matplotlib" 2>/dev/null ||
  { echo "SKIP: neither python3 nor /usr/bin/python3 has matplotlib (the error checks passed)"; exit 77; }
out="$("$farthing" plot "$run")" || fail "farthing plot exited non-zero: $out"
echo "$out"
grep -qF "wrote $run/loss.png (6 training and 3 eval points)" <<<"$out" || fail "unexpected output: $out"
# PNG signature, then IHDR's width and height (big-endian) at bytes 16..23.
[ "$(head -c 8 "$run/loss.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "loss.png is not a PNG"
[ "$(od -An -tu1 -j16 -N8 "$run/loss.png" | tr -s ' ' | sed 's/^ //')" = "0 0 3 32 0 0 1 194" ] \
  || fail "loss.png is not 800x450"
"$farthing" plot "$run" --out "$tmp/elsewhere.png" >/dev/null && [ -s "$tmp/elsewhere.png" ] || fail "--out ignored"
echo "ok: plot wrote an 800x450 PNG with 6 training and 3 eval points; --out works"
# Several runs on one plot: each run's points counted, the default PNG beside the first run, and
# a missing second run refused by name before anything is drawn.
run2="$tmp/run2"
mkdir -p "$run2"
head -4 "$run/metrics.jsonl" > "$run2/metrics.jsonl"
out="$("$farthing" plot "$run" "$run2")" || fail "farthing plot of two runs exited non-zero: $out"
echo "$out"
grep -qF "wrote $run/compare.png (6 training and 3 eval points of run, 3 training and 1 eval points of run2)" <<<"$out" \
  || fail "unexpected output for two runs: $out"
[ "$(od -An -tu1 -j16 -N8 "$run/compare.png" | tr -s ' ' | sed 's/^ //')" = "0 0 3 32 0 0 1 194" ] \
  || fail "compare.png is not an 800x450 PNG"
expect_error "a missing second run" "$tmp/nope/metrics.jsonl does not exist" "$farthing" plot "$run" "$tmp/nope"
echo "ok: two runs on one plot"
# A python3 on PATH that cannot see matplotlib (as a pyenv or venv Python cannot see Debian's
# dist-packages; here /usr/bin/python3 -S, without site-packages) hands over to /usr/bin/python3.
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  mkdir -p "$tmp/bin"
  printf '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n' > "$tmp/bin/python3"
  chmod +x "$tmp/bin/python3"
  out="$(PATH="$tmp/bin:$PATH" "$farthing" plot "$run" --out "$tmp/fallback.png" 2>&1)" ||
    fail "the hand-over to /usr/bin/python3 failed: $out"
  grep -qF "has no matplotlib; drew with /usr/bin/python3's" <<<"$out" || fail "no hand-over note in: $out"
  [ "$(od -An -tu1 -j16 -N8 "$tmp/fallback.png" | tr -s ' ' | sed 's/^ //')" = "0 0 3 32 0 0 1 194" ] \
    || fail "the hand-over wrote no 800x450 PNG"
  echo "ok: a PATH python3 without matplotlib hands over to /usr/bin/python3"
fi
