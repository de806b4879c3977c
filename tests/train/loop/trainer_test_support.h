// trainer_test_support.h — what the C++ trainer tests share: the world communicator (world size
// 1, or mpirun's), a temporary directory every rank names alike, and a token file of random ids
// (so neither a tokenizer nor ../shared is needed).
// Used by tests/train/loop/test_trainer.cpp, test_memory_estimate.cpp, test_scaling_model.cpp and
// test_offload_timeline.cpp.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "framework/data/token_file.h"
#include "framework/dist/mpi_communicator.h"
#include "train/recipe/run_config.h"

namespace farthing::train::testing {

inline MpiCommunicator& world() {
  static std::unique_ptr<MpiCommunicator> comm = make_world_communicator();
  return *comm;
}

// A fresh temporary directory per test, removed afterwards, that every rank of an mpirun job
// names alike (their parent, mpirun, is the same process): rank 0 makes it.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name) {
    path = std::filesystem::temp_directory_path() / ("farthing_" + name + "_" + std::to_string(int(::getppid())));
    if (world().rank() == 0) {
      std::filesystem::remove_all(path);
      std::filesystem::create_directories(path);
    }
    world().barrier();
  }
  ~TempDir() {
    world().barrier();
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// dir/train.tok: `count` token ids drawn uniformly from [0, vocab) with `seed` (rank 0 writes).
inline std::filesystem::path write_random_tokens(const std::filesystem::path& dir, int64_t vocab, int64_t count,
                                                 uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(0, int32_t(vocab) - 1);
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (int32_t& x : ids) x = id(rng);
  const std::filesystem::path path = dir / "train.tok";
  if (world().rank() == 0) data::write_token_file(path, ids, uint32_t(vocab));
  world().barrier();
  return path;
}

// stories260k from a preset on random tokens in dir: sequences of 32, micro-batches of 2, no
// held-out split, `steps` steps, no progress lines, the run directory dir/run.
inline recipe::RunConfig tiny_token_run(const std::filesystem::path& dir, int64_t steps) {
  recipe::RunConfig c;
  c.model.preset = "stories260k";
  c.data.train = write_random_tokens(dir, 512, 20000, 5).string();
  c.data.format = recipe::DataFormat::kTokens;
  c.data.seq_len = 32;
  c.data.eval_fraction = 0.0;
  c.train.steps = steps;
  c.train.micro_batch = 2;
  c.train.log_every = 0;
  c.checkpoint.run_dir = (dir / "run").string();
  return c;
}

}  // namespace farthing::train::testing
