// flat_layout.cpp — see flat_layout.h.
#include "models/common/flat_layout.h"

#include "framework/core/error.h"

namespace farthing::models {

namespace {
int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
}  // namespace

UnitPadding pad_to_multiple(int64_t multiple) {
  FARTHING_CHECK(multiple > 0, "unit padding multiple must be positive, got ", multiple);
  return [multiple](int64_t elems) { return round_up(elems, multiple); };
}

void FlatLayout::begin_unit(const std::string& name) {
  cursor_ = round_up(cursor_, kUnitAlignElems);
  units_.push_back(ParamUnit{name, cursor_, cursor_});
}

int64_t FlatLayout::add(const std::string& name, Shape shape, LayoutAlign align) {
  FARTHING_CHECK(!units_.empty(), "FlatLayout::add('", name, "') before any begin_unit()");
  FARTHING_CHECK(!contains(name), "tensor '", name, "' added twice to the layout");
  FARTHING_CHECK(align == LayoutAlign::kAligned || !entries_.empty(), "tensor '", name,
                 "' is packed but follows no tensor");
  if (align == LayoutAlign::kAligned) {
    cursor_ = round_up(cursor_, shape.numel() >= kBlockAlignMinElems ? kUnitAlignElems : kTensorAlignElems);
  }
  const int64_t offset = cursor_;
  entries_.push_back(ParamEntry{name, shape, offset, int(units_.size()) - 1});
  index_[name] = entries_.size() - 1;
  cursor_ += shape.numel();
  units_.back().end_elems = cursor_;
  return offset;
}

int64_t FlatLayout::total_elems() const { return round_up(cursor_, kUnitAlignElems); }

int64_t FlatLayout::param_count() const {
  int64_t n = 0;
  for (const auto& e : entries_) n += e.numel();
  return n;
}

const ParamEntry& FlatLayout::find(const std::string& name) const {
  auto it = index_.find(name);
  FARTHING_CHECK(it != index_.end(), "no tensor named '", name, "' in the model layout");
  return entries_[it->second];
}

Tensor FlatLayout::view(const std::string& name, void* flat_base, DType dtype) const {
  const ParamEntry& e = find(name);
  return Tensor(static_cast<char*>(flat_base) + size_t(e.offset_elems) * dtype_size_bytes(dtype),
                dtype, e.shape);
}

std::vector<int64_t> FlatLayout::padded_unit_elems(const UnitPadding& padding) const {
  std::vector<int64_t> out;
  for (const auto& u : units_) {
    const int64_t padded = padding(u.span_elems());
    FARTHING_CHECK(padded >= u.span_elems(), "unit padding shrank unit '", u.name, "' from ",
                   u.span_elems(), " to ", padded, " elements");
    out.push_back(padded);
  }
  return out;
}

int64_t FlatLayout::storage_offset(int64_t global_elem, const UnitPadding& padding) const {
  int64_t storage = 0;
  for (const auto& u : units_) {
    if (global_elem < u.end_elems) {
      FARTHING_CHECK(global_elem >= u.begin_elems, "global element ", global_elem,
                     " lies in an alignment gap before unit '", u.name, "'");
      return storage + (global_elem - u.begin_elems);
    }
    storage += padding(u.span_elems());
  }
  FARTHING_FAIL("global element ", global_elem, " is past the layout's last unit (",
                cursor_, " elements)");
}

std::vector<dist::UnitRange> zero_units(const FlatLayout& layout) {
  std::vector<dist::UnitRange> units;
  for (const ParamUnit& u : layout.units()) units.push_back({u.begin_elems, u.end_elems});
  return units;
}

}  // namespace farthing::models
