// scaling_model.h — how long a training step takes on N ranks, before renting them: a step's
// compute on one rank, turn by turn (Transformer::unit_schedule; measured by step_timeline.h, or
// derived from FLOPs at a stated rate), with ZeRO's collectives placed where the trainer issues
// them, each timed by its communicator's algorithm over an interconnect (Algorithm, LinkCost).
//
// The collectives of a step, per pass (micro-batch) unless said:
//   stage 3, N > 1: every acquired unit all-gathered (forward, and again in backward; the
//     embedding and the head once): P_u elements of bf16 (fp32 when computing from the master);
//   N > 1: every unit's gradients as backward finishes it: all-reduce of its fp32 span (stage 1),
//     reduce-scatter of its P_u fp32 elements (stages 2-3);
//   once per step, stages 1-2, N > 1: the owners' new bf16 weights all-gathered (and the fp32
//     master too when the compute reads it);
//   once per step: the trainer's small all-reduces (token count, loss sums, the optimizer's two).
// A ring collective over N ranks of a buffer of B bytes (the whole, gathered size) sends
//   all-gather, reduce-scatter: (N-1)/N · B in N-1 steps;  all-reduce: 2(N-1)/N · B in 2(N-1) steps,
// and takes steps · latency · (1 + handshake trips if B/N is above the eager limit) + sent /
// bandwidth (bandwidth as nccl-tests' "busbw"). The MPI communicator over a described link sends
// the same volume per rank in fewer steps (Algorithm below).
//
// Overlap, two schedules:
//   kNone:    every collective blocks the rank: the trainer with distributed.reduce_bucket_mib
//             0, which waits for each gradient reduction and for the publication at once; its
//             ZeRO-3 gathers are prefetched and run on the MPI communicator's worker thread, so
//             they hide behind compute only where a core is free for that thread (none is when
//             the ranks fill the cores, as in the checks of docs/scaling.md);
//   kStreams: one communication stream beside the compute, in issue order: a prefetched gather
//             runs during the turn that prefetched it, reductions are issued as backward
//             finishes each unit and waited for when the pass's backward ends: the trainer with
//             a reduce bucket that holds a whole pass's reductions (on the CPU, the MPI worker
//             thread is the stream; on GPUs, NCCL's stream, not run yet). A smaller bucket waits
//             sooner, which this does not model. The compute is assumed not to slow down beside
//             the transfers.
// Relies on: framework/dist/zero_layout.h, models/common/transformer.h, step_timeline.h.
// Tested by: tests/train/plan/test_scaling_model.cpp; checked against `farthing bench dist`'s
// measurements at np 2 and 3 (docs/scaling.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "framework/dist/zero_layout.h"
#include "train/loop/step_timeline.h"
#include "models/common/transformer.h"

namespace farthing::train {

enum class Collective : uint8_t { kAllGather, kReduceScatter, kAllReduce };

// How a communicator moves a collective's blocks (B bytes gathered, N ranks, blocks of B/N):
//   kRing:               N-1 steps (2(N-1) for all-reduce), one block per rank each: NCCL, the
//                        presets, and what `bench dist` fits;
//   kAllToAll:           every rank sends its N-1 blocks at once, one step: the MPI
//                        communicator's reduce-scatter (MPI_Alltoall, then a local sum in rank
//                        order); its all-reduce is that, then the all-gather below;
//   kRecursiveDoubling:  the MPI communicator's all-gather (MPI_Allgather, which Open MPI 4.1
//                        runs by recursive doubling below 32 ranks): log2(N) steps, the rank d
//                        away exchanging the d blocks gathered so far.
enum class Algorithm : uint8_t { kRing, kAllToAll, kRecursiveDoubling };

// One collective's cost: latency per step and bandwidth (bytes/s) of each rank's link, or of
// each node's link when `ranks_per_node` ranks share it. A transport with a rendezvous protocol
// sends a message above its eager limit only after a handshake (a request to send, a
// clear-to-send back): `handshake_trips` more one-way latencies for each step whose message is
// above `eager_limit_bytes`. 0 trips: no handshake.
// Ranks of one node (numbered node by node, as mpirun fills nodes) talk to each other without
// the link, and their steps among themselves cost nothing here. A node's link carries what its
// ranks send to other nodes: in an all-to-all, H·(N-H) blocks at once; in recursive doubling,
// H·d blocks at each step whose distance d reaches another node. (Exact for N and H powers of
// two.) The ring is for one rank per link.
struct LinkCost {
  double latency_s = 0.0;
  double bytes_per_s = 0.0;
  double eager_limit_bytes = 0.0;
  int handshake_trips = 0;
  Algorithm algorithm = Algorithm::kRing;
  int ranks_per_node = 1;
};

struct Interconnect {
  std::string name;
  std::string source;  // where the figures come from, in words
  LinkCost all_gather, reduce_scatter, all_reduce;
  const LinkCost& of(Collective c) const;
};

// nvlink, ib400, ib200, eth100, or link:RATE:LATENCY (RATE in gbit or mbit per second of each
// host's link, LATENCY in ms or us one way, e.g. link:1gbit:1ms; carried by the MPI communicator
// over TCP: its all-to-all reductions, and the rendezvous above the eager limit), with
// `ranks_per_node` ranks behind each host's link (only a described link takes more than 1);
// throws naming the choices otherwise.
Interconnect interconnect_preset(std::string_view name, int ranks_per_node = 1);
inline constexpr const char* kInterconnectNames = "nvlink, ib400, ib200, eth100";

int ring_steps(Collective c, int world);
double ring_bytes_sent(Collective c, double bytes, int world);  // per rank
double collective_seconds(Collective c, double bytes, int world, const LinkCost& link);

// Fits latency and bandwidth to measured (bytes, seconds) samples of one collective at `world`
// ranks: least squares of seconds = steps · latency + sent / bandwidth over the samples' sizes.
LinkCost fit_link(Collective c, int world, const std::vector<std::pair<double, double>>& bytes_seconds);

enum class Overlap : uint8_t { kNone, kStreams };

// What a step's ZeRO does, and at what size.
struct ZeroSetup {
  int zero_stage = 1;
  bool gather_f32 = false;            // compute reads the fp32 master: gathers move fp32
  bool optimizer_in_backward = false; // the optimizer's time is inside the turns
};

struct StepPrediction {
  double compute_seconds = 0.0;    // the passes' turns
  double optimizer_seconds = 0.0;  // scaled to this rank's owned elements
  double other_seconds = 0.0;
  double comm_seconds = 0.0;       // every collective's time, back to back
  double exposed_seconds = 0.0;    // what the step waits for communication
  double step_seconds = 0.0;
  double bytes_sent = 0.0;         // per rank
};

// `zero` is the layout at the target world size, for its busiest rank (the most owned elements).
StepPrediction predict_step(const models::UnitSchedule& schedule, const dist::ZeroLayout& zero, const ZeroSetup& setup,
                            const StepCompute& compute, const Interconnect& link, Overlap overlap);

// The compute of one pass from FLOPs, for hardware we do not have: each turn's matmul FLOPs
// (2 per parameter and token forward, twice that backward, and a forward again with per-block
// checkpointing; causal attention's QK^T and PV, half the square; the head 2·dim·vocab per token)
// at `flops_per_s`. The optimizer: `optimizer_bytes_per_elem` read and written per owned element
// at `memory_bytes_per_s`.
StepCompute flops_step_compute(const models::TransformerSpec& spec, const models::UnitSchedule& schedule,
                               int64_t micro_batch, int64_t seq_len, int64_t passes, bool checkpointing,
                               double flops_per_s, int64_t owned_elems, double optimizer_bytes_per_elem,
                               double memory_bytes_per_s);

// Model FLOPs of one pass (the same count as flops_step_compute), for MFU.
double pass_flops(const models::TransformerSpec& spec, const models::UnitSchedule& schedule, int64_t micro_batch,
                  int64_t seq_len, bool checkpointing);

}  // namespace farthing::train
