// h5_ckpt_driver.cpp — a small "tool" driving the HDF5 checkpoint through mpirun for the
// shell tests (tests/ckpt/test_h5_reshard.sh):
//   h5_ckpt_driver write DIR STEP   all ranks write their balanced share of every tensor of
//                                   h5_test_content.h into DIR/step_NNNNNNNN.h5, update latest
//   h5_ckpt_driver check DIR [STEP] every rank reads its own share at THIS world size from the
//                                   file `latest` names (and checks it is STEP), compares with
//                                   the regenerated contents, verifies all checksums
//   h5_ckpt_driver open FILE        opens and verifies one file (exit 1 with the reason)
// Relies on: framework/ckpt/h5_*, framework/dist.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "framework/ckpt/h5_checkpoint_dir.h"
#include "framework/ckpt/h5_checkpoint_reader.h"
#include "framework/ckpt/h5_checkpoint_writer.h"
#include "framework/dist/abort_on_error.h"
#include "tests/ckpt/h5_test_content.h"

using namespace farthing;

namespace {

int write(MpiCommunicator& comm, const std::string& dir, int64_t step) {
  H5CheckpointWriter writer(checkpoint_path_for_step(dir, step), comm);
  for (const test::TensorSpec& spec : test::checkpoint_specs()) {
    const auto [begin, end] = test::balanced_share(spec.shape.numel(), comm.rank(), comm.world_size());
    std::vector<uint8_t> bytes = test::tensor_bytes(spec, begin, end - begin, uint64_t(step));
    writer.write_tensor(spec.name, spec.dtype, spec.shape, begin,
                        Tensor(bytes.data(), spec.dtype, Shape{end - begin}));
  }
  writer.set_attribute("step", step);
  writer.set_attribute("loss_scale", 65536.0);
  writer.write_string("recipe", "model: stories260K\noptimizer: adamw8bit  # step " + std::to_string(step) + "\n");
  writer.commit({.update_latest = true, .keep_last = 3});
  if (comm.rank() == 0) std::printf("wrote step %lld at np %d\n", (long long)step, comm.world_size());
  return 0;
}

int check(MpiCommunicator& comm, const std::string& dir, int64_t expected_step) {
  const auto latest = resolve_latest(dir);
  FARTHING_CHECK(latest.has_value(), "no latest in ", dir);
  H5CheckpointReader reader(*latest);
  reader.verify_distributed(comm);
  const int64_t step = reader.attribute_i64("step");
  FARTHING_CHECK(expected_step < 0 || step == expected_step, "latest is step ", step, ", expected ",
                 expected_step);
  FARTHING_CHECK(reader.tensors().size() == test::checkpoint_specs().size(), "tensor count ",
                 reader.tensors().size());
  for (const test::TensorSpec& spec : test::checkpoint_specs()) {
    const H5TensorInfo& info = reader.tensor(spec.name);
    FARTHING_CHECK(info.dtype == spec.dtype && info.shape == spec.shape, spec.name, ": stored ",
                   dtype_name(info.dtype), info.shape.str());
    const auto [begin, end] = test::balanced_share(spec.shape.numel(), comm.rank(), comm.world_size());
    std::vector<uint8_t> got(size_t(end - begin) * dtype_size_bytes(spec.dtype));
    reader.read_slice(spec.name, begin, Tensor(got.data(), spec.dtype, Shape{end - begin}));
    FARTHING_CHECK(got == test::tensor_bytes(spec, begin, end - begin, uint64_t(step)), spec.name,
                   ": slice [", begin, ", ", end, ") differs on rank ", comm.rank());
  }
  FARTHING_CHECK(reader.read_string("recipe").find("# step " + std::to_string(step)) != std::string::npos,
                 "recipe text differs");
  FARTHING_CHECK(reader.attribute_f64("loss_scale") == 65536.0, "loss_scale differs");
  comm.barrier();
  if (comm.rank() == 0) {
    std::printf("checked %s (step %lld) at np %d\n", latest->filename().c_str(), (long long)step,
                comm.world_size());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return run_main_or_abort([&] {
    const std::string verb = argc > 1 ? argv[1] : "";
    FARTHING_CHECK(argc >= 3 && (verb == "write" || verb == "check" || verb == "open"),
                   "usage: h5_ckpt_driver write DIR STEP | check DIR [STEP] | open FILE");
    auto comm = make_world_communicator();
    if (verb == "write") return write(*comm, argv[2], argc > 3 ? std::atoll(argv[3]) : 0);
    if (verb == "check") return check(*comm, argv[2], argc > 3 ? std::atoll(argv[3]) : -1);
    H5CheckpointReader reader(argv[2]);
    reader.verify();
    std::printf("ok %s\n", argv[2]);
    return 0;
  });
}
