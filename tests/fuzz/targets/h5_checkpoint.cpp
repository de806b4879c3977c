// Fuzz target: the HDF5 checkpoint reader on a (mutated) checkpoint: open (completion mark,
// format version, tensor table), verify every checksum, read every attribute and string, and
// every tensor whole when it is small.
#include <cstdint>
#include <vector>

#include "framework/ckpt/h5_checkpoint_reader.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace farthing;
  const auto path = fuzz::input_file(data, size, "step_00000001.h5");
  fuzz::guarded([&] {
    const H5CheckpointReader reader(path);
    fuzz::guarded([&] { reader.verify(); });
    for (const char* name : {"step", "loss_scale", "format_version"}) {
      if (!reader.has_attribute(name)) continue;
      fuzz::guarded([&] { (void)reader.attribute_i64(name); });
      fuzz::guarded([&] { (void)reader.attribute_f64(name); });
      fuzz::guarded([&] { (void)reader.attribute_string(name); });
    }
    for (const std::string& s : reader.strings()) fuzz::guarded([&] { (void)reader.read_string(s); });
    std::vector<uint8_t> bytes;
    for (const H5TensorInfo& t : reader.tensors()) {
      const uint64_t n = uint64_t(t.numel) * dtype_size_bytes(t.dtype);
      if (t.numel <= 0 || n > (uint64_t(1) << 24)) continue;
      bytes.resize(n);
      fuzz::guarded([&] { reader.read_slice(t.name, 0, Tensor(bytes.data(), t.dtype, Shape{t.numel})); });
    }
  });
  return 0;
}
