// train_checkpoint.cpp — see train_checkpoint.h.
#include "train/loop/train_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/backend/gemm_plan_book_text.h"
#include "framework/ckpt/h5_checkpoint_dir.h"
#include "framework/ckpt/h5_checkpoint_reader.h"
#include "framework/core/error.h"
#include "kernels/numerics/block_quant4.h"
#include "kernels/numerics/dynamic_map.h"

namespace farthing::train {

namespace fs = std::filesystem;

namespace {

// This rank's part [begin, end) of global elements [first, first + count) within unit `unit`.
struct Slice {
  int64_t begin = 0, end = 0;
  int64_t count() const { return end - begin; }
};

Slice owned_part(const dist::ZeroLayout& zero, int unit, int64_t first, int64_t count) {
  const dist::UnitRange owned = zero.owned(size_t(unit), zero.rank());
  Slice s{std::max(first, owned.begin), std::min(first + count, owned.end)};
  if (s.end < s.begin) s.end = s.begin;
  return s;
}


// One dataset of an optimizer range's state: how its element count and a segment's offset
// map onto the dataset (values per element: 1, or 1/2 for 4-bit codes, 1/block for absmax).
struct StatePiece {
  std::string suffix;   // "master", "exp_avg.codes", ...
  DType dtype;
  int64_t total = 0;    // dataset elements for the whole range
  int64_t offset = 0;   // where this rank's segment starts in it
  int64_t count = 0;    // this rank's elements (0: none)
  void* data = nullptr;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The datasets of range `r` and, when this rank holds a segment of it, where its bytes are.
std::vector<StatePiece> state_pieces(const optim::OptimizerConfig& config, const optim::ParamRange& r,
                                     const optim::AdamW::SegmentView* seg) {
  const optim::StateFormat format = optim::effective_state_format(config, r);
  const int64_t n = int64_t(r.numel);
  const int64_t off = seg ? int64_t(seg->global_offset - r.global_offset) : 0;
  const int64_t cnt = seg ? int64_t(seg->numel) : 0;
  std::vector<StatePiece> pieces;
  if (config.master_mode == optim::MasterMode::kF32) {
    pieces.push_back({"master", DType::kF32, n, off, cnt, seg ? seg->master : nullptr});
  } else if (config.master_mode == optim::MasterMode::kRemainder16) {
    pieces.push_back({"master_remainder", DType::kU8, 2 * n, 2 * off, 2 * cnt, seg ? seg->master : nullptr});
  }
  const char* names[2] = {"exp_avg", "exp_avg_sq"};
  for (int k = 0; k < 2; ++k) {
    void* values = seg ? seg->values[k] : nullptr;
    void* absmax = seg ? static_cast<void*>(seg->absmax[k]) : nullptr;
    const std::string name = names[k];
    switch (format) {
      case optim::StateFormat::kF32: pieces.push_back({name, DType::kF32, n, off, cnt, values}); break;
      case optim::StateFormat::kBf16: pieces.push_back({name, DType::kBF16, n, off, cnt, values}); break;
      case optim::StateFormat::kBlock8: {
        const int64_t b = int64_t(optim::kQuantBlockElems);
        pieces.push_back({name + ".codes", DType::kU8, n, off, cnt, values});
        pieces.push_back({name + ".absmax", DType::kF32, ceil_div(n, b), off / b, seg ? ceil_div(cnt, b) : 0, absmax});
        break;
      }
      case optim::StateFormat::kBlock4: {
        const int64_t b = int64_t(numerics::kQuant4BlockElems);
        pieces.push_back({name + ".codes", DType::kU8, ceil_div(n, 2), off / 2, seg ? ceil_div(cnt, 2) : 0, values});
        pieces.push_back({name + ".absmax", DType::kF32, ceil_div(n, b), off / b, seg ? ceil_div(cnt, b) : 0, absmax});
        break;
      }
    }
  }
  return pieces;
}

// This rank's segment of range r, if any (a range lies inside one unit, and a rank owns one
// contiguous part of each unit, so there is at most one).
const optim::AdamW::SegmentView* segment_of(const std::vector<optim::AdamW::SegmentView>& views,
                                            const optim::ParamRange& r) {
  for (const auto& v : views) {
    if (v.range == &r) return &v;
  }
  return nullptr;
}

// A device slice's values on the host, for the HDF5 writer and reader: the slice itself where
// the device is the host, else a host staging copy (kOther, one piece at a time).
class HostSlice {
 public:
  HostSlice(void* data, DType dtype, int64_t count, Device device) : device_(Tensor(data, dtype, Shape{count}, device)) {
    if (device.is_cpu()) {
      host_ = device_;
    } else {
      staged_ = Buffer(Device::cpu(), std::max<size_t>(device_.nbytes(), 1), MemoryCategory::kOther);
      host_ = staged_.view(dtype, Shape{count});
    }
  }
  // For a save: the device's values, copied to the host first where needed.
  const Tensor& read() {
    if (staged_.data() != nullptr && device_.numel() > 0) backend_for(device_.device()).copy(host_, device_);
    return host_;
  }
  // For a load: fill host(), then commit() moves it to the device.
  const Tensor& host() const { return host_; }
  void commit() {
    if (staged_.data() != nullptr && device_.numel() > 0) backend_for(device_.device()).copy(device_, host_);
  }

 private:
  Tensor device_, host_;
  Buffer staged_;
};

std::string range_dataset(const optim::ParamRange& r, const std::string& suffix) {
  return "optim/" + r.name + "/" + suffix;
}

bool any_8bit_range(const optim::OptimizerConfig& config) {
  for (const optim::ParamRange& r : config.ranges) {
    if (optim::effective_state_format(config, r) == optim::StateFormat::kBlock8) return true;
  }
  return false;
}

std::vector<float> map_values(numerics::MapSign sign) {
  const numerics::DynamicMap map = numerics::make_dynamic_map(sign, numerics::kStateDynamicMap);
  return std::vector<float>(map.begin(), map.end());
}

// The 8-bit codes mean nothing without their map: the optim group names it and holds its 256
// values (signed for exp_avg, unsigned for exp_avg_sq), so no reader has to guess which of
// bitsandbytes' maps (torch 1.13's or torch 2.x's linspace) coded them.
void write_dynamic_map(H5CheckpointWriter& writer) {
  const std::string name(numerics::dynamic_map_name(numerics::kStateDynamicMap));
  writer.set_group_attribute(kOptimGroup, kDynamicMapAttribute, name);
  writer.set_group_attribute(kOptimGroup, kDynamicMapSignedAttribute, map_values(numerics::MapSign::kSigned));
  writer.set_group_attribute(kOptimGroup, kDynamicMapUnsignedAttribute, map_values(numerics::MapSign::kUnsigned));
}

// A checkpoint without the attribute predates it: its codes were made with the map farthing has
// always used (torch 1.13's). One that names another map, or holds other values, is refused.
void check_dynamic_map(const H5CheckpointReader& reader, const fs::path& path) {
  if (!reader.has_group_attribute(kOptimGroup, kDynamicMapAttribute)) return;
  const std::string name = reader.group_attribute_string(kOptimGroup, kDynamicMapAttribute);
  const std::string_view ours = numerics::dynamic_map_name(numerics::kStateDynamicMap);
  FARTHING_CHECK(name == ours, "checkpoint ", path.string(), ": its 8-bit optimizer state is coded with the map '",
                 name, "', but this farthing codes with '", ours, "'; the moments would decode to other values");
  for (const auto& [attribute, sign] : {std::pair{kDynamicMapSignedAttribute, numerics::MapSign::kSigned},
                                        std::pair{kDynamicMapUnsignedAttribute, numerics::MapSign::kUnsigned}}) {
    const std::vector<float> stored = reader.group_attribute_f32_array(kOptimGroup, attribute);
    const std::vector<float> expected = map_values(sign);
    FARTHING_CHECK(stored.size() == expected.size() &&
                       std::memcmp(stored.data(), expected.data(), expected.size() * sizeof(float)) == 0,
                   "checkpoint ", path.string(), ": the optim group's ", attribute, " is not the map '", ours,
                   "' it names (", stored.size(), " values); the file is damaged or was edited");
  }
}

fs::path write_train_checkpoint(const fs::path& final_path, MpiCommunicator& comm, const TrainState& state,
                                const CheckpointIdentity& identity, const CheckpointCommitOptions& commit);

}  // namespace

void write_gemm_plan_book(H5CheckpointWriter& writer, const kernels::GemmPlanBook& book) {
  writer.write_string(kGemmPlanBookDataset, gemm_plan_book_text(book));
}

std::optional<kernels::GemmPlanBook> read_gemm_plan_book(const H5CheckpointReader& reader) {
  const std::vector<std::string>& strings = reader.strings();
  if (std::find(strings.begin(), strings.end(), kGemmPlanBookDataset) == strings.end()) return std::nullopt;
  return parse_gemm_plan_book(reader.read_string(kGemmPlanBookDataset),
                              "checkpoint " + reader.path().string() + "'s " + kGemmPlanBookDataset);
}

fs::path save_train_checkpoint(const fs::path& checkpoint_dir, MpiCommunicator& comm, const TrainState& state,
                               const CheckpointIdentity& identity, const CheckpointCommitOptions& commit) {
  const fs::path final_path = checkpoint_path_for_step(checkpoint_dir, state.progress.step);
  try {
    return write_train_checkpoint(final_path, comm, state, identity, commit);
  } catch (const std::exception& e) {
    FARTHING_FAIL("saving checkpoint ", final_path.string(), " failed (disk full or unwritable?); the previous "
                  "checkpoint and `latest` are untouched. Cause: ", e.what());
  }
}

namespace {

fs::path write_train_checkpoint(const fs::path& final_path, MpiCommunicator& comm, const TrainState& state,
                                const CheckpointIdentity& identity, const CheckpointCommitOptions& commit) {
  H5CheckpointWriter writer(final_path, comm);
  static uint64_t nothing = 0;  // a non-null pointer for ranks that write no elements
  const TrainProgressState& progress = state.progress;
  optim::AdamW& optimizer = state.optimizer;
  for (const models::ParamEntry& e : state.layout.entries()) {
    const Slice s = owned_part(state.store.layout(), e.unit, e.offset_elems, e.numel());
    if (s.count() == 0) {
      writer.write_tensor("model/" + e.name, DType::kBF16, e.shape, 0, Tensor(&nothing, DType::kBF16, Shape{0}));
      continue;
    }
    HostSlice slice(state.store.weight_at(s.begin), DType::kBF16, s.count(), state.store.device());
    writer.write_tensor("model/" + e.name, DType::kBF16, e.shape, s.begin - e.offset_elems, slice.read());
  }
  const Device optim_device = optimizer.state_device();  // host memory when offloaded
  const std::vector<optim::AdamW::SegmentView> views = optimizer.segment_views();
  const optim::OptimizerConfig& config = optimizer.config();
  for (const optim::ParamRange& r : config.ranges) {
    for (const StatePiece& p : state_pieces(config, r, segment_of(views, r))) {
      if (p.count == 0) {
        writer.write_tensor(range_dataset(r, p.suffix), p.dtype, Shape{p.total}, 0, Tensor(&nothing, p.dtype, Shape{0}));
        continue;
      }
      HostSlice slice(p.data, p.dtype, p.count, optim_device);
      writer.write_tensor(range_dataset(r, p.suffix), p.dtype, Shape{p.total}, p.offset, slice.read());
    }
  }
  if (any_8bit_range(config)) write_dynamic_map(writer);
  if (state.fp8_history != nullptr) {
    const Fp8AmaxHistory& h = *state.fp8_history;
    const Shape shape{h.tensors(), int64_t(h.length())};
    const bool writes = comm.rank() == 0;  // replicated: one rank writes it whole
    writer.write_tensor("fp8/amax_history", DType::kF32, shape, 0,
                        writes ? Tensor(const_cast<float*>(h.entries().data()), DType::kF32, Shape{shape.numel()})
                               : Tensor(&nothing, DType::kF32, Shape{0}));
  }
  if (state.gemm_plan_book != nullptr && state.gemm_plan_book->has_value()) {
    write_gemm_plan_book(writer, **state.gemm_plan_book);
  }
  writer.set_attribute("step", progress.step);
  writer.set_attribute("optimizer_steps", optimizer.steps_taken());
  writer.set_attribute("data_position", progress.data_position);
  writer.set_attribute("tokens_seen", progress.tokens_seen);
  writer.set_attribute("skipped_steps", progress.skipped_steps);
  writer.set_attribute("loss_scale", progress.loss_scale);
  writer.set_attribute("loss_scale_clean_steps", progress.loss_scale_clean_steps);
  writer.set_attribute("seed", int64_t(progress.seed));
  writer.set_attribute("data_packing", progress.packing);
  writer.write_string("recipe", identity.recipe_yaml);
  writer.write_string("model_config", identity.model_config_json);
  return writer.commit(commit);
}

}  // namespace

void load_train_checkpoint(const fs::path& path, MpiCommunicator& comm, TrainState& state,
                           const std::string& model_config_json) {
  optim::AdamW& optimizer = state.optimizer;
  H5CheckpointReader reader(path);
  reader.verify_distributed(comm);
  const std::string stored_config = reader.read_string("model_config");
  if (stored_config != model_config_json) {
    const nlohmann::json a = nlohmann::json::parse(stored_config), b = nlohmann::json::parse(model_config_json);
    std::string diff;
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (!a.contains(it.key()) || a[it.key()] != it.value()) {
        diff += " " + it.key() + ": checkpoint " + (a.contains(it.key()) ? a[it.key()].dump() : "(absent)") +
                ", this run " + it.value().dump() + ";";
      }
    }
    FARTHING_FAIL("checkpoint ", path.string(), " holds another model:", diff.empty() ? " configs differ" : diff,
                  " resume it with the recipe that wrote it, or start a new run_dir");
  }
  for (const models::ParamEntry& e : state.layout.entries()) {
    const std::string name = "model/" + e.name;
    const H5TensorInfo& info = reader.tensor(name);
    FARTHING_CHECK(info.dtype == DType::kBF16 && info.shape == e.shape, "checkpoint ", path.string(), ": '", name,
                   "' is ", dtype_name(info.dtype), info.shape.str(), ", expected bf16", e.shape.str());
    const Slice s = owned_part(state.store.layout(), e.unit, e.offset_elems, e.numel());
    if (s.count() > 0) {
      HostSlice slice(state.store.weight_at(s.begin), DType::kBF16, s.count(), state.store.device());
      reader.read_slice(name, s.begin - e.offset_elems, slice.host());
      slice.commit();
    }
  }
  const Device optim_device = optimizer.state_device();  // host memory when offloaded
  const std::vector<optim::AdamW::SegmentView> views = optimizer.segment_views();
  const optim::OptimizerConfig& config = optimizer.config();
  if (any_8bit_range(config)) check_dynamic_map(reader, path);
  for (const optim::ParamRange& r : config.ranges) {
    for (const StatePiece& p : state_pieces(config, r, segment_of(views, r))) {
      const std::string name = range_dataset(r, p.suffix);
      FARTHING_CHECK(reader.has_tensor(name), "checkpoint ", path.string(), " has no optimizer state '", name,
                     "'; it was written with other optimizer settings (state format or master mode) than this recipe's");
      const H5TensorInfo& info = reader.tensor(name);
      FARTHING_CHECK(info.dtype == p.dtype && info.numel == p.total, "checkpoint ", path.string(), ": '", name,
                     "' is ", dtype_name(info.dtype), info.shape.str(), ", expected ", dtype_name(p.dtype), "(",
                     p.total, ")");
      if (p.count > 0) {
        HostSlice slice(p.data, p.dtype, p.count, optim_device);
        reader.read_slice(name, p.offset, slice.host());
        slice.commit();
      }
    }
  }
  if (state.fp8_history != nullptr && reader.has_tensor("fp8/amax_history")) {
    Fp8AmaxHistory& h = *state.fp8_history;
    const H5TensorInfo& info = reader.tensor("fp8/amax_history");
    const Shape expected{h.tensors(), int64_t(h.length())};
    FARTHING_CHECK(info.dtype == DType::kF32 && info.shape == expected, "checkpoint ", path.string(),
                   ": 'fp8/amax_history' is ", dtype_name(info.dtype), info.shape.str(), ", expected f32",
                   expected.str(), " (fp8.amax_history_len and fp8.layers must match the run that wrote it)");
    std::vector<float> entries(size_t(expected.numel()));
    reader.read_slice("fp8/amax_history", 0, Tensor(entries.data(), DType::kF32, Shape{expected.numel()}));
    h.set_entries(entries);
  }
  if (state.gemm_plan_book != nullptr) *state.gemm_plan_book = read_gemm_plan_book(reader);
  optimizer.set_steps_taken(reader.attribute_i64("optimizer_steps"));
  optimizer.on_state_loaded();
  TrainProgressState& progress = state.progress;
  progress.step = reader.attribute_i64("step");
  progress.data_position = reader.attribute_i64("data_position");
  progress.tokens_seen = reader.attribute_i64("tokens_seen");
  progress.skipped_steps = reader.attribute_i64("skipped_steps");
  progress.loss_scale = reader.attribute_f64("loss_scale");
  progress.loss_scale_clean_steps = reader.attribute_i64("loss_scale_clean_steps");
  progress.seed = uint64_t(reader.attribute_i64("seed"));
  progress.packing = reader.has_attribute("data_packing") ? reader.attribute_string("data_packing") : "stream";
  state.store.publish_weights();
}

}  // namespace farthing::train
