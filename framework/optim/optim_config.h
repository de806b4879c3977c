// optim_config.h — what an optimizer is asked to do: hyper-parameters per group, which global
// ranges belong to which group, state format, master mode, weight rounding, and the shards
// this rank owns. validate_optimizer_config() rejects bad configurations with messages that
// name every factor and suggest the fix.
// Relies on: kernels/numerics/adamw_segment.h and block_quant.h (the enums and the block size
// shared with the kernels: one definition each), core/error.h.
// Tested by: tests/optim/test_optim_config.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/numerics/adamw_segment.h"
#include "kernels/numerics/block_quant.h"

namespace farthing::optim {

using kernels::MasterMode;
using kernels::WeightRounding;

// How a group's Adam moments are stored: the kernels' MomentFormat itself. kBlock8:
// bitsandbytes' 8-bit blocks (256 elements of the global flat space per fp32 absmax; signed map
// for m, unsigned for v). kBlock4: torchao's 4-bit layout (128 elements per absmax, 16-entry
// maps; numerics/block_quant4.h).
using StateFormat = kernels::MomentFormat;

constexpr bool is_quantized(StateFormat format) {
  return format == StateFormat::kBlock8 || format == StateFormat::kBlock4;
}

// Tensors below this many elements keep fp32 moments whatever their group asks
// (bitsandbytes' min_8bit_size): their state is negligible and small tensors quantize badly.
inline constexpr uint64_t kMinQuantizedElems = 4096;
inline constexpr uint64_t kQuantBlockElems = uint64_t(numerics::kQuantBlockElems);  // numerics/block_quant.h

struct AdamWHyper {
  double lr = 1e-5;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
};

struct ParamGroup {
  std::string name;
  AdamWHyper hyper;
  StateFormat state_format = StateFormat::kF32;
};

// A tensor (or any run of elements) of the global flat parameter space and its group.
// Elements covered by no range are padding: never stepped, no state.
struct ParamRange {
  std::string name;
  uint64_t global_offset = 0;
  uint64_t numel = 0;
  int group = 0;
  bool keep_f32_state = false;  // e.g. embeddings and the output head (StableEmbedding advice)
};

// A contiguous piece of the flat space owned by this rank. Offsets and lengths are multiples
// of 256 (so 8-bit blocks never straddle shards), except that the last shard may end anywhere.
struct ShardSpec {
  uint64_t global_offset = 0;
  uint64_t numel = 0;
};

struct OptimizerConfig {
  std::vector<ParamGroup> groups;
  std::vector<ParamRange> ranges;  // sorted by offset, disjoint
  MasterMode master_mode = MasterMode::kF32;  // kRemainder16 needs round-to-nearest weights
  WeightRounding weight_rounding = WeightRounding::kNearest;  // master -> bf16 weight cast
  uint64_t seed = 0;  // stochastic-rounding key
};

// The names a recipe spells them by (optimizer.state, .master, .weight_rounding), in the order
// its errors list them: the one table of each (recipe/run_config.h reads these).
inline constexpr std::array<std::pair<StateFormat, std::string_view>, 4> kStateFormatNames{{
    {StateFormat::kF32, "f32"}, {StateFormat::kBf16, "bf16"}, {StateFormat::kBlock8, "8bit"}, {StateFormat::kBlock4, "4bit"}}};
inline constexpr std::array<std::pair<MasterMode, std::string_view>, 3> kMasterModeNames{{
    {MasterMode::kF32, "f32"}, {MasterMode::kRemainder16, "remainder16"}, {MasterMode::kNone, "none"}}};
// Where the master and moments live and the step runs (optimizer.offload): with the weights on
// the training device (kNone), or in host memory, stepped by the CPU kernels (kHost; AdamW
// stages each shard's gradients and weights through host buffers: host_offload.h).
enum class Offload : uint8_t { kNone, kHost };
inline constexpr std::array<std::pair<Offload, std::string_view>, 2> kOffloadNames{{
    {Offload::kNone, "none"}, {Offload::kHost, "host"}}};
inline constexpr std::array<std::pair<WeightRounding, std::string_view>, 2> kWeightRoundingNames{{
    {WeightRounding::kNearest, "nearest"}, {WeightRounding::kStochastic, "stochastic"}}};

std::string_view state_format_name(StateFormat format);
std::string_view master_mode_name(MasterMode mode);
// The names above, plus the aliases fp32 (both), int8 and block8, block4 (state).
MasterMode parse_master_mode(std::string_view name);
StateFormat parse_state_format(std::string_view name);

// The state format a range actually gets (demotions to fp32 applied).
StateFormat effective_state_format(const OptimizerConfig& config, const ParamRange& range);

// Throws farthing::Error naming the offending group, range or shard.
void validate_optimizer_config(const OptimizerConfig& config, const std::vector<ShardSpec>& shards);

}  // namespace farthing::optim
