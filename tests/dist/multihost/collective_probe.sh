#!/usr/bin/env bash
# collective_probe.sh — single collectives over tap_wire.py, as farthing's MPI communicator issues
# them (collective_probe.c), against the scaling model's link cost. Not a test (not in CI): the
# figures behind docs/scaling.md's "single collectives over the wire".
#   usage: collective_probe.sh OUT_DIR      (as root; writes OUT_DIR/probe-RATE-DELAY-npN-gG.jsonl)
#   LINKS ("1000:1 200:5": Mbit/s:one-way ms), WORLDS ("2:1:1 4:2:2": np:ranks on a:ranks on b),
#   SIZES ("4096 16777216": the smallest and largest gathered bytes, by factors of 4), REPS (5),
#   GAPS ("0 500": ms the link stays idle before each sample), CHAIN (1: collectives back to back
#   per sample), START (plain; trainer: MPI started as farthing's communicator starts it; ungreeted: the
#   same without its first zero-byte exchange between every pair) override
#   the matrix.
set -euo pipefail
OUT="$1"
LINKS="${LINKS:-1000:1 200:5}"
WORLDS="${WORLDS:-2:1:1 4:2:2}"
SIZES="${SIZES:-4096 16777216}"
REPS="${REPS:-5}"
GAPS="${GAPS:-0 500}"
CHAIN="${CHAIN:-1}"
START="${START:-plain}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MH_WIRE_LIFETIME_S="${MH_WIRE_LIFETIME_S:-7200}"
# The wire at a real-time priority: ranks that spin while they wait would otherwise starve it
# (wire_throughput.sh), and the link would be slower than the one described.
export MH_WIRE_RT="${MH_WIRE_RT:-1}"
# The ranks yield their core while they wait (scaling_table.sh says why); MH_RANK_SPIN=1: they spin.
if [ "${MH_RANK_SPIN:-0}" != 1 ]; then
  export OMPI_MCA_mpi_yield_when_idle=1
  MH_EXPORT="${MH_EXPORT:-} OMPI_MCA_mpi_yield_when_idle"
fi
# Two TCP connections per pair of ranks (docs/multinode.md recommends it for MPI over TCP): over
# one, an exchange of MiB-sized messages both ways at once runs at about half the link's rate.
# MH_TCP_LINKS=1 measures Open MPI's default.
export OMPI_MCA_btl_tcp_links="${MH_TCP_LINKS:-2}"
MH_EXPORT="${MH_EXPORT:-} OMPI_MCA_btl_tcp_links"
source "$(dirname "$0")/hosts.sh"
trap 'mh_teardown' EXIT
mkdir -p "$OUT"
mpicc -O2 -o "$OUT/collective_probe" "$MH_DIR/collective_probe.c"
mh_setup
echo "machine: $(getconf _NPROCESSORS_ONLN) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/machine.txt"
read -r lo hi <<<"$SIZES"
for link in $LINKS; do
  rate="${link%%:*}" delay="${link#*:}"
  mh_use_wire "$delay" 0 "$rate"
  for world in $WORLDS; do
    IFS=: read -r np on_a on_b <<<"$world"
    mh_hostfile "$OUT/hosts-$world" "$on_a" "$on_b"
    for gap in $GAPS; do
      name="probe-$rate-$delay-np$np-g$gap-c$CHAIN-$START"
      echo "$name: load before $(cut -d' ' -f1-3 /proc/loadavg)"
      mh_mpirun_command "$OUT/hosts-$world" "$np" "$OUT/collective_probe" "$lo" "$hi" "$REPS" "$gap" "$CHAIN" "$START"
      timeout 1800 "${MH_COMMAND[@]}" >"$OUT/$name.jsonl" 2>"$OUT/$name.err" || { echo "FAIL: $name (see $OUT/$name.err)" >&2; exit 1; }
      echo "$name: load after $(cut -d' ' -f1-3 /proc/loadavg)"
    done
  done
done
