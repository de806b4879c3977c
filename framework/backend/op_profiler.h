// op_profiler.h — where a training step's time goes, op by op, on any backend.
//
// A ProfilingBackend (profiling_backend.h) brackets every Backend and NnOps call with two marks
// on an OpClock: the host's steady clock on the CPU and the strict device, CUDA events on the
// backend's stream on a GPU (so a span is the op's time on the device, not the launch's). The
// OpProfiler keeps those spans for one step at a time, with the phase each ran in and counters
// of the host work that stalls a GPU (op calls, copies to and from the device, synchronisations,
// allocations). At the step's end it reads the clock once and returns a StepOpProfile:
//   wall  from the step's first mark to its last,
//   busy  the sum of the spans (outermost calls only: a call made from inside another call, such
//         as a communicator's staging copy inside a collective, counts toward its caller),
//   idle  every gap between them (before the first, between each pair, after the last),
// so busy + idle = wall when the spans follow one another without overlapping, as they must: a
// gap is counted only where it is positive, so spans that overlapped (a call counted twice)
// would make busy + idle exceed wall. The phase is set by whoever knows it (OpPhaseScope): the model for its
// forward, recomputation, head and loss and backward; the parameter store for its gradient
// bookkeeping; the trainer for the optimizer; collectives are always "communication".
// Only the thread that began the step is recorded: the host optimizer's worker thread
// (optimizer.offload: host) runs its own CPU backend and is not part of the device's timeline.
// Off (no profiler installed) nothing here runs: OpPhaseScope reads one pointer.
// Relies on: nothing but the standard library. Tested by: tests/backend/test_op_profiler.cpp,
// tests/train/loop/test_step_profile.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace farthing {

enum class OpPhase : uint8_t { kForward, kRecompute, kHeadLoss, kBackward, kGradients, kOptimizer, kCommunication, kOther };
inline constexpr int kOpPhaseCount = 8;
// "forward", "recompute", "head and loss", "backward", "gradient bookkeeping", "optimizer",
// "communication", "other".
const char* op_phase_name(OpPhase phase);

// The kinds of op a span names, written once: the profiling backend records them and the step
// profile's report matches them against the roofline's rows.
namespace op_kind {
inline constexpr char kGemm[] = "gemm";
inline constexpr char kNormForward[] = "norm forward";
inline constexpr char kNormBackward[] = "norm backward";
inline constexpr char kRope[] = "rope";
inline constexpr char kAttentionForward[] = "attention forward";
inline constexpr char kAttentionBackward[] = "attention backward";
inline constexpr char kAttentionDecode[] = "attention decode";
inline constexpr char kAccumulate[] = "accumulate";
inline constexpr char kSwigluForward[] = "swiglu forward";
inline constexpr char kSwigluBackward[] = "swiglu backward";
inline constexpr char kGegluForward[] = "geglu forward";
inline constexpr char kGegluBackward[] = "geglu backward";
inline constexpr char kScaleAdd[] = "scale add";
inline constexpr char kGeluForward[] = "gelu forward";
inline constexpr char kGeluBackward[] = "gelu backward";
inline constexpr char kEmbeddingForward[] = "embedding forward";
inline constexpr char kEmbeddingBackward[] = "embedding backward";
inline constexpr char kCrossEntropy[] = "cross-entropy";
inline constexpr char kNarrow[] = "narrow";
inline constexpr char kWiden[] = "widen";
inline constexpr char kCopy[] = "copy";
inline constexpr char kZero[] = "zero";
inline constexpr char kBiasAdd[] = "bias add";
inline constexpr char kBiasBackward[] = "bias backward";
inline constexpr char kFp8Quantize[] = "fp8 quantize";
inline constexpr char kFp4Quantize[] = "fp4 quantize";
inline constexpr char kOptimizerStep[] = "optimizer step";
inline constexpr char kGradNormPartials[] = "grad norm partials";
inline constexpr char kCast[] = "cast";
inline constexpr char kFill[] = "fill";
inline constexpr char kBlockQuantize[] = "block quantize";
inline constexpr char kBlockDequantize[] = "block dequantize";
inline constexpr char kSynchronize[] = "synchronize";
}  // namespace op_kind

// Points in a device's work order, read back as seconds. mark() records one and returns its
// index since the last collect(); collect() waits until every mark has passed and returns their
// times in seconds, relative to the first mark, in order; it forgets them.
class OpClock {
 public:
  virtual ~OpClock() = default;
  virtual uint32_t mark() = 0;
  virtual std::vector<double> collect() = 0;
};

// The host's steady clock: right where the host is the device, or where every op has finished
// when its call returns (the strict device). `wait` runs before the marks are read, as a GPU's
// event clock must wait: on the strict device it is the backend's synchronize, so the test device
// counts the one wait per step that profiling costs a GPU.
class HostOpClock final : public OpClock {
 public:
  explicit HostOpClock(std::function<void()> wait = {}) : wait_(std::move(wait)) {}
  uint32_t mark() override;
  std::vector<double> collect() override;

 private:
  std::function<void()> wait_;
  std::vector<double> seconds_;
};

// Host work that makes a GPU's host wait or talk to the driver, counted per step.
struct HostOpCounters {
  int64_t op_calls = 0;          // every Backend and NnOps call (each queues one or more kernels on a GPU)
  int64_t copies_to_device = 0;  // Backend::copy from host memory (pageable: staged by the runtime)
  int64_t copies_to_host = 0;    // Backend::copy into host memory (the host waits for the device)
  int64_t synchronizations = 0;  // Backend::synchronize
  int64_t allocations = 0;       // Backend::allocate_bytes
};

// One span of a step: an op of `kind` ("gemm", "attention forward", "all_reduce", ...) in a phase.
struct OpSpan {
  const char* kind = "";
  OpPhase phase = OpPhase::kOther;
  double begin = 0.0, end = 0.0;  // seconds from the step's first mark
  double flops = 0.0;             // the call's floating-point operations, where it has a count (GEMMs)
};

struct StepOpProfile {
  double wall_seconds = 0.0, busy_seconds = 0.0, idle_seconds = 0.0;
  std::vector<OpSpan> spans;  // in the order they ran
  HostOpCounters counters;
};

class OpProfiler {
 public:
  explicit OpProfiler(std::unique_ptr<OpClock> clock);

  // A step's bounds; the thread calling begin_step is the one recorded until end_step.
  void begin_step();
  StepOpProfile end_step();
  bool recording() const { return recording_ && std::this_thread::get_id() == thread_; }

  OpPhase phase() const { return phase_; }
  void set_phase(OpPhase phase) { phase_ = phase; }

  // An op call's bracket: enter() before it, leave() after. Returns false (and leave is a no-op)
  // for a call that is not recorded: off the recording thread, outside a step, or nested.
  struct Entry {
    bool outermost = false;
    uint32_t begin_mark = 0;
  };
  Entry enter();
  void leave(const Entry& entry, const char* kind, double flops = 0.0, bool communication = false);
  HostOpCounters& counters() { return counters_; }

 private:
  struct PendingSpan {
    const char* kind;
    OpPhase phase;
    uint32_t begin_mark, end_mark;
    double flops;
  };
  std::unique_ptr<OpClock> clock_;
  std::thread::id thread_{};
  bool recording_ = false;
  int depth_ = 0;
  OpPhase phase_ = OpPhase::kOther;
  uint32_t step_begin_mark_ = 0;
  std::vector<PendingSpan> pending_;
  HostOpCounters counters_;
};

// The profiler of the installed ProfilingBackend (profiling_backend.h), or null when none is.
OpProfiler* active_op_profiler();
void set_active_op_profiler(OpProfiler* profiler);

// Sets the phase of the active profiler for its lifetime, then restores the one before. Does
// nothing but read a pointer when no profiler is installed.
class OpPhaseScope {
 public:
  explicit OpPhaseScope(OpPhase phase) : profiler_(active_op_profiler()) {
    if (profiler_ != nullptr) {
      before_ = profiler_->phase();
      profiler_->set_phase(phase);
    }
  }
  ~OpPhaseScope() {
    if (profiler_ != nullptr) profiler_->set_phase(before_);
  }
  OpPhaseScope(const OpPhaseScope&) = delete;
  OpPhaseScope& operator=(const OpPhaseScope&) = delete;

 private:
  OpProfiler* profiler_;
  OpPhase before_ = OpPhase::kOther;
};

}  // namespace farthing
