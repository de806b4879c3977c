// h5_util.cpp — see h5_util.h.
#include "framework/ckpt/h5_util.h"

namespace farthing::h5_detail {

H5Types h5_types_of(DType dtype) {
  switch (dtype) {
    case DType::kF32: return {H5T_IEEE_F32LE, H5T_NATIVE_FLOAT};
    case DType::kF64: return {H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE};
    case DType::kI32: return {H5T_STD_I32LE, H5T_NATIVE_INT32};
    case DType::kI64: return {H5T_STD_I64LE, H5T_NATIVE_INT64};
    case DType::kU8: return {H5T_STD_U8LE, H5T_NATIVE_UINT8};
    case DType::kBF16:
    case DType::kF16: return {H5T_STD_U16LE, H5T_NATIVE_UINT16};
    case DType::kE4M3:
    case DType::kE5M2: return {H5T_STD_U8LE, H5T_NATIVE_UINT8};
  }
  FARTHING_FAIL("no HDF5 type for dtype code ", int(dtype));
}

namespace {

void write_attribute(hid_t object, const char* name, hid_t file_type, hid_t mem_type,
                     hid_t space, const void* data) {
  if (H5Aexists(object, name) > 0) FARTHING_H5_CHECK(H5Adelete(object, name));
  H5Id attr(FARTHING_H5_CHECK(H5Acreate2(object, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT)),
            H5Aclose);
  if (H5Sget_simple_extent_type(space) == H5S_NULL) return;  // an empty array: nothing to write
  FARTHING_H5_CHECK(H5Awrite(attr.get(), mem_type, data));
}

void write_scalar(hid_t object, const char* name, hid_t file_type, hid_t mem_type, const void* data) {
  H5Id space(FARTHING_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  write_attribute(object, name, file_type, mem_type, space.get(), data);
}

H5Id open_attribute(hid_t object, const char* name) {
  FARTHING_CHECK(H5Aexists(object, name) > 0, "attribute '", name, "' is missing");
  return H5Id(FARTHING_H5_CHECK(H5Aopen(object, name, H5P_DEFAULT)), H5Aclose);
}

// The number of elements the file says the attribute holds. H5Aread writes all of them, so a
// scalar read into one value first checks there is exactly one (a damaged file saying 2 made
// H5Aread write past the variable).
hssize_t attribute_points(hid_t attr) {
  H5Id space(FARTHING_H5_CHECK(H5Aget_space(attr)), H5Sclose);
  return H5Sget_simple_extent_npoints(space.get());
}
void check_one_value(hid_t attr, const char* name, const char* what) {
  const hssize_t n = attribute_points(attr);
  FARTHING_CHECK(n == 1, "attribute '", name, "' holds ", n, " values; expected one ", what);
}

// NOTE: farthing writes short attributes (dtypes, names, the recipe is a dataset); a declared
// size past this is damage, refused before a buffer is sized by it.
constexpr size_t kMaxAttributeBytes = size_t(16) << 20;

}  // namespace

void write_attribute_i64(hid_t object, const char* name, int64_t value) {
  write_scalar(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}
void write_attribute_u32(hid_t object, const char* name, uint32_t value) {
  write_scalar(object, name, H5T_STD_U32LE, H5T_NATIVE_UINT32, &value);
}
void write_attribute_f64(hid_t object, const char* name, double value) {
  write_scalar(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}
void write_attribute_string(hid_t object, const char* name, const std::string& value) {
  H5Id type(FARTHING_H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  FARTHING_H5_CHECK(H5Tset_size(type.get(), value.empty() ? 1 : value.size()));
  FARTHING_H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD));
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  write_scalar(object, name, type.get(), type.get(), padded.data());
}
void write_attribute_i64_array(hid_t object, const char* name, const std::vector<int64_t>& values) {
  const hsize_t n = values.size();
  H5Id space(values.empty() ? FARTHING_H5_CHECK(H5Screate(H5S_NULL))
                            : FARTHING_H5_CHECK(H5Screate_simple(1, &n, nullptr)),
             H5Sclose);
  write_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, space.get(), values.data());
}

void write_attribute_f32_array(hid_t object, const char* name, const std::vector<float>& values) {
  const hsize_t n = values.size();
  H5Id space(values.empty() ? FARTHING_H5_CHECK(H5Screate(H5S_NULL))
                            : FARTHING_H5_CHECK(H5Screate_simple(1, &n, nullptr)),
             H5Sclose);
  write_attribute(object, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, space.get(), values.data());
}

bool has_attribute(hid_t object, const char* name) { return H5Aexists(object, name) > 0; }

int64_t read_attribute_i64(hid_t object, const char* name) {
  H5Id attr = open_attribute(object, name);
  check_one_value(attr.get(), name, "integer");
  int64_t value = 0;
  FARTHING_H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_INT64, &value));
  return value;
}

double read_attribute_f64(hid_t object, const char* name) {
  H5Id attr = open_attribute(object, name);
  check_one_value(attr.get(), name, "number");
  double value = 0;
  FARTHING_H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value));
  return value;
}

std::string read_attribute_string(hid_t object, const char* name) {
  H5Id attr = open_attribute(object, name);
  H5Id type(FARTHING_H5_CHECK(H5Aget_type(attr.get())), H5Tclose);
  FARTHING_CHECK(H5Tget_class(type.get()) == H5T_STRING && H5Tis_variable_str(type.get()) == 0,
                 "attribute '", name, "' is not a fixed-length string");
  check_one_value(attr.get(), name, "string");
  const size_t size = H5Tget_size(type.get());
  FARTHING_CHECK(size <= kMaxAttributeBytes, "attribute '", name, "' is a string of ", size,
                 " bytes; expected at most ", kMaxAttributeBytes);
  std::string value(size, '\0');
  FARTHING_H5_CHECK(H5Aread(attr.get(), type.get(), value.data()));
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

std::vector<int64_t> read_attribute_i64_array(hid_t object, const char* name) {
  H5Id attr = open_attribute(object, name);
  H5Id space(FARTHING_H5_CHECK(H5Aget_space(attr.get())), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  FARTHING_CHECK(n <= hssize_t(kMaxAttributeBytes / 8), "attribute '", name, "' holds ", n,
                 " integers; expected at most ", kMaxAttributeBytes / 8);
  std::vector<int64_t> values(size_t(n > 0 ? n : 0));
  if (!values.empty()) FARTHING_H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_INT64, values.data()));
  return values;
}

std::vector<float> read_attribute_f32_array(hid_t object, const char* name) {
  H5Id attr = open_attribute(object, name);
  H5Id space(FARTHING_H5_CHECK(H5Aget_space(attr.get())), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  FARTHING_CHECK(n <= hssize_t(kMaxAttributeBytes / 4), "attribute '", name, "' holds ", n,
                 " numbers; expected at most ", kMaxAttributeBytes / 4);
  std::vector<float> values(size_t(n > 0 ? n : 0));
  if (!values.empty()) FARTHING_H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_FLOAT, values.data()));
  return values;
}

}  // namespace farthing::h5_detail
