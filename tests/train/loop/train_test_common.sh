# train_test_common.sh — shared by the trainer's CLI tests (sourced). Arguments of every test:
#   $1 farthing binary  $2 shared folder (../shared)  $3 project source dir
# Runs on stories260K from ../shared (skips with exit 77 when it is absent), with shapes small
# enough for a shared 2-core machine. OMP_WAIT_POLICY=passive: ctest runs tests side by side,
# and spinning OpenMP threads on oversubscribed cores slow a step down a hundredfold.
set -euo pipefail
FARTHING="$1"
SHARED="$2"
SRC="$3"
export OMP_WAIT_POLICY=passive
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
if [ ! -f "$SHARED/models/stories260K/stories260K.bin" ]; then
  echo "SKIP: $SHARED/models/stories260K not found (the shared reference folder is absent)"
  exit 77
fi
WORK="$(mktemp -d /tmp/farthing_train_test.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
RECIPE="$SRC/recipes/stories/260k_full_single_device.yaml"
# The first 256 KiB of tinyshakespeare (about 90k tokens, hundreds of steps of these shapes):
# every farthing process tokenizes its data, and the whole 1.1 MB costs seconds a process under
# the sanitizers' allocation tracking, for no coverage the tests need (test_dataset_shared loads
# all of it).
head -c 262144 "$SHARED/text/tinyshakespeare.txt" >"$WORK/shakespeare_256k.txt"
# Small shapes: 4 sequences of 64 tokens per micro-batch, 6 steps.
SMALL=(--set "model.path=$SHARED/models/stories260K/stories260K.bin"
       --set "model.tokenizer=$SHARED/models/stories260K/tok512.bin"
       --set "data.train=$WORK/shakespeare_256k.txt"
       --set train.micro_batch=4 --set data.seq_len=64 --set train.steps=6 --set schedule.warmup_steps=2
       --set train.eval_batches=2 --set train.eval_every=0 --set checkpoint.save_every=0 --quiet)

fail() { echo "FAIL: $*" >&2; exit 1; }
# The "loss" values of every training record of a metrics.jsonl, one per line.
losses() { grep -o '"loss":[^,}]*' "$1"; }
# Two checkpoints hold the same state: every dataset (and its checksum attribute) equal, and
# every root attribute that describes the state — the stored recipe (it names the run
# directory) and the writer's world size (informational) aside.
root_attribute() { h5dump -a "/$2" "$1" | awk '/DATA/ { getline; print; exit }'; }
same_checkpoint() {
  h5diff --exclude-path /recipe --exclude-attribute / "$1" "$2" >/dev/null \
    || fail "checkpoints differ: $1 $2 ($(h5diff --exclude-path /recipe --exclude-attribute / "$1" "$2" | head -5))"
  local a
  for a in farthing_format_version step optimizer_steps data_position tokens_seen skipped_steps loss_scale \
           loss_scale_clean_steps seed; do
    [ "$(root_attribute "$1" $a)" = "$(root_attribute "$2" $a)" ] || fail "checkpoint attribute $a differs: $1 $2"
    [ -n "$(root_attribute "$1" $a)" ] || fail "checkpoint attribute $a missing in $1"
  done
}
# Runs a command that must fail: non-zero exit and stderr containing every given text.
expect_error() {
  local what="$1"; shift
  local -a needles=()
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done
  shift
  local out rc=0
  out="$("$@" 2>&1)" || rc=$?
  [ "$rc" -ne 0 ] || fail "$what: exit 0, expected an error; output: $out"
  for n in "${needles[@]}"; do
    grep -qF -- "$n" <<<"$out" || fail "$what: message lacks '$n'; got: $out"
  done
  echo "ok: $what -> $(head -1 <<<"$out" | cut -c1-160)"
}
