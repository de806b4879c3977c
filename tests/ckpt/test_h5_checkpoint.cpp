// test_h5_checkpoint.cpp — the parallel HDF5 checkpoint (framework/ckpt/h5_*): round trip of
// every dtype with uneven slices per rank (some ranks owning nothing), attributes and strings,
// checksums independent of the split, `latest` and keep-last-K, collective argument checks
// that fail on every rank instead of hanging, and the refusals: truncated file, bit-flipped
// dataset, missing completion mark, unwritable directory (nothing touched), and h5dump.
// Runs as np=1 without mpirun (label unit) and under mpirun -np 2 / -np 3 (label mpi); file
// damage is done by rank 0 while the others wait at a barrier.
// Relies on: framework/ckpt/h5_*, framework/dist, tests/dist/mpi_test_main.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "framework/ckpt/h5_checkpoint_dir.h"
#include "framework/ckpt/h5_checkpoint_reader.h"
#include "framework/ckpt/h5_checkpoint_writer.h"
#include "framework/ckpt/h5_checksum.h"
#include "tests/ckpt/h5_test_content.h"
#include "tests/support/test_support.h"

namespace farthing {
namespace {

namespace fs = std::filesystem;

MpiCommunicator& world() {
  static std::unique_ptr<MpiCommunicator> comm = make_world_communicator();
  return *comm;
}

// A fresh directory shared by all ranks (rank 0 creates it and broadcasts the name).
fs::path shared_temp_dir() {
  std::vector<char> name(512, '\0');
  if (world().rank() == 0) {
    std::string templ = (fs::temp_directory_path() / "farthing_h5_XXXXXX").string();
    FARTHING_CHECK(::mkdtemp(templ.data()) != nullptr, "mkdtemp failed");
    std::snprintf(name.data(), name.size(), "%s", templ.c_str());
  }
  world().broadcast(Tensor(name.data(), DType::kU8, {int64_t(name.size())}), 0);
  return fs::path(name.data());
}

struct TempDir {
  fs::path path = shared_temp_dir();
  ~TempDir() {
    world().barrier();
    if (world().rank() == 0) fs::remove_all(path);
  }
};

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// Uneven shares: rank r of w owns a share proportional to r (rank 0 owns nothing when w > 1).
std::pair<int64_t, int64_t> uneven_share(int64_t n, int r, int w) {
  const int64_t parts = int64_t(w) * (w - 1) / 2;
  if (parts == 0) return {0, n};
  const int64_t before = int64_t(r) * (r - 1) / 2;
  return {n * before / parts, n * (before + r) / parts};
}

fs::path write_checkpoint(const fs::path& dir, int64_t step, CheckpointCommitOptions options = {}) {
  H5CheckpointWriter writer(checkpoint_path_for_step(dir, step), world());
  for (const test::TensorSpec& spec : test::checkpoint_specs()) {
    const auto [begin, end] = uneven_share(spec.shape.numel(), world().rank(), world().world_size());
    std::vector<uint8_t> bytes = test::tensor_bytes(spec, begin, end - begin, uint64_t(step));
    writer.write_tensor(spec.name, spec.dtype, spec.shape, begin,
                        Tensor(bytes.data(), spec.dtype, Shape{end - begin}));
  }
  writer.set_attribute("step", step);
  writer.set_attribute("loss_scale", 0.5);
  writer.set_attribute("model", std::string("stories260K"));
  writer.write_string("recipe", "lr: 1e-4\n# step " + std::to_string(step));
  writer.write_string("empty_text", "");
  return writer.commit(options);
}

// Runs fn on rank 0 only, everybody waiting; a failure on rank 0 is reported there.
template <class Fn>
void on_rank0(Fn&& fn) {
  if (world().rank() == 0) fn();
  world().barrier();
}

std::string error_text(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(H5Checksum, CombinedPiecesEqualTheWhole) {
  std::vector<uint8_t> data(10007);
  test::SplitMix64 rng(3);
  for (auto& b : data) b = uint8_t(rng.next());
  const uint32_t whole = crc32_bytes(data.data(), data.size());
  for (int64_t cut1 : {0, 1, 4000}) {
    for (int64_t cut2 : {4000, 9999, 10007}) {
      std::vector<ChecksumPiece> pieces = {
          {cut2, 10007 - cut2, crc32_bytes(data.data() + cut2, size_t(10007 - cut2))},
          {0, cut1, crc32_bytes(data.data(), size_t(cut1))},
          {cut1, cut2 - cut1, crc32_bytes(data.data() + cut1, size_t(cut2 - cut1))}};
      EXPECT_EQ(combine_checksum_pieces(pieces, 10007, 1, "t"), whole) << cut1 << " " << cut2;
    }
  }
  std::vector<ChecksumPiece> gap = {{0, 10, 0}, {11, 5, 0}};
  EXPECT_NE(error_text([&] { combine_checksum_pieces(gap, 16, 4, "w"); }).find("leave a gap at element 10"),
            std::string::npos);
  std::vector<ChecksumPiece> overlap = {{0, 10, 0}, {9, 7, 0}};
  EXPECT_NE(error_text([&] { combine_checksum_pieces(overlap, 16, 4, "w"); }).find("overlap"),
            std::string::npos);
}

TEST(H5Checkpoint, RoundTripEveryDtypeWithUnevenSlices) {
  TempDir dir;
  const fs::path file = write_checkpoint(dir.path, 3);
  EXPECT_EQ(file, checkpoint_path_for_step(dir.path, 3));
  H5CheckpointReader reader(file);
  EXPECT_NO_THROW(reader.verify());
  EXPECT_NO_THROW(reader.verify_distributed(world()));
  EXPECT_EQ(reader.format_version(), kCheckpointFormatVersion);
  EXPECT_EQ(reader.attribute_i64("step"), 3);
  EXPECT_EQ(reader.attribute_f64("loss_scale"), 0.5);
  EXPECT_EQ(reader.attribute_string("model"), "stories260K");
  EXPECT_EQ(reader.attribute_i64("farthing_writer_world_size"), world().world_size());
  EXPECT_EQ(reader.read_string("recipe"), "lr: 1e-4\n# step 3");
  EXPECT_EQ(reader.read_string("empty_text"), "");
  ASSERT_EQ(reader.tensors().size(), test::checkpoint_specs().size());
  for (const test::TensorSpec& spec : test::checkpoint_specs()) {
    const H5TensorInfo& info = reader.tensor(spec.name);
    EXPECT_EQ(info.dtype, spec.dtype) << spec.name;
    EXPECT_EQ(info.shape, spec.shape) << spec.name << " " << info.shape.str();
    // The stored checksum is the CRC of the whole tensor, whatever the split.
    const std::vector<uint8_t> whole = test::tensor_bytes(spec, 0, spec.shape.numel(), 3);
    EXPECT_EQ(info.crc32, crc32_bytes(whole.data(), whole.size())) << spec.name;
    std::vector<uint8_t> got(whole.size());
    reader.read_slice(spec.name, 0, Tensor(got.data(), spec.dtype, Shape{spec.shape.numel()}));
    EXPECT_EQ(got, whole) << spec.name;
    if (spec.shape.numel() > 3) {  // a slice that straddles rows
      std::vector<uint8_t> part(size_t(spec.shape.numel() - 3) * dtype_size_bytes(spec.dtype));
      reader.read_slice(spec.name, 2, Tensor(part.data(), spec.dtype, Shape{spec.shape.numel() - 3}));
      EXPECT_EQ(part, test::tensor_bytes(spec, 2, spec.shape.numel() - 3, 3)) << spec.name;
    }
  }
  EXPECT_NE(error_text([&] { reader.tensor("nope"); }).find("has no tensor 'nope'"), std::string::npos);
  std::vector<float> wrong(3);
  EXPECT_THROW(reader.read_slice("model/wte", 0, Tensor(wrong.data(), DType::kF32, Shape{3})), Error);
  std::vector<Bf16Bits> past(3);
  EXPECT_THROW(reader.read_slice("model/wte", 37 * 16 - 2, Tensor(past.data(), DType::kBF16, Shape{3})), Error);
}

TEST(H5Checkpoint, LatestPointerAndKeepLast) {
  TempDir dir;
  for (int64_t step = 1; step <= 4; ++step) write_checkpoint(dir.path, step, {.update_latest = true, .keep_last = 2});
  on_rank0([&] {
    EXPECT_EQ(listing(dir.path), (std::set<std::string>{"latest", "step_00000003.h5", "step_00000004.h5"}));
    EXPECT_EQ(resolve_latest(dir.path), checkpoint_path_for_step(dir.path, 4));
  });
  write_checkpoint(dir.path, 5, {.update_latest = false, .keep_last = 0});
  on_rank0([&] { EXPECT_EQ(resolve_latest(dir.path), checkpoint_path_for_step(dir.path, 4)); });
}

TEST(H5Checkpoint, MismatchedCallsFailOnEveryRankWithoutHanging) {
  TempDir dir;
  H5CheckpointWriter writer(checkpoint_path_for_step(dir.path, 1), world());
  std::vector<float> data(4);
  // Every rank claims the whole tensor: the slices overlap (or, alone, fine).
  const std::string overlap = error_text([&] {
    writer.write_tensor("a", DType::kF32, Shape{4}, 0, Tensor(data.data(), DType::kF32, Shape{4}));
  });
  if (world().world_size() > 1) {
    EXPECT_NE(overlap.find("overlap"), std::string::npos) << overlap;
  } else {
    EXPECT_EQ(overlap, "");
  }
  // A slice outside the tensor on one rank: all ranks throw.
  const int64_t offset = world().rank() == world().world_size() - 1 ? 3 : 0;
  const std::string outside = error_text([&] {
    writer.write_tensor("b", DType::kF32, Shape{4}, offset, Tensor(data.data(), DType::kF32, Shape{2}));
  });
  EXPECT_NE(outside, "");
  // Different shapes on different ranks.
  if (world().world_size() > 1) {
    const std::string shapes = error_text([&] {
      writer.write_tensor("c", DType::kF32, Shape{4, int64_t(1 + world().rank())}, 0,
                          Tensor(data.data(), DType::kF32, Shape{0}));
    });
    EXPECT_NE(shapes.find("different arguments"), std::string::npos) << shapes;
  }
  writer.set_attribute("step", int64_t(1));
}

TEST(H5Checkpoint, DamagedFilesAreRefusedNamingTheFileAndDataset) {
  TempDir dir;
  const fs::path file = write_checkpoint(dir.path, 1);
  on_rank0([&] {
    std::vector<uint8_t> bytes = test::read_file_bytes(file);
    // Bit flip inside model/blocks/0/attn/w: find its bytes (unique) and flip one bit.
    const test::TensorSpec spec = test::checkpoint_specs()[1];
    const std::vector<uint8_t> data = test::tensor_bytes(spec, 0, spec.shape.numel(), 1);
    auto at = std::search(bytes.begin(), bytes.end(), data.begin(), data.end());
    ASSERT_NE(at, bytes.end()) << "tensor bytes not found in the file";
    const fs::path flipped = dir.path / "flipped.h5";
    std::vector<uint8_t> damaged = bytes;
    damaged[size_t(at - bytes.begin()) + 41] ^= 0x10;
    std::ofstream(flipped, std::ios::binary).write(reinterpret_cast<const char*>(damaged.data()), std::streamsize(damaged.size()));
    H5CheckpointReader reader(flipped);  // the structure is intact: it opens
    const std::string flip_error = error_text([&] { reader.verify(); });
    EXPECT_NE(flip_error.find("dataset 'model/blocks/0/attn/w' is damaged"), std::string::npos) << flip_error;
    EXPECT_NE(flip_error.find("flipped.h5"), std::string::npos) << flip_error;

    const fs::path truncated = dir.path / "truncated.h5";
    std::ofstream(truncated, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size() * 2 / 3));
    const std::string trunc_error = error_text([&] { H5CheckpointReader r(truncated); r.verify(); });
    EXPECT_NE(trunc_error.find("truncated.h5"), std::string::npos) << trunc_error;
    EXPECT_NE(trunc_error.find("truncated or damaged"), std::string::npos) << trunc_error;

    const fs::path garbage = dir.path / "garbage.h5";
    std::ofstream(garbage) << "not a checkpoint";
    EXPECT_NE(error_text([&] { H5CheckpointReader r(garbage); }).find("is not an HDF5 file"), std::string::npos);
  });
}

TEST(H5Checkpoint, WriterWithoutCommitLeavesNoCheckpoint) {
  TempDir dir;
  {
    H5CheckpointWriter writer(checkpoint_path_for_step(dir.path, 9), world());
    std::vector<int32_t> v = {1, 2};
    const auto [b, e] = test::balanced_share(2, world().rank(), world().world_size());
    writer.write_tensor("v", DType::kI32, Shape{2}, b, Tensor(v.data() + b, DType::kI32, Shape{e - b}));
  }
  world().barrier();
  on_rank0([&] {
    EXPECT_FALSE(fs::exists(checkpoint_path_for_step(dir.path, 9)));
    EXPECT_FALSE(resolve_latest(dir.path).has_value());
    const fs::path temp = checkpoint_temp_path(checkpoint_path_for_step(dir.path, 9));
    ASSERT_TRUE(fs::exists(temp));
    const std::string error = error_text([&] { H5CheckpointReader r(temp); });
    EXPECT_NE(error.find("no completion mark"), std::string::npos) << error;
    EXPECT_EQ(prune_checkpoints(dir.path, 0), std::vector<fs::path>{temp});  // stale temp removed
  });
}

TEST(H5Checkpoint, UnwritableDirectoryIsAClearErrorAndTouchesNothing) {
  TempDir dir;
  const fs::path good = write_checkpoint(dir.path, 1);
  std::set<std::string> before;
  on_rank0([&] {
    before = listing(dir.path);
    std::ofstream(dir.path / "a_file") << "x";
  });
  const std::string missing = error_text([&] { H5CheckpointWriter w(dir.path / "no_such_dir" / "step_00000002.h5", world()); });
  EXPECT_NE(missing.find("does not exist"), std::string::npos) << missing;
  EXPECT_NE(missing.find("no_such_dir"), std::string::npos) << missing;
  const std::string not_dir = error_text([&] { H5CheckpointWriter w(dir.path / "a_file" / "step_00000002.h5", world()); });
  EXPECT_NE(not_dir.find("a_file"), std::string::npos) << not_dir;
  on_rank0([&] {
    fs::remove(dir.path / "a_file");
    EXPECT_EQ(listing(dir.path), before);
  });
  if (::geteuid() != 0) {  // root ignores permission bits
    const fs::path locked = dir.path / "locked";
    on_rank0([&] { fs::create_directory(locked); fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec); });
    const std::string denied = error_text([&] { H5CheckpointWriter w(locked / "step_00000002.h5", world()); });
    EXPECT_NE(denied.find("Permission denied"), std::string::npos) << denied;
    on_rank0([&] { EXPECT_TRUE(fs::is_empty(locked)); fs::permissions(locked, fs::perms::owner_all); });
  }
  on_rank0([&] { EXPECT_NO_THROW(H5CheckpointReader(good).verify()); });
}

TEST(H5Checkpoint, OpensWithH5dump) {
  TempDir dir;
  const fs::path file = write_checkpoint(dir.path, 1);
  on_rank0([&] {
    if (std::system("command -v h5dump >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "h5dump is not installed (apt-get install hdf5-tools)";
    }
    const fs::path out = dir.path / "dump.txt";
    const std::string cmd = "h5dump -A " + file.string() + " > " + out.string() + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream in(out);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("DATASET \"wte\""), std::string::npos) << text.substr(0, 400);
    EXPECT_NE(text.find("farthing_complete"), std::string::npos);
    EXPECT_NE(text.find("\"bf16\""), std::string::npos);
  });
}

}  // namespace
}  // namespace farthing
