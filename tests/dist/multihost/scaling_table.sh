#!/usr/bin/env bash
# scaling_table.sh — the scaling model (`farthing plan --interconnect link:RATE:LATENCY`) against
# step times measured across the two simulated hosts over tap_wire.py at that rate and delay.
# Not a test (no pass/fail, not in CI): it needs a quiet machine and takes long. The table it
# prints goes in docs/scaling.md.
#   usage: scaling_table.sh FARTHING SOURCE_DIR OUT_DIR      (as root; OUT_DIR keeps every run's JSON)
#   PRESET (gpt2-124m), SEQ (32: MiB-sized collectives, short steps), REPS (3),
#   LINKS ("1000:1 200:5": Mbit/s:one-way ms), WORLDS ("2:1:1 4:2:2": np:ranks on a:ranks on b),
#   BUCKETS ("0 4096": distributed.reduce_bucket_mib) override the matrix. SUMMARY_ONLY=1 runs
#   nothing: it plans again from OUT_DIR's np1.json (after a change to the model) and prints the
#   table of the runs already there.
# Each point: `farthing bench dist` (stages 1-3, 5 steps after a warm-up, one thread per rank)
# under mpirun over the wire, REPS times; the prediction: `farthing plan` from np 1's profile
# (bench dist --out, measured in the root namespace), serial schedule for bucket 0, overlapped
# for a bucket that holds a pass's reductions (docs/scaling.md).
# The wire's delay is each step's latency: one message one way per step. Each host has one wire,
# which its ranks share: the plan is told the ranks per node (--ranks-per-node), and their traffic
# to each other stays on the host.
# The ranks yield their core while they wait (mpi_yield_when_idle): two hosts on two cores, with
# spinning ranks, delay the kernel's network work and the wire by up to a time slice per message,
# which a real host with its own cores does not (docs/scaling.md). MH_RANK_SPIN=1 keeps them spinning.
set -euo pipefail
FARTHING="$1"
SRC="$2"
OUT="$3"
PRESET="${PRESET:-gpt2-124m}"
SEQ="${SEQ:-32}"
REPS="${REPS:-3}"
LINKS="${LINKS:-1000:1 200:5}"
WORLDS="${WORLDS:-2:1:1 4:2:2}"
BUCKETS="${BUCKETS:-0 4096}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
# The wire ends itself after MH_WIRE_LIFETIME_S (hosts.sh: 15 min by default); the whole matrix
# takes hours.
export MH_WIRE_LIFETIME_S="${MH_WIRE_LIFETIME_S:-28800}"
# The wire at a real-time priority: ranks that spin while they wait for MPI would otherwise take
# its core, and the link would carry less than its rate (wire_throughput.sh).
export MH_WIRE_RT="${MH_WIRE_RT:-1}"
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
SUMMARY_ONLY="${SUMMARY_ONLY:-0}"
if [ "$SUMMARY_ONLY" != 1 ]; then
  trap 'mh_teardown' EXIT
  mkdir -p "$OUT"
  mh_setup
fi
RECIPE="$SRC/recipes/gpt2/124m_full_single_device.yaml"
# The recipe as bench dist runs it: 1 x SEQ tokens, one micro-batch a step, fp32 compute,
# 8-bit AdamW + SR, no master copy.
AS_BENCH=(--set data.seq_len="$SEQ" --set train.micro_batch=1 --set train.grad_accum=1 --set train.precision=fp32
          --set optimizer.state=8bit --set optimizer.master=none --set optimizer.weight_rounding=stochastic)
if [ "$SUMMARY_ONLY" != 1 ]; then
  echo "machine: $(getconf _NPROCESSORS_ONLN) cores, load $(cut -d' ' -f1-3 /proc/loadavg); commit $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo ?)" | tee "$OUT/machine.txt"
  "$FARTHING" bench dist --preset "$PRESET" --seq "$SEQ" --batch 1 --out "$OUT/np1.json" --json >"$OUT/np1-rows.json"
fi
for link in $LINKS; do
  rate="${link%%:*}" delay="${link#*:}"
  [ "$SUMMARY_ONLY" = 1 ] || mh_use_wire "$delay" 0 "$rate"
  for world in $WORLDS; do
    IFS=: read -r np on_a on_b <<<"$world"
    "$FARTHING" plan "$RECIPE" --preset "$PRESET" "${AS_BENCH[@]}" --world-size "$np" --ranks-per-node "$((on_a > on_b ? on_a : on_b))" \
      --interconnect "link:${rate}mbit:${delay}ms" --profile "$OUT/np1.json" --json >"$OUT/plan-$rate-$delay-np$np.json"
    [ "$SUMMARY_ONLY" = 1 ] && continue
    mh_hostfile "$OUT/hosts-$world" "$on_a" "$on_b"
    for bucket in $BUCKETS; do
      for rep in $(seq "$REPS"); do
        name="run-$rate-$delay-np$np-b$bucket-r$rep"
        mh_mpirun "$OUT/hosts-$world" "$np" "$FARTHING" bench dist --preset "$PRESET" --seq "$SEQ" --batch 1 \
          --profile "$OUT/np1.json" --reduce-bucket-mib "$bucket" --json >"$OUT/$name.json" 2>"$OUT/$name.err"
        echo "$name: $(cut -d' ' -f1-3 /proc/loadavg) load after"
      done
    done
  done
done
[ "$SUMMARY_ONLY" = 1 ] || mh_use_veth

python3 - "$OUT" "$LINKS" "$WORLDS" "$BUCKETS" "$REPS" <<'EOF'
import json, statistics, sys
out, links, worlds, buckets, reps = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split(), int(sys.argv[5])
# model (own compute): each run's own slowest-rank compute (bench dist's compute_seconds) plus what
# the plan's schedule waits for communication: the link model apart from the machine's CPUs.
print("| link | world | stage | reduce_bucket_mib | measured step s: median (min-max) | comm s (rank 0, median) | "
      "plan s (np 1 profile) | vs median | model (own compute) s | vs median | plan comm s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for link in links:
    rate, delay = link.split(":")
    for world in worlds:
        np_ = world.split(":")[0]
        plan = json.load(open(f"{out}/plan-{rate}-{delay}-np{np_}.json"))["step_time"]["stages"]
        for bucket in buckets:
            for stage in (1, 2, 3):
                rows = []
                for rep in range(1, reps + 1):
                    rows += [r for r in json.load(open(f"{out}/run-{rate}-{delay}-np{np_}-b{bucket}-r{rep}.json"))
                             if r["stage"] == stage and r["rank"] == 0]
                steps = [r["step_seconds"] for r in rows]
                schedule = "serial" if float(bucket) == 0 else "overlapped"
                p = next(s for s in plan if s["stage"] == stage)
                predicted, exposed = p[schedule]["step_seconds"], p[schedule]["exposed_seconds"]
                own = statistics.median(r["compute_seconds"] + exposed for r in rows)
                median = statistics.median(steps)
                comm = statistics.median(r["measured_comm_seconds"] for r in rows)
                print(f"| {rate} Mbit/s + {delay} ms | np {np_} ({world.split(':', 1)[1].replace(':', '+')}) | {stage} | {bucket} | "
                      f"{median:.3f} ({min(steps):.3f}-{max(steps):.3f}) | {comm:.3f} | {predicted:.3f} ({schedule}) | "
                      f"{100 * (predicted / median - 1):+.0f}% | {own:.3f} | {100 * (own / median - 1):+.0f}% | {exposed:.3f} |")
EOF
