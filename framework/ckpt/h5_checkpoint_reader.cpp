// h5_checkpoint_reader.cpp — see h5_checkpoint_reader.h.
#include "framework/ckpt/h5_checkpoint_reader.h"

#include <algorithm>
#include <exception>

#include "framework/ckpt/h5_checkpoint_writer.h"
#include "framework/ckpt/h5_checksum.h"
#include "framework/ckpt/h5_util.h"
#include "framework/ckpt/model_file.h"
#include "framework/dist/communicator.h"

namespace farthing {

namespace fs = std::filesystem;
using h5_detail::H5Id;

namespace {

herr_t collect_dataset(hid_t group, const char* name, const H5L_info_t* info, void* data) {
  if (info->type != H5L_TYPE_HARD) return 0;
  const hid_t object = H5Oopen(group, name, H5P_DEFAULT);
  if (object < 0) return -1;
  if (H5Iget_type(object) == H5I_DATASET) static_cast<std::vector<std::string>*>(data)->push_back(name);
  H5Oclose(object);
  return 0;
}

constexpr size_t kVerifyPieceBytes = size_t(16) << 20;

}  // namespace

H5CheckpointReader::H5CheckpointReader(fs::path path) : path_(std::move(path)) {
  h5_detail::silence_default_errors();
  FARTHING_CHECK(fs::is_regular_file(path_), "checkpoint ", path_, " does not exist");
  const htri_t is_hdf5 = H5Fis_hdf5(path_.c_str());
  FARTHING_CHECK(is_hdf5 > 0, "checkpoint ", path_, " is not an HDF5 file (",
                 fs::file_size(path_), " bytes; damaged or not a checkpoint)",
                 h5_detail::error_stack_text());
  const hid_t file = H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  FARTHING_CHECK(file >= 0, "checkpoint ", path_, " cannot be opened: the file is truncated or "
                 "damaged (", fs::file_size(path_), " bytes). HDF5 says:",
                 h5_detail::error_stack_text());
  file_ = file;
  FARTHING_CHECK(h5_detail::has_attribute(file, "farthing_complete") &&
                     h5_detail::read_attribute_i64(file, "farthing_complete") == 1,
                 "checkpoint ", path_, " has no completion mark: the save that wrote it never "
                 "finished; use the previous checkpoint (see the run's `latest`)");
  FARTHING_CHECK(h5_detail::has_attribute(file, "farthing_format_version"), "checkpoint ", path_,
                 " has no farthing_format_version: not a farthing checkpoint");
  format_version_ = h5_detail::read_attribute_i64(file, "farthing_format_version");
  FARTHING_CHECK(format_version_ == kCheckpointFormatVersion, "checkpoint ", path_,
                 " has format version ", format_version_, " but this build reads version ",
                 kCheckpointFormatVersion, " (docs/checkpoint_format.md)");

  std::vector<std::string> names;
  FARTHING_H5_CHECK(H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &names));
  for (const std::string& name : names) {
    H5Id dataset(FARTHING_H5_CHECK(H5Dopen2(file, name.c_str(), H5P_DEFAULT)), H5Dclose);
    FARTHING_CHECK(h5_detail::has_attribute(dataset.get(), "farthing_dtype") &&
                       h5_detail::has_attribute(dataset.get(), "farthing_crc32"),
                   "checkpoint ", path_, ": dataset '", name,
                   "' lacks farthing_dtype/farthing_crc32 (written by another tool?)");
    const std::string dtype = h5_detail::read_attribute_string(dataset.get(), "farthing_dtype");
    const auto crc = uint32_t(h5_detail::read_attribute_i64(dataset.get(), "farthing_crc32"));
    checked_.emplace_back(name, crc);
    if (dtype == "string") {
      strings_.push_back(name);
      continue;
    }
    H5TensorInfo info;
    info.name = name;
    info.dtype = parse_dtype(dtype);
    info.crc32 = crc;
    const std::vector<int64_t> dims = h5_detail::read_attribute_i64_array(dataset.get(), "farthing_shape");
    FARTHING_CHECK(dims.size() <= size_t(kMaxRank), "checkpoint ", path_, ": tensor '", name,
                   "' has rank ", dims.size(), " > ", kMaxRank);
    // Negative or overflowing dims are damage: shape_from_dims refuses them, naming the tensor.
    info.shape = ckpt::shape_from_dims(dims, "checkpoint " + path_.string() + ": tensor '" + name + "'");
    info.numel = info.shape.numel();
    H5Id space(FARTHING_H5_CHECK(H5Dget_space(dataset.get())), H5Sclose);
    FARTHING_CHECK(H5Sget_simple_extent_npoints(space.get()) == (dims.empty() ? 1 : info.numel),
                   "checkpoint ", path_, ": tensor '", name, "' holds ",
                   H5Sget_simple_extent_npoints(space.get()), " elements but its shape says ",
                   info.shape.str());
    tensors_.push_back(info);
  }
  std::sort(tensors_.begin(), tensors_.end(),
            [](const H5TensorInfo& a, const H5TensorInfo& b) { return a.name < b.name; });
  std::sort(strings_.begin(), strings_.end());
}

H5CheckpointReader::~H5CheckpointReader() {
  if (file_ >= 0) H5Fclose(hid_t(file_));
}

bool H5CheckpointReader::has_tensor(const std::string& name) const {
  return std::any_of(tensors_.begin(), tensors_.end(),
                     [&](const H5TensorInfo& t) { return t.name == name; });
}

const H5TensorInfo& H5CheckpointReader::tensor(const std::string& name) const {
  for (const H5TensorInfo& t : tensors_)
    if (t.name == name) return t;
  FARTHING_FAIL("checkpoint ", path_, " has no tensor '", name, "' (it holds ", tensors_.size(),
                " tensors; list them with `farthing inspect`)");
}

void H5CheckpointReader::read_slice(const std::string& name, int64_t offset, const Tensor& out) const {
  const H5TensorInfo& info = tensor(name);
  FARTHING_CHECK(out.device().is_cpu() && out.is_contiguous() && out.dtype() == info.dtype,
                 "reading '", name, "' (", dtype_name(info.dtype), info.shape.str(), ") from ",
                 path_, " into ", out.describe(), ": need a contiguous host ",
                 dtype_name(info.dtype), " tensor");
  const int64_t count = out.numel();
  FARTHING_CHECK(offset >= 0 && offset + count <= info.numel, "reading '", name, "' from ", path_,
                 ": slice [", offset, ", ", offset + count, ") is outside its ", info.numel,
                 " elements ", info.shape.str());
  if (count == 0) return;
  H5Id dataset(FARTHING_H5_CHECK(H5Dopen2(hid_t(file_), name.c_str(), H5P_DEFAULT)), H5Dclose);
  H5Id file_space(FARTHING_H5_CHECK(H5Dget_space(dataset.get())), H5Sclose);
  // The stored dataspace is N-D; its flat row-major order is the tensor's, so the slice is one
  // 1-D hyperslab of the same dataspace reshaped to (numel).
  const hsize_t total = hsize_t(H5Sget_simple_extent_npoints(file_space.get()));
  const hsize_t start = hsize_t(offset), n = hsize_t(count);
  H5Id mem_space(FARTHING_H5_CHECK(H5Screate_simple(1, &n, nullptr)), H5Sclose);
  // NOTE: reading through a 1-D file space of the same number of elements is only valid for
  // contiguous (unchunked) datasets, which is what the writer creates; checked here.
  H5Id dcpl(FARTHING_H5_CHECK(H5Dget_create_plist(dataset.get())), H5Pclose);
  FARTHING_CHECK(H5Pget_layout(dcpl.get()) != H5D_CHUNKED, "checkpoint ", path_, ": tensor '",
                 name, "' is chunked; farthing writes contiguous datasets");
  FARTHING_H5_CHECK(H5Sset_extent_simple(file_space.get(), 1, &total, nullptr));
  FARTHING_H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &n, nullptr));
  FARTHING_H5_CHECK(H5Dread(dataset.get(), h5_detail::h5_types_of(info.dtype).mem_type,
                            mem_space.get(), file_space.get(), H5P_DEFAULT, out.data()));
}

std::string H5CheckpointReader::read_string(const std::string& name) const {
  FARTHING_CHECK(std::find(strings_.begin(), strings_.end(), name) != strings_.end(), "checkpoint ",
                 path_, " has no string '", name, "'");
  H5Id dataset(FARTHING_H5_CHECK(H5Dopen2(hid_t(file_), name.c_str(), H5P_DEFAULT)), H5Dclose);
  H5Id type(FARTHING_H5_CHECK(H5Dget_type(dataset.get())), H5Tclose);
  H5Id space(FARTHING_H5_CHECK(H5Dget_space(dataset.get())), H5Sclose);
  // H5Dread with H5S_ALL writes every element the file declares: one fixed-length string, as
  // the writer makes it, or the buffer below is overrun.
  const size_t size = H5Tget_size(type.get());
  FARTHING_CHECK(H5Tget_class(type.get()) == H5T_STRING && H5Tis_variable_str(type.get()) == 0 &&
                     H5Sget_simple_extent_npoints(space.get()) == 1 && size <= fs::file_size(path_),
                 "checkpoint ", path_, ": string '", name, "' is not one fixed-length string of at "
                 "most the file's size (", H5Sget_simple_extent_npoints(space.get()), " elements of ",
                 size, " bytes)");
  std::string text(size, '\0');
  FARTHING_H5_CHECK(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()));
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

bool H5CheckpointReader::has_attribute(const std::string& name) const {
  return h5_detail::has_attribute(hid_t(file_), name.c_str());
}
int64_t H5CheckpointReader::attribute_i64(const std::string& name) const {
  return h5_detail::read_attribute_i64(hid_t(file_), name.c_str());
}
double H5CheckpointReader::attribute_f64(const std::string& name) const {
  return h5_detail::read_attribute_f64(hid_t(file_), name.c_str());
}
std::string H5CheckpointReader::attribute_string(const std::string& name) const {
  return h5_detail::read_attribute_string(hid_t(file_), name.c_str());
}

namespace {

h5_detail::H5Id open_group(hid_t file, const std::string& group) {
  return h5_detail::H5Id(FARTHING_H5_CHECK(H5Gopen2(file, group.c_str(), H5P_DEFAULT)), H5Gclose);
}

}  // namespace

bool H5CheckpointReader::has_group_attribute(const std::string& group, const std::string& name) const {
  if (H5Lexists(hid_t(file_), group.c_str(), H5P_DEFAULT) <= 0) return false;
  return h5_detail::has_attribute(open_group(hid_t(file_), group).get(), name.c_str());
}
std::string H5CheckpointReader::group_attribute_string(const std::string& group, const std::string& name) const {
  return h5_detail::read_attribute_string(open_group(hid_t(file_), group).get(), name.c_str());
}
std::vector<float> H5CheckpointReader::group_attribute_f32_array(const std::string& group,
                                                                 const std::string& name) const {
  return h5_detail::read_attribute_f32_array(open_group(hid_t(file_), group).get(), name.c_str());
}

std::string H5CheckpointReader::verify_one(size_t index) const {
  const auto& [name, stored] = checked_[index];
  try {
    uint32_t crc = 0;
    if (std::find(strings_.begin(), strings_.end(), name) != strings_.end()) {
      const std::string text = read_string(name);
      crc = crc32_bytes(text.data(), text.size());
    } else {
      const H5TensorInfo& info = tensor(name);
      const size_t elem = dtype_size_bytes(info.dtype);
      const int64_t piece_elems = int64_t(kVerifyPieceBytes / elem);
      std::vector<uint8_t> buffer(size_t(std::min(piece_elems, info.numel)) * elem);
      for (int64_t at = 0; at < info.numel; at += piece_elems) {
        const int64_t n = std::min(piece_elems, info.numel - at);
        read_slice(name, at, Tensor(buffer.data(), info.dtype, Shape{n}));
        crc = crc32_bytes(buffer.data(), size_t(n) * elem, crc);
      }
    }
    if (crc != stored) {
      return error_detail::concat("checkpoint ", path_, ": dataset '", name,
                                  "' is damaged (crc32 ", crc, " but ", stored,
                                  " was stored); use an earlier checkpoint");
    }
  } catch (const std::exception& e) {
    return error_detail::concat("checkpoint ", path_, ": dataset '", name,
                                "' cannot be read: ", e.what());
  }
  return {};
}

void H5CheckpointReader::verify() const {
  for (size_t i = 0; i < checked_.size(); ++i) {
    const std::string problem = verify_one(i);
    if (!problem.empty()) throw Error(problem);
  }
}

void H5CheckpointReader::verify_distributed(Communicator& comm) const {
  int32_t first_bad = int32_t(checked_.size());
  std::string problem;
  for (size_t i = size_t(comm.rank()); i < checked_.size(); i += size_t(comm.world_size())) {
    problem = verify_one(i);
    if (!problem.empty()) {
      first_bad = int32_t(i);
      break;
    }
  }
  int32_t reduced = -first_bad;  // max of the negation: the smallest damaged index
  comm.all_reduce(Tensor(&reduced, DType::kI32, {1}), ReduceOp::kMax);
  if (-reduced >= int32_t(checked_.size())) return;
  if (-reduced == first_bad) throw Error(problem);
  FARTHING_FAIL("checkpoint ", path_, ": dataset '", checked_[size_t(-reduced)].first,
                "' is damaged (found by another rank)");
}

}  // namespace farthing
