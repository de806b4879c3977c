#!/usr/bin/env bash
# test_plan_step_time.sh — `farthing plan --interconnect` (the scaling model, docs/scaling.md) as a
# user runs it, on presets (no weights needed):
#  - Llama-3.1-8B on 8 ranks over NVLink from FLOPs: three stages; the ring volumes order them
#    (stage 1 sends 10P·7/8 bytes, stage 3 8P·7/8, stage 2 6P·7/8); overlapping is never slower;
#    at world size 1 nothing is sent;
#  - a profile measured by `farthing bench dist --out` (stories260k, np 1) predicts the recipe's
#    steps; one of another shape or another model is refused naming both; its links mean nothing
#    at np 1;
#  - a described link shared by --ranks-per-node ranks takes longer for the same bytes;
#  - bad input is one error line naming what was wrong, exit 1.
# usage: test_plan_step_time.sh FARTHING_BINARY PROJECT_DIR
set -u
farthing="$1"
project="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMP_WAIT_POLICY=passive
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: python3 absent (reads plan's JSON)"; exit 77; }
recipe8b="$project/recipes/llama3_1/8b_full_sharded.yaml"
stories="$project/recipes/stories/260k_full_single_device.yaml"

"$farthing" plan "$recipe8b" --preset llama3.1-8b --world-size 8 --interconnect nvlink --compute-tflops 400 --json \
  > "$tmp/8b.json" 2> "$tmp/err" || { cat "$tmp/err"; fail "plan --interconnect nvlink exited non-zero"; }
python3 - "$tmp/8b.json" <<'PY' || fail "the 8B step-time figures are wrong (above)"
import json, sys
st = json.load(open(sys.argv[1]))["step_time"]
rows = {r["stage"]: r for r in st["stages"]}
assert sorted(rows) == [1, 2, 3], rows.keys()
sent = {s: rows[s]["bytes_sent_per_rank"] for s in rows}
assert sent[1] > sent[3] > sent[2] > 0, sent
for s, r in rows.items():
    assert r["comm_seconds"] > 0 and r["compute_seconds"] > 0, r
    assert r["overlapped"]["step_seconds"] <= r["serial"]["step_seconds"], r
    assert abs(r["serial"]["exposed_seconds"] - r["comm_seconds"]) <= 1e-9 * r["comm_seconds"], r
print("ok: 8B on 8x nvlink:", {s: round(r["serial"]["tokens_per_s_per_rank"]) for s, r in rows.items()}, "tok/s/rank serial")
PY
"$farthing" plan "$recipe8b" --preset llama3.1-8b --world-size 1 --interconnect ib200 --compute-tflops 400 --json \
  > "$tmp/one.json" || fail "plan at world size 1 exited non-zero"
python3 -c "
import json, sys
rows = json.load(open('$tmp/one.json'))['step_time']['stages']
assert all(r['bytes_sent_per_rank'] == 0 and r['comm_seconds'] == 0 for r in rows), rows
" || fail "world size 1 sends bytes"
echo "ok: world size 1 sends nothing"

# A measured profile: stories260k at micro_batch 1 x seq 32, np 1.
"$farthing" bench dist --preset stories260k --seq 32 --batch 1 --out "$tmp/np1.json" > /dev/null ||
  fail "bench dist --out exited non-zero"
"$farthing" plan "$stories" --preset stories260k --set data.seq_len=32 --set train.micro_batch=1 --world-size 4 \
  --interconnect eth100 --profile "$tmp/np1.json" > "$tmp/table" 2> "$tmp/err" || { cat "$tmp/err"; fail "plan --profile exited non-zero"; }
grep -q "measured by farthing bench dist on stories260k at np 1" "$tmp/table" || { cat "$tmp/table"; fail "the table does not name its profile"; }
echo "ok: a measured profile predicts: $(grep -E '^2\*? ' "$tmp/table")"

# A described link shared by two ranks a node (8B over 1 Gbit/s, where the bytes dominate): each
# rank sends the same bytes, but a node's link carries its two ranks' blocks for the other node,
# 2·2 blocks of a 4-rank collective where a link of one's own carries 3, so the communication
# takes 4/3 as long, less the latencies the node's own exchanges save.
for h in 1 2; do
  "$farthing" plan "$recipe8b" --preset llama3.1-8b --world-size 4 --interconnect link:1gbit:1ms --ranks-per-node "$h" \
    --compute-tflops 400 --json > "$tmp/h$h.json" || fail "plan --ranks-per-node $h exited non-zero"
done
python3 - "$tmp/h1.json" "$tmp/h2.json" <<'PY' || fail "--ranks-per-node does not share the node's link (above)"
import json, sys
one, two = (json.load(open(f))["step_time"] for f in sys.argv[1:])
assert one["ranks_per_node"] == 1 and two["ranks_per_node"] == 2, (one["ranks_per_node"], two["ranks_per_node"])
for a, b in zip(one["stages"], two["stages"]):
    assert a["bytes_sent_per_rank"] == b["bytes_sent_per_rank"], (a, b)
    ratio = b["comm_seconds"] / a["comm_seconds"]
    assert 1.30 < ratio < 4 / 3, (a["stage"], a["comm_seconds"], b["comm_seconds"], ratio)
print("ok: two ranks a node:", [round(b["comm_seconds"] / a["comm_seconds"], 4) for a, b in zip(one["stages"], two["stages"])],
      "times the communication of a link each")
PY

# One error line, exit 1, naming what was wrong.
expect_error() {  # expect_error WHAT PATTERN -- ARGS...
  local what="$1" pattern="$2"; shift 3
  if "$farthing" plan "$@" > "$tmp/out" 2> "$tmp/err"; then fail "$what: exit 0"; fi
  [ "$(wc -l < "$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "$what: not one line"; }
  grep -q -- "$pattern" "$tmp/err" || { cat "$tmp/err"; fail "$what: does not say '$pattern'"; }
  echo "ok: $what -> $(cat "$tmp/err")"
}
expect_error "unknown interconnect" "infiniband.*nvlink, ib400, ib200, eth100" -- "$recipe8b" --preset llama3.1-8b \
  --world-size 8 --interconnect infiniband --compute-tflops 400
expect_error "no compute" "needs the compute" -- "$recipe8b" --preset llama3.1-8b --world-size 8 --interconnect nvlink
expect_error "compute without links" "need --interconnect" -- "$recipe8b" --preset llama3.1-8b --compute-tflops 400
expect_error "negative rate" "--compute-tflops '-3'" -- "$recipe8b" --preset llama3.1-8b --interconnect nvlink \
  --compute-tflops -3
expect_error "missing profile" "$tmp/absent.json" -- "$stories" --preset stories260k --interconnect nvlink \
  --profile "$tmp/absent.json"
expect_error "profile of another shape" "micro_batch 1 x seq_len 32, but the recipe has 16 x 256" -- "$stories" \
  --preset stories260k --interconnect nvlink --profile "$tmp/np1.json"
expect_error "profile of another model" "but the recipe's model .* has" -- "$recipe8b" --preset llama3.1-8b \
  --set data.seq_len=32 --set train.micro_batch=1 --interconnect nvlink --profile "$tmp/np1.json"
expect_error "links measured at np 1" "world size 1" -- "$stories" --preset stories260k --set data.seq_len=32 \
  --set train.micro_batch=1 --interconnect "$tmp/np1.json" --profile "$tmp/np1.json"
expect_error "ranks per node on a preset" "ranks-per-node goes with --interconnect link" -- "$stories" \
  --preset stories260k --set data.seq_len=32 --set train.micro_batch=1 --world-size 4 --interconnect eth100 \
  --ranks-per-node 2 --profile "$tmp/np1.json"
expect_error "a partial node" "not a whole number of nodes" -- "$stories" --preset stories260k --set data.seq_len=32 \
  --set train.micro_batch=1 --world-size 3 --interconnect link:1gbit:1ms --ranks-per-node 2 --profile "$tmp/np1.json"
echo "PASS"
