#!/usr/bin/env bash
# wire_throughput.sh — what tap_wire.py itself carries, uncapped and with no delay: one TCP
# stream each way at once (as a collective's exchange), with the machine as it is, and with
# SPIN busy processes in the hosts (as MPI ranks that poll while they wait), at the wire's normal
# priority and at a real-time one (MH_WIRE_RT). Not a test: the figures behind docs/scaling.md's
# "the wire itself". usage: wire_throughput.sh [MIB (32)] [SPIN (4)]   (as root)
set -euo pipefail
MIB="${1:-32}"
SPIN="${2:-4}"
source "$(dirname "$0")/hosts.sh"
SPINNERS=()
cleanup() {
  local p
  for p in "${SPINNERS[@]}"; do kill "$p" 2>/dev/null || true; done
  mh_teardown
}
trap cleanup EXIT
mh_setup
PROBE="$MH_DIR/link_probe.py"
both_ways() {  # prints "a->b b->a" Mbit/s
  ip netns exec "$MH_NS_B" timeout 120 python3 "$PROBE" sink 7010 100 & local s1=$!
  ip netns exec "$MH_NS_A" timeout 120 python3 "$PROBE" sink 7011 100 & local s2=$!
  sleep 0.3
  ip netns exec "$MH_NS_A" timeout 120 python3 "$PROBE" stream "$MH_HOST_B" 7010 "$MIB" >"$MH_WIRE_STATE/ab" & local c1=$!
  ip netns exec "$MH_NS_B" timeout 120 python3 "$PROBE" stream "$MH_HOST_A" 7011 "$MIB" >"$MH_WIRE_STATE/ba" & local c2=$!
  wait "$c1" "$c2" "$s1" "$s2"
  echo "$(cat "$MH_WIRE_STATE/ab") $(cat "$MH_WIRE_STATE/ba")"
}
for rt in 0 1; do
  MH_WIRE_RT=$rt mh_use_wire 0 0 0
  echo "rt=$rt spinners=0 load $(cut -d' ' -f1-3 /proc/loadavg): $(both_ways)"
  for i in $(seq "$SPIN"); do
    ns=$([ $((i % 2)) = 0 ] && echo "$MH_NS_A" || echo "$MH_NS_B")
    ip netns exec "$ns" timeout 60 sh -c 'while :; do :; done' & SPINNERS+=($!)
  done
  echo "rt=$rt spinners=$SPIN load $(cut -d' ' -f1-3 /proc/loadavg): $(both_ways)"
  for p in "${SPINNERS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${SPINNERS[@]}" 2>/dev/null || true
  SPINNERS=()
done
