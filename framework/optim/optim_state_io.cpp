// optim_state_io.cpp — see optim_state_io.h.
#include "framework/optim/optim_state_io.h"

#include "framework/backend/backend.h"

#include "framework/core/error.h"

namespace farthing::optim {

namespace {

Tensor bytes_of(std::span<std::byte> bytes, Device device) {
  return Tensor(bytes.data(), DType::kU8, Shape{int64_t(bytes.size())}, device);
}

}  // namespace

std::vector<SavedStateEntry> save_optimizer_state(AdamW& optimizer) {
  std::vector<SavedStateEntry> saved;
  for (const StateSpan& span : optimizer.state_spans()) {
    std::vector<std::byte> bytes(span.bytes.size());
    if (!bytes.empty()) backend_for(span.device).copy(bytes_of(bytes, Device::cpu()), bytes_of(span.bytes, span.device));
    saved.push_back({span.name, std::move(bytes)});
  }
  return saved;
}

void load_optimizer_state(AdamW& optimizer, const std::vector<SavedStateEntry>& saved) {
  const std::vector<StateSpan> spans = optimizer.state_spans();
  FARTHING_CHECK(spans.size() == saved.size(), "load_optimizer_state: the saved state has ", saved.size(),
                 " entries but this optimizer's configuration and sharding need ", spans.size(),
                 "; load with the configuration and shards the state was saved with");
  // Check everything before writing anything, so a mismatch leaves the optimizer untouched.
  for (size_t i = 0; i < spans.size(); ++i) {
    FARTHING_CHECK(spans[i].name == saved[i].name, "load_optimizer_state: entry ", i, " is '", saved[i].name,
                   "' but this optimizer expects '", spans[i].name, "'");
    FARTHING_CHECK(spans[i].bytes.size() == saved[i].bytes.size(), "load_optimizer_state: '", spans[i].name,
                   "' holds ", saved[i].bytes.size(), " bytes but this optimizer expects ", spans[i].bytes.size());
  }
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].bytes.empty()) continue;
    std::span<std::byte> from(const_cast<std::byte*>(saved[i].bytes.data()), saved[i].bytes.size());
    backend_for(spans[i].device).copy(bytes_of(spans[i].bytes, spans[i].device), bytes_of(from, Device::cpu()));
  }
  optimizer.on_state_loaded();
}

}  // namespace farthing::optim
