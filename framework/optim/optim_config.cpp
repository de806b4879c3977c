// optim_config.cpp — see optim_config.h.
#include "framework/optim/optim_config.h"

#include <cmath>

#include "framework/core/error.h"

namespace farthing::optim {

namespace {

template <class E, size_t N>
std::string_view name_in(const std::array<std::pair<E, std::string_view>, N>& names, E value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return "?";
}

template <class E, size_t N>
bool find_named(const std::array<std::pair<E, std::string_view>, N>& names, std::string_view name, E& out) {
  for (const auto& [v, n] : names) {
    if (n == name) {
      out = v;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string_view state_format_name(StateFormat format) { return name_in(kStateFormatNames, format); }

StateFormat parse_state_format(std::string_view name) {
  StateFormat format{};
  if (find_named(kStateFormatNames, name, format)) return format;
  if (name == "fp32") return StateFormat::kF32;
  if (name == "int8" || name == "block8") return StateFormat::kBlock8;
  if (name == "block4") return StateFormat::kBlock4;
  FARTHING_FAIL("unknown optimizer state format '", name, "'; use one of: f32, bf16, 8bit, 4bit");
}

std::string_view master_mode_name(MasterMode mode) { return name_in(kMasterModeNames, mode); }

MasterMode parse_master_mode(std::string_view name) {
  MasterMode mode{};
  if (find_named(kMasterModeNames, name, mode)) return mode;
  if (name == "fp32") return MasterMode::kF32;
  FARTHING_FAIL("unknown master mode '", name, "'; use one of: f32, remainder16, none");
}

StateFormat effective_state_format(const OptimizerConfig& config, const ParamRange& range) {
  const StateFormat wanted = config.groups.at(size_t(range.group)).state_format;
  if (!is_quantized(wanted)) return wanted;
  if (range.keep_f32_state || range.numel < kMinQuantizedElems) return StateFormat::kF32;
  return wanted;
}

namespace {

void validate_group(const ParamGroup& g, size_t index) {
  const AdamWHyper& h = g.hyper;
  const std::string who = "param group " + std::to_string(index) + " '" + g.name + "'";
  FARTHING_CHECK(std::isfinite(h.lr) && h.lr >= 0.0, who, ": lr (", h.lr, ") must be finite and >= 0");
  FARTHING_CHECK(h.beta1 >= 0.0 && h.beta1 < 1.0, who, ": beta1 (", h.beta1, ") must lie in [0, 1)");
  FARTHING_CHECK(h.beta2 >= 0.0 && h.beta2 < 1.0, who, ": beta2 (", h.beta2, ") must lie in [0, 1)");
  FARTHING_CHECK(std::isfinite(h.eps) && h.eps > 0.0, who, ": eps (", h.eps,
                 ") must be finite and > 0 (it keeps m / sqrt(v) finite where v is 0)");
  FARTHING_CHECK(std::isfinite(h.weight_decay) && h.weight_decay >= 0.0, who, ": weight_decay (",
                 h.weight_decay, ") must be finite and >= 0");
  FARTHING_CHECK(h.lr * h.weight_decay < 1.0, who, ": lr (", h.lr, ") * weight_decay (", h.weight_decay,
                 ") = ", h.lr * h.weight_decay, " >= 1 would flip or zero every weight each step");
}

}  // namespace

void validate_optimizer_config(const OptimizerConfig& config, const std::vector<ShardSpec>& shards) {
  FARTHING_CHECK(!config.groups.empty(), "the optimizer has no parameter groups; give at least one");
  for (size_t i = 0; i < config.groups.size(); ++i) validate_group(config.groups[i], i);
  FARTHING_CHECK(!(config.master_mode == MasterMode::kRemainder16 &&
                   config.weight_rounding == WeightRounding::kStochastic),
                 "master mode 'remainder16' keeps the master's high half in the bf16 weight, so the weight must be "
                 "rounded to nearest; use weight_rounding 'nearest' with it, or master 'f32' for stochastic casts");
  const uint64_t kNoEnd = 0;
  uint64_t previous_end = kNoEnd;
  for (size_t i = 0; i < config.ranges.size(); ++i) {
    const ParamRange& r = config.ranges[i];
    FARTHING_CHECK(r.group >= 0 && size_t(r.group) < config.groups.size(), "param range '", r.name,
                   "' names group ", r.group, " but there are ", config.groups.size(), " groups");
    FARTHING_CHECK(r.numel > 0, "param range '", r.name, "' is empty (numel 0)");
    if (i > 0) {
      const ParamRange& p = config.ranges[i - 1];
      FARTHING_CHECK(r.global_offset >= previous_end, "param ranges '", p.name, "' [", p.global_offset, ", ",
                     previous_end, ") and '", r.name, "' [", r.global_offset, ", ", r.global_offset + r.numel,
                     ") overlap or are out of order; ranges must be disjoint and sorted by offset");
    }
    previous_end = r.global_offset + r.numel;
    if (is_quantized(effective_state_format(config, r))) {
      FARTHING_CHECK(r.global_offset % kQuantBlockElems == 0, "param range '", r.name, "' has ",
                     state_format_name(effective_state_format(config, r)), " state but "
                     "starts at global offset ", r.global_offset, ", which is not a multiple of the quantization "
                     "block (", kQuantBlockElems, "); pad the layout so 8-bit tensors start on a block boundary, "
                     "or set keep_f32_state for it");
    }
  }
  for (size_t i = 0; i < shards.size(); ++i) {
    const ShardSpec& s = shards[i];
    FARTHING_CHECK(s.numel > 0, "shard ", i, " is empty (numel 0)");
    FARTHING_CHECK(s.global_offset % kQuantBlockElems == 0, "shard ", i, " starts at global offset ",
                   s.global_offset, ", not a multiple of the quantization block (", kQuantBlockElems,
                   "); shard boundaries must fall on block boundaries so 8-bit blocks never straddle shards");
    if (i + 1 < shards.size()) {
      const ShardSpec& n = shards[i + 1];
      FARTHING_CHECK(s.global_offset + s.numel <= n.global_offset, "shards ", i, " [", s.global_offset, ", ",
                     s.global_offset + s.numel, ") and ", i + 1, " [", n.global_offset, ", ",
                     n.global_offset + n.numel, ") overlap or are out of order");
      FARTHING_CHECK(s.numel % kQuantBlockElems == 0, "shard ", i, " has ", s.numel,
                     " elements, not a multiple of ", kQuantBlockElems, "; only the last shard may be ragged");
    }
  }
}

}  // namespace farthing::optim
