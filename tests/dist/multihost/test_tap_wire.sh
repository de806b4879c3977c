#!/usr/bin/env bash
# test_tap_wire.sh — the harness's userspace link (tap_wire.py) does what a case asks of it:
#  - delay: 10 ms each way gives a round trip of at least 20 ms (UDP echo, link_probe.py), and the
#    veth it replaces answers far sooner;
#  - loss: at 5% the wire's own counts drop 5% of the frames (within 4 standard deviations of
#    the binomial), and the echo sees the losses;
#  - rate: a 20 Mbit/s cap holds a TCP stream to at most that;
#  - cut: SIGUSR1 drops everything, SIGUSR2 mends the link.
# Skips (77) without root or network namespaces. Argument: none needed.
set -euo pipefail
source "$(dirname "$0")/hosts.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
trap 'mh_teardown' EXIT
mh_setup
PROBE="$MH_DIR/link_probe.py"
field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
# await_ready FILE PID: waits (at most 30 s) until the server PID has created FILE.
await_ready() {
  local i
  for i in $(seq 300); do
    [ -e "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || fail "the probe's server ended before it was ready"
    sleep 0.1
  done
  fail "the probe's server was not ready within 30 s"
}
# probe_ping COUNT GAP [WAIT]: UDP echo from host a to host b, each answer awaited WAIT s (1 s:
# these checks count deliveries, and a loaded machine may answer late).
probe_ping() {
  local ready
  ready="$(mktemp -u "${TMPDIR:-/tmp}/tap-wire-echo.XXXXXX")"
  ip netns exec "$MH_NS_B" python3 "$PROBE" echo 7007 60 "$ready" &
  local server=$!
  await_ready "$ready" "$server"
  rm -f "$ready"
  ip netns exec "$MH_NS_A" python3 "$PROBE" ping "$MH_HOST_B" 7007 "$1" "$2" "${3:-1}"
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
}

veth="$(probe_ping 20 0.01)"
[ "$(field "$veth" received)" = 20 ] || fail "veth: echo lost datagrams: $veth"
echo "veth: $veth"

# Delay and loss. 500 echoes = about 1000 frames through the wire at 5% loss each.
mh_use_wire 10 0.05 0
# An answer later than 0.25 s counts as lost here, which is harmless: the loss is judged on the
# wire's own frame counts, and the echo only has to lose something and be no faster than the delay.
lossy="$(probe_ping 500 0.002 0.25)"
mh_stop_wire
stats="$(cat "$MH_WIRE_STATS")"
echo "wire 10 ms, 5% loss: $lossy; frames: $stats"
python3 - "$lossy" "$stats" <<'EOF' || fail "the wire's delay or loss is not what was asked"
import json, math, sys
ping, stats = json.loads(sys.argv[1]), json.loads(sys.argv[2])
read = sum(w["read"] for w in stats.values())
dropped = sum(w["dropped_loss"] for w in stats.values())
p, sd = 0.05, math.sqrt(0.05 * 0.95 / read)
loss = dropped / read
print(f"measured loss {100 * loss:.2f}% of {read} frames (asked 5%, sd {100 * sd:.2f}%); "
      f"echo rtt min {ping['rtt_min_ms']} ms (asked 2 x 10 ms)")
ok = True
if read < 900:
    print(f"only {read} frames crossed the wire"); ok = False
if abs(loss - p) > 4 * sd:
    print(f"loss {loss:.4f} is not 0.05 within 4 sd"); ok = False
if ping["received"] >= ping["sent"]:
    print("the echo lost nothing"); ok = False
if ping["rtt_min_ms"] is None or ping["rtt_min_ms"] < 20.0:
    print(f"round trip {ping['rtt_min_ms']} ms is shorter than the 20 ms of delay"); ok = False
sys.exit(0 if ok else 1)
EOF

# Rate cap: 8 MiB through a 20 Mbit/s wire (no delay, no loss).
mh_use_wire 0 0 20
ready="$(mktemp -u "${TMPDIR:-/tmp}/tap-wire-sink.XXXXXX")"
ip netns exec "$MH_NS_B" python3 "$PROBE" sink 7008 60 "$ready" &
sink=$!
await_ready "$ready" "$sink"
rm -f "$ready"
capped="$(ip netns exec "$MH_NS_A" python3 "$PROBE" stream "$MH_HOST_B" 7008 8)"
wait "$sink" || fail "the TCP sink failed"
echo "wire capped at 20 Mbit/s: $capped"
awk -v r="$(field "$capped" mbit_per_s)" 'BEGIN { exit !(r <= 20 * 1.05) }' \
  || fail "a 20 Mbit/s wire carried $capped"

# Cut and mended.
kill -USR1 "$MH_WIRE_PID"
cut="$(probe_ping 5 0.01 0.25)"
kill -USR2 "$MH_WIRE_PID"
mended="$(probe_ping 5 0.01)"
echo "cut: $cut; mended: $mended"
[ "$(field "$cut" received)" = 0 ] || fail "the cut wire still carried frames: $cut"
[ "$(field "$mended" received)" = 5 ] || fail "the mended wire lost frames: $mended"

mh_use_veth
back="$(probe_ping 5 0.01)"
[ "$(field "$back" received)" = 5 ] || fail "veth after the wire: $back"
echo "ok: the wire delays, drops, caps and cuts as asked; the veth link is back"
