# hosts.sh — two simulated hosts for mpirun, sourced by the multihost tests.
# Each host is a network namespace; one veth pair joins them on a private /24 that nothing else on
# the machine uses (10.213.47.0/24): host a = 10.213.47.1 (namespace fth34-a), host b =
# 10.213.47.2 (fth34-b). The root namespace gets no address or route (the wire's TAP devices are
# made there and moved into the hosts at once): all traffic stays between the two link ends and
# each namespace's loopback. mpirun runs inside host a (the
# head node, as on a cluster's first allocated node) and starts its daemon on host b through
# rsh_agent.sh, which maps the address to the namespace. Both hosts share the filesystem, as
# nodes share a parallel filesystem: one run directory for every rank.
# MPI is TCP only and kept to the veth subnet: the byte transfer layer (btl tcp,self: no shared
# memory even between the ranks of one host) and the runtime's out-of-band channel (oob).
# Skips (exit 77) where namespaces cannot be made: not root, no `ip`, or `ip netns add` refused.
# The link: the veth pair by default. mh_use_wire swaps it for tap_wire.py, a userspace wire
# between two TAP devices of the same names (delay, loss, rate cap, cut; the kernel has no netem);
# mh_use_veth swaps back. Static ARP entries on both link kinds: a dropped ARP frame would
# otherwise cost a 1 s retry.
# MH_PREFIX and MH_NET (both set, or neither) give another pair of names and subnet, for a run
# beside the harness's (the scaling table while the multihost tests run).
MH_NET=${MH_NET:-10.213.47}
MH_HOST_A=$MH_NET.1
MH_HOST_B=$MH_NET.2
MH_NS_A=${MH_PREFIX:-fth34}-a
MH_NS_B=${MH_PREFIX:-fth34}-b
MH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

mh_skip() { echo "SKIP: $*"; exit 77; }

mh_teardown() {
  mh_stop_wire
  [ -z "${MH_WIRE_STATE:-}" ] || rm -rf "$MH_WIRE_STATE"
  # What still runs in a host (a failed test's mpirun, a daemon left by a lost job) goes with it.
  local ns pids
  for ns in "$MH_NS_A" "$MH_NS_B"; do
    [ -e "/run/netns/$ns" ] || continue
    pids="$(ip netns pids "$ns" 2>/dev/null || true)"
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
  done
  # Deleting a namespace deletes its veth end, and with it the pair.
  ip netns del "$MH_NS_A" 2>/dev/null || true
  ip netns del "$MH_NS_B" 2>/dev/null || true
}

# Makes the two hosts; the caller's EXIT trap must call mh_teardown.
mh_setup() {
  [ "$(id -u)" -eq 0 ] || mh_skip "multihost tests need root to make network namespaces (ip netns add)"
  command -v ip >/dev/null || mh_skip "multihost tests need iproute2's ip (apt-get install iproute2)"
  mh_teardown  # what a killed earlier run of this test left behind (only these exact names)
  ip netns add "$MH_NS_A" 2>/dev/null || mh_skip "ip netns add refused (no CAP_SYS_ADMIN in this container?)"
  ip netns add "$MH_NS_B" || mh_skip "ip netns add refused"
  ip link add "$MH_NS_A" type veth peer name "$MH_NS_B" || mh_skip "ip link add type veth refused"
  mh_place_link
  ip -n "$MH_NS_A" link set lo up  # Open MPI's local channels (PMIx) use loopback inside a host
  ip -n "$MH_NS_B" link set lo up
  export FARTHING_MULTIHOST_NETNS="$MH_HOST_A=$MH_NS_A $MH_HOST_B=$MH_NS_B"
  echo "hosts: a = $MH_HOST_A (netns $MH_NS_A), b = $MH_HOST_B (netns $MH_NS_B), veth $MH_NS_A <-> $MH_NS_B"
}

# Moves the link's two ends (devices named $MH_NS_A and $MH_NS_B in the root namespace) into the
# hosts, addresses them, brings them up and pins each side's ARP entry for the other.
mh_place_link() {
  ip link set "$MH_NS_A" netns "$MH_NS_A"
  ip link set "$MH_NS_B" netns "$MH_NS_B"
  ip -n "$MH_NS_A" addr add "$MH_HOST_A/24" dev "$MH_NS_A"
  ip -n "$MH_NS_B" addr add "$MH_HOST_B/24" dev "$MH_NS_B"
  ip -n "$MH_NS_A" link set "$MH_NS_A" up
  ip -n "$MH_NS_B" link set "$MH_NS_B" up
  local mac_a mac_b
  mac_a="$(ip netns exec "$MH_NS_A" cat "/sys/class/net/$MH_NS_A/address")"
  mac_b="$(ip netns exec "$MH_NS_B" cat "/sys/class/net/$MH_NS_B/address")"
  ip -n "$MH_NS_A" neigh replace "$MH_HOST_B" lladdr "$mac_b" dev "$MH_NS_A" nud permanent
  ip -n "$MH_NS_B" neigh replace "$MH_HOST_A" lladdr "$mac_a" dev "$MH_NS_B" nud permanent
}

# mh_use_wire DELAY_MS LOSS RATE_MBIT [SEED]: replaces the link by tap_wire.py with that one-way
# delay, loss fraction and rate cap (0: none), each way. Sets MH_WIRE_PID (SIGUSR1 cuts the wire,
# SIGUSR2 mends it) and MH_WIRE_STATS (its frame counts, written when it ends: mh_stop_wire).
# The wire ends itself after MH_WIRE_LIFETIME_S (default 900 s) or when this shell goes.
# MH_WIRE_RT=1 gives it a real-time priority (below).
mh_use_wire() {
  local delay_ms="$1" loss="$2" rate_mbit="$3" seed="${4:-1}" state
  mh_stop_wire
  [ -z "${MH_WIRE_STATE:-}" ] || rm -rf "$MH_WIRE_STATE"
  ip -n "$MH_NS_A" link del "$MH_NS_A" 2>/dev/null || true  # the veth pair, both ends
  state="$(mktemp -d "/tmp/${MH_PREFIX:-fth34}-wire.XXXXXX")"
  MH_WIRE_STATS="$state/stats.json"
  local -a priority=()
  # MH_WIRE_RT=1: the wire runs first whenever a frame waits (SCHED_FIFO), as a NIC forwards
  # beside busy cores; otherwise it shares them with ranks that spin while they wait for MPI.
  [ "${MH_WIRE_RT:-0}" = 1 ] && priority=(chrt -f 10)
  "${priority[@]}" python3 "$MH_DIR/tap_wire.py" --tap-a "$MH_NS_A" --tap-b "$MH_NS_B" --delay-ms "$delay_ms" --loss "$loss" \
    --rate-mbit "$rate_mbit" --queue-kb "${MH_WIRE_QUEUE_KB:-4096}" --seed "$seed" --lifetime-s "${MH_WIRE_LIFETIME_S:-900}" \
    --ready "$state/ready" --stats "$MH_WIRE_STATS" 2>"$state/stderr" &
  MH_WIRE_PID=$!
  MH_WIRE_STATE="$state"
  local i
  for i in $(seq 100); do  # 10 s
    [ -f "$state/ready" ] && break
    kill -0 "$MH_WIRE_PID" 2>/dev/null || { echo "FAIL: tap_wire.py did not start: $(cat "$state/stderr")" >&2; exit 1; }
    sleep 0.1
  done
  [ -f "$state/ready" ] || { echo "FAIL: tap_wire.py made no TAP devices within 10 s" >&2; exit 1; }
  mh_place_link
  # MH_WIRE_MTU (default 1500): the TAP devices' MTU. Jumbo frames (e.g. 9000, as HPC links use)
  # let the wire, one frame per system call, carry 1 Gbit/s; TCP then sends fewer, larger segments.
  local mtu="${MH_WIRE_MTU:-1500}"
  ip -n "$MH_NS_A" link set "$MH_NS_A" mtu "$mtu"
  ip -n "$MH_NS_B" link set "$MH_NS_B" mtu "$mtu"
  echo "link: tap_wire.py (pid $MH_WIRE_PID), $delay_ms ms each way, loss $loss, rate cap $rate_mbit Mbit/s (0: none), MTU $mtu"
}

# Ends the wire (its TAP devices go with it) and waits for its stats; no-op without one.
mh_stop_wire() {
  [ -n "${MH_WIRE_PID:-}" ] || return 0
  kill -TERM "$MH_WIRE_PID" 2>/dev/null || true
  local i
  for i in $(seq 50); do kill -0 "$MH_WIRE_PID" 2>/dev/null || break; sleep 0.1; done  # 5 s
  kill -9 "$MH_WIRE_PID" 2>/dev/null || true
  wait "$MH_WIRE_PID" 2>/dev/null || true
  MH_WIRE_PID=
}

# Ends the wire and joins the hosts by a veth pair again.
mh_use_veth() {
  mh_stop_wire
  ip link add "$MH_NS_A" type veth peer name "$MH_NS_B"
  mh_place_link
}

# mh_hostfile FILE SLOTS_A SLOTS_B: an Open MPI hostfile of the two addresses (0 slots: left out).
mh_hostfile() {
  : >"$1"
  [ "$2" -gt 0 ] && echo "$MH_HOST_A slots=$2" >>"$1"
  [ "$3" -gt 0 ] && echo "$MH_HOST_B slots=$3" >>"$1"
  return 0
}

# mh_mpirun_command HOSTFILE NP [mpirun args...] PROGRAM [args...]: sets MH_COMMAND to mpirun on
# host a over the hostfile's hosts, ranks filled host by host (ranks 0..slots_a-1 on a). Exported
# to every rank: the OpenMP settings and the variables named in MH_EXPORT (test hooks). Each
# wrapper execs the next, so a job started in the background with "${MH_COMMAND[@]}" & has $! =
# mpirun's pid (signals reach the launcher itself).
mh_mpirun_command() {
  local hostfile="$1" np="$2"; shift 2
  local -a x=(-x OMP_WAIT_POLICY)
  [[ -n ${OMP_NUM_THREADS:-} ]] && x+=(-x OMP_NUM_THREADS)
  local v
  for v in ${MH_EXPORT:-}; do x+=(-x "$v"); done
  # MH_RANK_NICE: the job's niceness (mpirun's, inherited by the daemons and ranks), e.g. -10 to
  # measure beside other work on the machine.
  local -a nice=()
  [[ -n ${MH_RANK_NICE:-} ]] && nice=(nice -n "$MH_RANK_NICE")
  MH_COMMAND=("${nice[@]}" ip netns exec "$MH_NS_A" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$MH_NS_A"
              mpirun --hostfile "$hostfile" -np "$np" --map-by slot --mca plm_rsh_agent "$MH_DIR/rsh_agent.sh"
              --mca btl tcp,self --mca btl_tcp_if_include "$MH_NET.0/24" --mca oob_tcp_if_include "$MH_NET.0/24"
              "${x[@]}" "$@")
}
# mh_mpirun HOSTFILE NP ...: runs that command in the foreground.
mh_mpirun() {
  mh_mpirun_command "$@"
  "${MH_COMMAND[@]}"
}
