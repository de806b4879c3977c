// h5_checkpoint_writer.cpp — see h5_checkpoint_writer.h.
#include "framework/ckpt/h5_checkpoint_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "framework/ckpt/h5_checkpoint_dir.h"
#include "framework/ckpt/h5_checksum.h"
#include "framework/ckpt/h5_util.h"

namespace farthing {

namespace fs = std::filesystem;
using h5_detail::H5Id;

namespace {

// Every rank learns whether any rank failed; all throw together (never a hang in the next
// collective). A failing rank throws its own message, the others name the failing rank.
void agree(MpiCommunicator& comm, const std::string& local_error) {
  int32_t failed_rank = local_error.empty() ? -1 : comm.rank();
  comm.all_reduce(Tensor(&failed_rank, DType::kI32, {1}), ReduceOp::kMax);
  if (failed_rank < 0) return;
  if (!local_error.empty()) throw Error(local_error);
  FARTHING_FAIL("checkpoint write abandoned: rank ", failed_rank,
                " failed (its message says why)");
}

// rank 0's error message (empty when fine), shared with every rank, which then all throw it.
void share_rank0_error(MpiCommunicator& comm, const std::string& error) {
  std::vector<char> text(4096, '\0');
  if (comm.rank() == 0) std::memcpy(text.data(), error.data(), std::min(error.size(), text.size() - 1));
  comm.broadcast(Tensor(text.data(), DType::kU8, {int64_t(text.size())}), 0);
  if (text[0] != '\0') throw Error(std::string(text.data()));
}

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

std::string shape_text(const Shape& shape) { return shape.str(); }

// Adds the row-major flat range [begin, end) of the sub-array at `level` (outer coordinates
// fixed to `prefix`) to the selection of `space`, as at most 2 * rank hyperslabs.
void select_flat_range(hid_t space, const std::vector<hsize_t>& dims, std::vector<hsize_t>& prefix,
                       hsize_t begin, hsize_t end, bool& first) {
  if (begin >= end) return;
  const size_t level = prefix.size();
  const size_t rank = dims.size();
  auto add_block = [&](hsize_t start_here, hsize_t count_here) {
    std::vector<hsize_t> start(rank, 0), count(rank, 1);
    for (size_t i = 0; i < level; ++i) start[i] = prefix[i];
    start[level] = start_here;
    count[level] = count_here;
    for (size_t i = level + 1; i < rank; ++i) count[i] = dims[i];
    FARTHING_H5_CHECK(H5Sselect_hyperslab(space, first ? H5S_SELECT_SET : H5S_SELECT_OR,
                                          start.data(), nullptr, count.data(), nullptr));
    first = false;
  };
  hsize_t inner = 1;
  for (size_t i = level + 1; i < rank; ++i) inner *= dims[i];
  if (inner == 1) {
    add_block(begin, end - begin);
    return;
  }
  if (begin % inner != 0) {  // a partial first row
    const hsize_t row = begin / inner;
    const hsize_t row_end = std::min(end, (row + 1) * inner);
    prefix.push_back(row);
    select_flat_range(space, dims, prefix, begin - row * inner, row_end - row * inner, first);
    prefix.pop_back();
    begin = row_end;
    if (begin >= end) return;
  }
  if (end / inner > begin / inner) add_block(begin / inner, end / inner - begin / inner);
  if (end % inner != 0) {  // a partial last row
    const hsize_t row = end / inner;
    prefix.push_back(row);
    select_flat_range(space, dims, prefix, 0, end - row * inner, first);
    prefix.pop_back();
  }
}

H5Id create_dataset(hid_t file, const std::string& name, hid_t type, hid_t space) {
  H5Id lcpl(FARTHING_H5_CHECK(H5Pcreate(H5P_LINK_CREATE)), H5Pclose);
  FARTHING_H5_CHECK(H5Pset_create_intermediate_group(lcpl.get(), 1));
  H5Id dcpl(FARTHING_H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)), H5Pclose);
  FARTHING_H5_CHECK(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER));  // every byte is written
  return H5Id(FARTHING_H5_CHECK(H5Dcreate2(file, name.c_str(), type, space, lcpl.get(), dcpl.get(),
                                           H5P_DEFAULT)),
              H5Dclose);
}

H5Id collective_transfer() {
  H5Id dxpl(FARTHING_H5_CHECK(H5Pcreate(H5P_DATASET_XFER)), H5Pclose);
  FARTHING_H5_CHECK(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE));
  return dxpl;
}

}  // namespace

H5CheckpointWriter::H5CheckpointWriter(fs::path final_path, MpiCommunicator& comm)
    : final_path_(std::move(final_path)), comm_(comm) {
  h5_detail::silence_default_errors();
  temp_path_ = checkpoint_temp_path(final_path_);
  std::string error;
  if (comm_.rank() == 0) {
    const fs::path dir = final_path_.parent_path().empty() ? fs::path(".") : final_path_.parent_path();
    std::error_code ec;
    const bool is_dir = fs::is_directory(dir, ec);
    const bool absent = !ec || ec == std::errc::no_such_file_or_directory ||
                        ec == std::errc::not_a_directory;
    if (!is_dir) {
      error = error_detail::concat("cannot save checkpoint ", final_path_, ": directory ", dir,
                                   absent ? std::string(" does not exist or is not a directory")
                                          : " cannot be examined: " + ec.message(),
                                   " (create it first, or pick a writable output folder)");
    } else if (fs::is_directory(final_path_, ec)) {
      error = error_detail::concat("cannot save checkpoint ", final_path_,
                                   ": that path is a directory");
    } else {
      const int fd = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) {
        error = error_detail::concat("cannot save checkpoint ", final_path_, ": cannot create ",
                                     temp_path_, " in ", dir, ": ", std::strerror(errno),
                                     " (is the directory writable and the disk not full?)");
      } else {
        ::close(fd);
      }
    }
  }
  share_rank0_error(comm_, error);
  // Drain the communicator's queue: HDF5 calls MPI on this communicator from this thread.
  comm_.barrier();
  error = error_of([&] {
    H5Id fapl(FARTHING_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
    FARTHING_H5_CHECK(H5Pset_fapl_mpio(fapl.get(), comm_.mpi_comm(), MPI_INFO_NULL));
    FARTHING_H5_CHECK(H5Pset_all_coll_metadata_ops(fapl.get(), true));
    FARTHING_H5_CHECK(H5Pset_coll_metadata_write(fapl.get(), true));
    file_ = FARTHING_H5_CHECK(H5Fcreate(temp_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
  });
  agree(comm_, error.empty() ? error
                             : error_detail::concat("cannot create checkpoint file ", temp_path_,
                                                    ": ", error));
}

H5CheckpointWriter::~H5CheckpointWriter() {
  // Closing is collective: only when no exception is unwinding (an error seen by one rank
  // alone would otherwise hang here; tools then abort the job, see abort_on_error.h).
  if (file_ >= 0 && std::uncaught_exceptions() == 0) H5Fclose(hid_t(file_));
}

void H5CheckpointWriter::check_open(const char* call) const {
  FARTHING_CHECK(file_ >= 0 && !committed_, call, " on checkpoint ", final_path_,
                 committed_ ? " after commit()" : " that failed to open");
}

void H5CheckpointWriter::check_same_on_all_ranks(const std::string& what,
                                                 const std::string& description) {
  const int64_t mine = int64_t(crc32_bytes(description.data(), description.size())) |
                       (int64_t(description.size()) << 32);
  std::vector<int64_t> all(size_t(comm_.world_size()));
  comm_.all_gather(Tensor(all.data(), DType::kI64, {int64_t(all.size())}),
                   Tensor(const_cast<int64_t*>(&mine), DType::kI64, {1}));
  for (int r = 0; r < comm_.world_size(); ++r) {
    FARTHING_CHECK(all[size_t(r)] == all[0], "checkpoint ", what, ": rank ", r,
                   " passed different arguments than rank 0 (this rank: ", description,
                   "); every rank must make the same checkpoint calls in the same order");
  }
}

void H5CheckpointWriter::maybe_kill_for_test() {
  const char* after = std::getenv("FARTHING_CKPT_TEST_KILL_AFTER");
  if (after == nullptr) return;
  const char* rank = std::getenv("FARTHING_CKPT_TEST_KILL_RANK");
  if (tensors_written_ == std::atoll(after) && comm_.rank() == (rank ? std::atoi(rank) : 0)) {
    std::raise(SIGKILL);
  }
}

void H5CheckpointWriter::write_tensor(const std::string& name, DType dtype,
                                      const Shape& global_shape, int64_t offset,
                                      const Tensor& local) {
  check_open("write_tensor");
  const int64_t numel = global_shape.numel();
  const int64_t count = local.numel();
  std::string error = error_of([&] {
    FARTHING_CHECK(!name.empty() && name[0] != '/' && name.back() != '/', "tensor name '", name,
                   "' must be a non-empty relative path like 'model/wte'");
    FARTHING_CHECK(local.device().is_cpu() && local.is_contiguous(), "tensor '", name,
                   "': the local slice must be a contiguous host tensor, got ", local.describe());
    FARTHING_CHECK(local.dtype() == dtype, "tensor '", name, "' is declared ", dtype_name(dtype),
                   " but the local slice is ", local.describe());
    FARTHING_CHECK(offset >= 0 && offset + count <= numel, "tensor '", name, "': slice [", offset,
                   ", ", offset + count, ") is outside its ", numel, " elements ",
                   shape_text(global_shape));
    // The test hook fails the first dataset as a failing disk would, on one rank; agree() below
    // makes every rank throw together (never a hang in the collective write).
    if (tensors_written_ == 0) {
      const std::string fault = injected_fault_for_test("dataset", comm_.rank());
      FARTHING_CHECK(fault.empty(), "writing dataset '", name, "' of checkpoint ", temp_path_, " failed: ", fault);
    }
  });
  agree(comm_, error);
  check_same_on_all_ranks("write_tensor", error_detail::concat("'", name, "' ", dtype_name(dtype),
                                                               shape_text(global_shape)));
  const h5_detail::H5Types types = h5_detail::h5_types_of(dtype);
  const size_t elem = dtype_size_bytes(dtype);
  std::vector<hsize_t> dims;
  for (int i = 0; i < global_shape.rank; ++i) dims.push_back(hsize_t(global_shape[i]));
  if (dims.empty()) dims.push_back(1);  // a scalar is stored as (1); its shape attribute is ()
  H5Id file_space(FARTHING_H5_CHECK(H5Screate_simple(int(dims.size()), dims.data(), nullptr)),
                  H5Sclose);
  const hsize_t mem_dims = hsize_t(std::max<int64_t>(count, 1));
  H5Id mem_space(FARTHING_H5_CHECK(H5Screate_simple(1, &mem_dims, nullptr)), H5Sclose);
  if (count == 0) {
    FARTHING_H5_CHECK(H5Sselect_none(file_space.get()));
    FARTHING_H5_CHECK(H5Sselect_none(mem_space.get()));
  } else {
    std::vector<hsize_t> prefix;
    bool first = true;
    select_flat_range(file_space.get(), dims, prefix, hsize_t(offset), hsize_t(offset + count), first);
  }
  H5Id dataset = create_dataset(hid_t(file_), name, types.file_type, file_space.get());
  H5Id dxpl = collective_transfer();
  static const uint64_t kNothing = 0;  // HDF5 wants a pointer even when a rank writes nothing
  // An empty tensor has no storage to write to (every rank knows numel: all skip together).
  if (numel > 0) FARTHING_H5_CHECK(H5Dwrite(dataset.get(), types.mem_type, mem_space.get(), file_space.get(),
                             dxpl.get(), count == 0 ? &kNothing : local.data()));

  // The checksum of the whole tensor, from every rank's piece (h5_checksum.h).
  const int64_t piece[3] = {offset, count, int64_t(crc32_bytes(local.data(), size_t(count) * elem))};
  std::vector<int64_t> pieces(size_t(3 * comm_.world_size()));
  comm_.all_gather(Tensor(pieces.data(), DType::kI64, {int64_t(pieces.size())}),
                   Tensor(const_cast<int64_t*>(piece), DType::kI64, {3}));
  std::vector<ChecksumPiece> parts;
  for (int r = 0; r < comm_.world_size(); ++r) {
    parts.push_back({pieces[size_t(3 * r)], pieces[size_t(3 * r + 1)], uint32_t(pieces[size_t(3 * r + 2)])});
  }
  const uint32_t crc = combine_checksum_pieces(parts, numel, elem, name.c_str());  // same on all
  std::vector<int64_t> shape_attr;
  for (int i = 0; i < global_shape.rank; ++i) shape_attr.push_back(global_shape[i]);
  h5_detail::write_attribute_string(dataset.get(), "farthing_dtype", std::string(dtype_name(dtype)));
  h5_detail::write_attribute_i64_array(dataset.get(), "farthing_shape", shape_attr);
  h5_detail::write_attribute_u32(dataset.get(), "farthing_crc32", crc);
  ++tensors_written_;
  maybe_kill_for_test();
}

void H5CheckpointWriter::write_string(const std::string& name, const std::string& text) {
  check_open("write_string");
  check_same_on_all_ranks("write_string", error_detail::concat("'", name, "' of ", text.size(),
                                                               " bytes, crc ",
                                                               crc32_bytes(text.data(), text.size())));
  H5Id type(FARTHING_H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  FARTHING_H5_CHECK(H5Tset_size(type.get(), text.empty() ? 1 : text.size()));
  FARTHING_H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD));
  H5Id space(FARTHING_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  H5Id mem_space(FARTHING_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  if (comm_.rank() != 0) {  // rank 0 writes the text; the others take part in the collective
    FARTHING_H5_CHECK(H5Sselect_none(space.get()));
    FARTHING_H5_CHECK(H5Sselect_none(mem_space.get()));
  }
  H5Id dataset = create_dataset(hid_t(file_), name, type.get(), space.get());
  H5Id dxpl = collective_transfer();
  const std::string padded = text.empty() ? std::string(1, '\0') : text;
  FARTHING_H5_CHECK(H5Dwrite(dataset.get(), type.get(), mem_space.get(), space.get(), dxpl.get(),
                             padded.data()));
  h5_detail::write_attribute_string(dataset.get(), "farthing_dtype", "string");
  h5_detail::write_attribute_u32(dataset.get(), "farthing_crc32",
                                 crc32_bytes(text.data(), text.size()));
}

void H5CheckpointWriter::set_attribute(const std::string& name, int64_t value) {
  check_open("set_attribute");
  check_same_on_all_ranks("set_attribute", error_detail::concat(name, "=", value, " (i64)"));
  h5_detail::write_attribute_i64(hid_t(file_), name.c_str(), value);
}

void H5CheckpointWriter::set_attribute(const std::string& name, double value) {
  check_open("set_attribute");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  check_same_on_all_ranks("set_attribute", error_detail::concat(name, "=", bits, " (f64 bits)"));
  h5_detail::write_attribute_f64(hid_t(file_), name.c_str(), value);
}

void H5CheckpointWriter::set_attribute(const std::string& name, const std::string& value) {
  check_open("set_attribute");
  check_same_on_all_ranks("set_attribute", error_detail::concat(name, "='", value, "'"));
  h5_detail::write_attribute_string(hid_t(file_), name.c_str(), value);
}

namespace {

// An existing group of the file (created by a write_tensor under it).
h5_detail::H5Id open_group(hid_t file, const std::string& group) {
  FARTHING_CHECK(H5Lexists(file, group.c_str(), H5P_DEFAULT) > 0, "set_group_attribute: the checkpoint has no group '",
                 group, "' (write a tensor under it first)");
  return h5_detail::H5Id(FARTHING_H5_CHECK(H5Gopen2(file, group.c_str(), H5P_DEFAULT)), H5Gclose);
}

}  // namespace

void H5CheckpointWriter::set_group_attribute(const std::string& group, const std::string& name,
                                             const std::string& value) {
  check_open("set_group_attribute");
  check_same_on_all_ranks("set_group_attribute", error_detail::concat(group, "/", name, "='", value, "'"));
  h5_detail::write_attribute_string(open_group(hid_t(file_), group).get(), name.c_str(), value);
}

void H5CheckpointWriter::set_group_attribute(const std::string& group, const std::string& name,
                                             const std::vector<float>& values) {
  check_open("set_group_attribute");
  check_same_on_all_ranks("set_group_attribute",
                          error_detail::concat(group, "/", name, " f32[", values.size(), "] crc ",
                                               crc32_bytes(values.data(), values.size() * sizeof(float))));
  h5_detail::write_attribute_f32_array(open_group(hid_t(file_), group).get(), name.c_str(), values);
}

fs::path H5CheckpointWriter::commit(const CheckpointCommitOptions& options) {
  check_open("commit");
  const hid_t file = hid_t(file_);
  agree(comm_, error_of([&] {
    const std::string fault = injected_fault_for_test("attributes", comm_.rank());
    FARTHING_CHECK(fault.empty(), "writing the attributes of checkpoint ", temp_path_, " failed: ", fault);
  }));
  h5_detail::write_attribute_string(file, "farthing_format", "farthing-checkpoint");
  h5_detail::write_attribute_i64(file, "farthing_format_version", kCheckpointFormatVersion);
  h5_detail::write_attribute_string(file, "farthing_checksum", "crc32-zlib");
  h5_detail::write_attribute_i64(file, "farthing_writer_world_size", comm_.world_size());
  FARTHING_H5_CHECK(H5Fflush(file, H5F_SCOPE_GLOBAL));
  // The completion mark goes last: a file without it was never finished.
  h5_detail::write_attribute_i64(file, "farthing_complete", 1);
  file_ = -1;
  FARTHING_H5_CHECK(H5Fclose(file));  // collective: every rank's data is in the file after this
  std::string error;
  if (comm_.rank() == 0) {
    error = error_of([&] {
      fsync_path(temp_path_);
      durable_rename(temp_path_, final_path_);
      const fs::path dir = final_path_.parent_path().empty() ? fs::path(".") : final_path_.parent_path();
      if (options.update_latest) write_latest_pointer(dir, final_path_.filename());
      if (options.keep_last > 0) prune_checkpoints(dir, options.keep_last);
    });
  }
  share_rank0_error(comm_, error);
  committed_ = true;
  return final_path_;
}

}  // namespace farthing
