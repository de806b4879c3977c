#include "train/plan/scaling_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "framework/core/error.h"

namespace farthing::train {

const LinkCost& Interconnect::of(Collective c) const {
  switch (c) {
    case Collective::kAllGather: return all_gather;
    case Collective::kReduceScatter: return reduce_scatter;
    case Collective::kAllReduce: return all_reduce;
  }
  return all_reduce;
}

namespace {

// Open MPI's TCP transport (btl_tcp_eager_limit, 64 KiB) sends a larger message only after a
// handshake. The limit counts the transport's headers (tens of bytes; 64 bound them), so a
// 64 KiB message is already above it. The handshake's request and clear-to-send are two one-way
// trips. Over the harness's wire, with the ranks yielding their cores while they wait, single
// collectives at 64 KiB-2 MiB per message took those two trips more than below the limit
// (docs/scaling.md, "single collectives over the wire").
constexpr double kMpiTcpEagerLimit = 65536.0 - 64.0;
constexpr int kRendezvousTrips = 2;

Interconnect uniform(std::string name, std::string source, double latency_s, double bytes_per_s) {
  const LinkCost link{latency_s, bytes_per_s, 0.0, 0};
  return {std::move(name), std::move(source), link, link, link};
}

// "1gbit" -> 1e9 / 8 bytes/s; "250us" -> 250e-6 s. The number, then one of the units, nothing else.
double parse_quantity(std::string_view text, std::initializer_list<std::pair<std::string_view, double>> units,
                      std::string_view spec) {
  for (const auto& [unit, scale] : units) {
    if (text.size() <= unit.size() || text.substr(text.size() - unit.size()) != unit) continue;
    const std::string number(text.substr(0, text.size() - unit.size()));
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end == number.c_str() + number.size() && std::isfinite(value) && value >= 0.0) return value * scale;
  }
  std::string choices;
  for (const auto& [unit, scale] : units) choices += (choices.empty() ? "" : ", ") + std::string(unit);
  FARTHING_FAIL("interconnect '", spec, "': cannot read '", text, "' (a number >= 0 followed by one of ", choices, ")");
}

// link:RATE:LATENCY, e.g. link:1gbit:1ms: a link described by hand (a shaped test link, an
// Ethernet without RDMA). RATE is taken as every rank's bandwidth, with no efficiency factor;
// LATENCY is the one-way delay and the cost of one ring step. Such a link carries MPI over TCP,
// so a step's message above the TCP transport's eager limit waits for its rendezvous first.
Interconnect described_link(std::string_view spec, int ranks_per_node) {
  const std::string_view rest = spec.substr(5);
  const size_t colon = rest.find(':');
  FARTHING_CHECK(colon != std::string_view::npos, "interconnect '", spec, "': expected link:RATE:LATENCY, e.g. link:1gbit:1ms");
  const double bits_per_s = parse_quantity(rest.substr(0, colon), {{"gbit", 1e9}, {"mbit", 1e6}}, spec);
  const double latency_s = parse_quantity(rest.substr(colon + 1), {{"ms", 1e-3}, {"us", 1e-6}}, spec);
  FARTHING_CHECK(bits_per_s > 0.0, "interconnect '", spec, "': the rate must be above 0");
  Interconnect link = uniform(std::string(spec),
                              "described by hand: each node's link at the stated rate, its ranks' traffic to each other "
                              "not on it; the MPI communicator's all-gather by recursive doubling, its reductions "
                              "all-to-all; each step costs the stated latency, three times over for a message above MPI "
                              "over TCP's 64 KiB eager limit (its rendezvous)",
                              latency_s, bits_per_s / 8.0);
  for (LinkCost* c : {&link.all_gather, &link.reduce_scatter, &link.all_reduce}) {
    c->eager_limit_bytes = kMpiTcpEagerLimit;
    c->handshake_trips = kRendezvousTrips;
    c->ranks_per_node = ranks_per_node;
  }
  link.all_gather.algorithm = Algorithm::kRecursiveDoubling;
  link.reduce_scatter.algorithm = Algorithm::kAllToAll;
  link.all_reduce.algorithm = Algorithm::kAllToAll;
  return link;
}

}  // namespace

// Bandwidths are what NCCL's bandwidth tests report as busbw at large sizes, per rank; latencies
// are per ring step. Inputs, not measurements of ours: `farthing bench dist` measures its own.
Interconnect interconnect_preset(std::string_view name, int ranks_per_node) {
  FARTHING_CHECK(ranks_per_node >= 1, "ranks per node must be at least 1, not ", ranks_per_node);
  if (name.substr(0, 5) == "link:") return described_link(name, ranks_per_node);
  FARTHING_CHECK(ranks_per_node == 1, "interconnect '", name, "': ranks per node apply to a described link "
                 "(link:RATE:LATENCY) only; the presets give each rank's own bandwidth");
  if (name == "nvlink") {
    return uniform("nvlink", "8x H100 SXM, NVLink 4 through NVSwitch: 450 GB/s per direction; nccl-tests busbw 360 GB/s "
                   "taken for ring all-gather/reduce-scatter (all-reduce with NVLS reaches 460-480)",
                   5e-6, 360e9);
  }
  if (name == "ib400") {
    return uniform("ib400", "one 400 Gb/s NDR InfiniBand NIC per rank: 50 GB/s line rate, 45 GB/s busbw (90%)", 10e-6, 45e9);
  }
  if (name == "ib200") {
    return uniform("ib200", "one 200 Gb/s HDR InfiniBand NIC per rank: 25 GB/s line rate, 22.5 GB/s busbw (90%)", 10e-6,
                   22.5e9);
  }
  if (name == "eth100") {
    return uniform("eth100", "100 Gb/s Ethernet (RoCE) per rank: 12.5 GB/s line rate, 10 GB/s busbw (80%)", 25e-6, 10e9);
  }
  FARTHING_FAIL("unknown interconnect '", name, "'; choose one of ", kInterconnectNames,
                ", link:RATE:LATENCY (e.g. link:1gbit:1ms), or a JSON file of measured links (farthing bench dist --out)");
}

int ring_steps(Collective c, int world) { return (c == Collective::kAllReduce ? 2 : 1) * (world - 1); }

double ring_bytes_sent(Collective c, double bytes, int world) {
  return double(ring_steps(c, world)) * bytes / double(world);
}

double collective_seconds(Collective c, double bytes, int world, const LinkCost& link) {
  if (world <= 1) return 0.0;
  const double block = bytes / double(world);
  auto step_latency = [&](double message) {
    const bool handshake = link.handshake_trips > 0 && message > link.eager_limit_bytes;
    return link.latency_s * (1.0 + (handshake ? double(link.handshake_trips) : 0.0));
  };
  if (link.algorithm == Algorithm::kRing) {
    return double(ring_steps(c, world)) * (step_latency(block) + block / link.bytes_per_s);
  }
  const int h = std::min(link.ranks_per_node, world);
  // Recursive doubling: at distance d the partner is on another node once d reaches H; each of
  // the node's H ranks sends the min(d, N - d) blocks it holds for it (Bruck's count when N is
  // not a power of two).
  auto recursive_doubling = [&] {
    double seconds = 0.0;
    for (int d = h; d < world; d *= 2) {
      const double message = double(std::min(d, world - d)) * block;
      seconds += step_latency(message) + double(h) * message / link.bytes_per_s;
    }
    return seconds;
  };
  if (c == Collective::kAllGather) return recursive_doubling();
  const double all_to_all = step_latency(block) + double(h) * double(world - h) * block / link.bytes_per_s;
  return all_to_all + (c == Collective::kAllReduce ? recursive_doubling() : 0.0);
}

LinkCost fit_link(Collective c, int world, const std::vector<std::pair<double, double>>& bytes_seconds) {
  FARTHING_CHECK(world > 1 && bytes_seconds.size() >= 2, "fit_link: needs two sizes or more over several ranks");
  // seconds = a + b · sent, with a = steps · latency and b = 1 / bandwidth.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = double(bytes_seconds.size());
  for (const auto& [bytes, seconds] : bytes_seconds) {
    const double x = ring_bytes_sent(c, bytes, world);
    sx += x, sy += seconds, sxx += x * x, sxy += x * seconds;
  }
  const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  const double a = (sy - b * sx) / n;
  FARTHING_CHECK(b > 0.0, "fit_link: the measured times do not grow with size; measure larger buffers");
  return {std::max(0.0, a) / double(ring_steps(c, world)), 1.0 / b, 0.0, 0};
}

namespace {

// The trainer's small all-reduces per step: the token count, the loss sums, AdamW's two.
constexpr int kSmallAllReduces = 4;

// One communication stream, in issue order (Overlap::kStreams); with kNone every call blocks.
struct Timeline {
  Overlap overlap;
  double now = 0.0;        // the compute's clock
  double comm_free = 0.0;  // when the stream has finished everything issued
  double comm_total = 0.0;
  // Issues a collective of `seconds` now; returns when it completes.
  double issue(double seconds) {
    comm_total += seconds;
    if (overlap == Overlap::kNone) {
      now += seconds;
      return now;
    }
    comm_free = std::max(now, comm_free) + seconds;
    return comm_free;
  }
  void wait_until(double t) { now = std::max(now, t); }
};

}  // namespace

StepPrediction predict_step(const models::UnitSchedule& schedule, const dist::ZeroLayout& zero, const ZeroSetup& setup,
                            const StepCompute& compute, const Interconnect& link, Overlap overlap) {
  FARTHING_CHECK(compute.turn_seconds.size() == schedule.turns.size(), "scaling model: ", compute.turn_seconds.size(),
                 " measured turns for a schedule of ", schedule.turns.size());
  const int N = zero.world_size();
  const bool multi = N > 1;
  const bool gathers = multi && setup.zero_stage == 3;
  const double gather_elem = setup.gather_f32 ? 4.0 : 2.0;
  StepPrediction p;
  auto cost = [&](Collective c, double bytes) {
    p.bytes_sent += multi ? ring_bytes_sent(c, bytes, N) : 0.0;
    return collective_seconds(c, bytes, N, link.of(c));
  };
  auto gather_seconds = [&](int u) {
    return cost(Collective::kAllGather, double(zero.padded_elems(size_t(u))) * gather_elem);
  };
  auto reduce_seconds = [&](int u) {
    const size_t i = size_t(u);
    if (setup.zero_stage == 1) {
      return cost(Collective::kAllReduce, double(zero.aligned_end(i) - zero.units()[i].begin) * 4.0);
    }
    return cost(Collective::kReduceScatter, double(zero.padded_elems(i)) * 4.0);
  };

  Timeline t{overlap};
  for (int64_t pass = 0; pass < compute.passes; ++pass) {
    std::vector<double> gathered(zero.units().size(), -1.0);  // completion of a prefetched gather
    for (size_t k = 0; k < schedule.turns.size(); ++k) {
      const models::UnitTurn& turn = schedule.turns[k];
      if (turn.acquires && gathers) {
        const double ready = gathered[size_t(turn.unit)];
        t.wait_until(ready >= 0.0 ? ready : t.issue(gather_seconds(turn.unit)));
        gathered[size_t(turn.unit)] = -1.0;
      }
      if (turn.prefetches >= 0 && gathers) gathered[size_t(turn.prefetches)] = t.issue(gather_seconds(turn.prefetches));
      t.now += compute.turn_seconds[k];
      p.compute_seconds += compute.turn_seconds[k];
      if (turn.hands_over_grads && multi) t.issue(reduce_seconds(turn.unit));
    }
    t.wait_until(t.comm_free);  // backward_done: the pass's reductions finish before the next pass adds to them
  }
  // Owned elements of the busiest rank, against the elements the measured step stepped.
  const double owned = double(zero.owned_elems());
  p.optimizer_seconds =
      compute.optimizer_elems > 0 ? compute.optimizer_seconds * owned / double(compute.optimizer_elems) : 0.0;
  p.other_seconds = compute.other_seconds;
  t.now += p.optimizer_seconds + p.other_seconds;
  for (int i = 0; multi && i < kSmallAllReduces; ++i) t.wait_until(t.issue(cost(Collective::kAllReduce, 8.0)));
  if (multi && setup.zero_stage < 3) {  // the owners' weights back to every rank, unit by unit
    double done = t.now;
    for (size_t u = 0; u < zero.units().size(); ++u) {
      const double bytes = double(zero.padded_elems(u));
      done = t.issue(cost(Collective::kAllGather, bytes * 2.0));
      if (setup.gather_f32) done = t.issue(cost(Collective::kAllGather, bytes * 4.0));
    }
    t.wait_until(done);
  }
  p.step_seconds = t.now;
  p.comm_seconds = t.comm_total;
  p.exposed_seconds = p.step_seconds - p.compute_seconds - p.optimizer_seconds - p.other_seconds;
  return p;
}

namespace {

// Matmul FLOPs of each turn's compute, forward and backward as the model runs them.
std::vector<double> turn_flops(const models::TransformerSpec& spec, const models::UnitSchedule& schedule,
                               int64_t micro_batch, int64_t seq_len, bool checkpointing) {
  const models::ModelConfig& c = spec.config;
  const double tokens = double(micro_batch * seq_len);
  const double attention = 2.0 * double(micro_batch) * double(seq_len) * double(seq_len) * double(c.attn_dim());  // causal
  const std::vector<models::ParamUnit>& units = spec.layout.units();
  const int embedding = schedule.embedding;
  std::vector<double> flops;
  for (const models::UnitTurn& turn : schedule.turns) {
    const models::ParamUnit& u = units[size_t(turn.unit)];
    if (turn.unit == embedding) {
      flops.push_back(0.0);  // a gather of rows, and their gradients' scatter
    } else if (turn.loss_grads >= 0) {
      flops.push_back(6.0 * tokens * double(c.dim) * double(c.vocab_size));  // the head, forward and backward
    } else {
      const double forward = 2.0 * tokens * double(u.span_elems()) + attention;
      flops.push_back(turn.backward ? 2.0 * forward + (checkpointing ? forward : 0.0) : forward);
    }
  }
  return flops;
}

}  // namespace

double pass_flops(const models::TransformerSpec& spec, const models::UnitSchedule& schedule, int64_t micro_batch,
                  int64_t seq_len, bool checkpointing) {
  double total = 0.0;
  for (double f : turn_flops(spec, schedule, micro_batch, seq_len, checkpointing)) total += f;
  return total;
}

StepCompute flops_step_compute(const models::TransformerSpec& spec, const models::UnitSchedule& schedule,
                               int64_t micro_batch, int64_t seq_len, int64_t passes, bool checkpointing,
                               double flops_per_s, int64_t owned_elems, double optimizer_bytes_per_elem,
                               double memory_bytes_per_s) {
  FARTHING_CHECK(flops_per_s > 0.0 && memory_bytes_per_s > 0.0, "scaling model: rates must be positive");
  StepCompute c;
  for (double f : turn_flops(spec, schedule, micro_batch, seq_len, checkpointing)) c.turn_seconds.push_back(f / flops_per_s);
  c.passes = passes;
  c.optimizer_elems = owned_elems;
  c.optimizer_seconds = double(owned_elems) * optimizer_bytes_per_elem / memory_bytes_per_s;
  return c;
}

}  // namespace farthing::train
