// flat_layout.h — the flat parameter space: every tensor of a model at a fixed offset in one
// buffer, under its Hugging Face name, grouped into units (embedding, each block, final
// norm/head) that ZeRO shards and gathers one at a time.
//
// NOTE: a tensor's global flat offset depends only on the model, never on the world size:
// tensors are packed in order, each starting on a kTensorAlignElems boundary, and each unit
// starts on a kUnitAlignElems (= one 8-bit quantization block) boundary, so blocks never
// straddle units. Sharding pads units *in storage* through a UnitPadding rule
// (pad_to_multiple(256 * world_size)), which maps to storage offsets without moving
// anything in the global space. Models know nothing of ranks.
// Relies on: framework/core, framework/dist/zero_layout.h (UnitRange). Tested by: tests/models/test_flat_layout.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/dist/zero_layout.h"

namespace farthing::models {

inline constexpr int64_t kTensorAlignElems = 32;  // 64 bytes at bf16, 128 at fp32
inline constexpr int64_t kUnitAlignElems = 256;   // one 8-bit quantization block
// NOTE: an aligned tensor of at least this many elements starts on a kUnitAlignElems boundary,
// so its 8-bit optimizer blocks are its own (smaller tensors keep fp32 optimizer state anyway:
// optim::kMinQuantizedElems, bitsandbytes' min_8bit_size).
inline constexpr int64_t kBlockAlignMinElems = 4096;

struct ParamEntry {
  std::string name;       // Hugging Face name, e.g. "model.layers.3.mlp.up_proj.weight"
  Shape shape;            // Hugging Face shape
  int64_t offset_elems;   // global flat offset
  int unit;
  int64_t numel() const { return shape.numel(); }
};

struct ParamUnit {
  std::string name;           // "embedding", "block.3", "head"
  int64_t begin_elems;        // global flat offset (multiple of kUnitAlignElems)
  int64_t end_elems;          // one past its last tensor
  int64_t span_elems() const { return end_elems - begin_elems; }
};

// Given a unit's element count, how many elements its storage holds (>= the count).
using UnitPadding = std::function<int64_t(int64_t unit_elems)>;
UnitPadding pad_to_multiple(int64_t multiple);  // ZeRO: pad_to_multiple(256 * world_size)

// kAligned starts a tensor on a kTensorAlignElems boundary; kPacked puts it right after the
// previous one (used where consecutive tensors form one fused matrix, e.g. q/k/v_proj).
enum class LayoutAlign : uint8_t { kAligned, kPacked };

class FlatLayout {
 public:
  // Building: open a unit, add its tensors in order.
  void begin_unit(const std::string& name);
  int64_t add(const std::string& name, Shape shape, LayoutAlign align = LayoutAlign::kAligned);  // returns the offset

  const std::vector<ParamEntry>& entries() const { return entries_; }
  const std::vector<ParamUnit>& units() const { return units_; }
  // Total global elements (end of the last unit, rounded up to kUnitAlignElems).
  int64_t total_elems() const;
  // Sum of the tensors' element counts (no alignment gaps).
  int64_t param_count() const;
  const ParamEntry& find(const std::string& name) const;  // throws naming the missing tensor
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // The tensor `name` inside a flat buffer of this layout.
  Tensor view(const std::string& name, void* flat_base, DType dtype) const;

  // Storage of unit u under a padding rule: its padded size, and the storage offset of
  // global element g (units laid end to end, each padded).
  std::vector<int64_t> padded_unit_elems(const UnitPadding& padding) const;
  int64_t storage_offset(int64_t global_elem, const UnitPadding& padding) const;

 private:
  std::vector<ParamEntry> entries_;
  std::vector<ParamUnit> units_;
  std::unordered_map<std::string, size_t> index_;
  int64_t cursor_ = 0;
};

// The layout's units as ZeRO's plain ranges (framework/dist knows nothing of models/): what the
// trainer shards, and what `farthing plan` sizes and times.
std::vector<dist::UnitRange> zero_units(const FlatLayout& layout);

}  // namespace farthing::models
