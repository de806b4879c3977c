// optim_state_io.h — the optimizer's raw state as named byte strings, and back.
//
// save copies every StateSpan of AdamW::state_spans(); load checks that the names and sizes
// are exactly those this optimizer expects (same configuration and sharding) and copies the
// bytes back, so save -> load -> save is byte-identical and the next step is bit-identical.
// The checkpoint layer (framework/ckpt, later) writes these bytes; it need not understand them.
// Relies on: adamw.h. Tested by: tests/optim/test_adamw_8bit.cpp, test_optim_config.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "framework/optim/adamw.h"

namespace farthing::optim {

struct SavedStateEntry {
  std::string name;
  std::vector<std::byte> bytes;
};

std::vector<SavedStateEntry> save_optimizer_state(AdamW& optimizer);
void load_optimizer_state(AdamW& optimizer, const std::vector<SavedStateEntry>& saved);

}  // namespace farthing::optim
