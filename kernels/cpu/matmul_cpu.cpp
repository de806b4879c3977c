// matmul_cpu.cpp — see matmul_cpu.h.
#include "kernels/cpu/matmul_cpu.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "kernels/numerics/bf16.h"
#include "kernels/numerics/minifloat.h"

namespace farthing::kernels {

namespace {

struct Key {
  GemmDtype dtype;
  bool accumulate;
  GemmShape s;
  bool operator==(const Key& o) const {
    return dtype == o.dtype && accumulate == o.accumulate && s.m == o.s.m && s.n == o.s.n &&
           s.k == o.s.k && s.lda == o.s.lda && s.ldb == o.s.ldb && s.ldc == o.s.ldc &&
           s.trans_a == o.s.trans_a && s.trans_b == o.s.trans_b;
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(uint64_t(k.dtype)); mix(k.accumulate); mix(uint64_t(k.s.m)); mix(uint64_t(k.s.n));
    mix(uint64_t(k.s.k)); mix(uint64_t(k.s.lda)); mix(uint64_t(k.s.ldb)); mix(uint64_t(k.s.ldc));
    mix(uint64_t(k.s.trans_a)); mix(uint64_t(k.s.trans_b));
    return size_t(h);
  }
};

struct Entry {
  dnnl::matmul prim;
  dnnl::memory::desc a_md, b_md, c_md;
  std::string impl;
};

dnnl::engine& engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

GemmShape dense(GemmShape s) {
  if (s.lda == 0) s.lda = s.trans_a == Trans::kN ? s.k : s.m;
  if (s.ldb == 0) s.ldb = s.trans_b == Trans::kN ? s.n : s.k;
  if (s.ldc == 0) s.ldc = s.n;
  return s;
}

std::mutex g_mutex;
std::unordered_map<Key, Entry, KeyHash> g_cache;

Entry& entry_for(GemmDtype dtype, const GemmShape& s, bool accumulate) {
  std::lock_guard lock(g_mutex);
  const Key key{dtype, accumulate, s};
  auto it = g_cache.find(key);
  if (it != g_cache.end()) return it->second;
  using dt = dnnl::memory::data_type;
  const dt in = dtype == GemmDtype::kBF16 ? dt::bf16 : dtype == GemmDtype::kF16 ? dt::f16 : dt::f32;
  // Row-major (rows, cols) with row stride ld; a transposed operand swaps the strides.
  dnnl::memory::desc a_md({s.m, s.k}, in,
                          s.trans_a == Trans::kN ? dnnl::memory::dims{s.lda, 1}
                                                 : dnnl::memory::dims{1, s.lda});
  dnnl::memory::desc b_md({s.k, s.n}, in,
                          s.trans_b == Trans::kN ? dnnl::memory::dims{s.ldb, 1}
                                                 : dnnl::memory::dims{1, s.ldb});
  dnnl::memory::desc c_md({s.m, s.n}, dt::f32, dnnl::memory::dims{s.ldc, 1});
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::desc desc(a_md, b_md, c_md);
  dnnl::matmul::primitive_desc pd(desc, attr, engine());
  Entry e{dnnl::matmul(pd), a_md, b_md, c_md, pd.impl_info_str()};
  return g_cache.emplace(key, std::move(e)).first->second;
}

// oneDNN either has no bf16 matmul for this processor (throws) or only its reference
// kernel (orders of magnitude slower than the widening fallback).
bool probe_native(GemmDtype dtype) {
  try {
    const std::string impl = entry_for(dtype, dense(GemmShape{64, 64, 64}), false).impl;
    return impl.rfind("ref", 0) != 0;
  } catch (const dnnl::error&) {
    return false;
  }
}

// Widens a strided bf16/fp16 matrix (rows, cols, ld) into an fp32 copy with the same ld.
void widen(GemmDtype dtype, const uint16_t* src, int64_t rows, int64_t cols, int64_t ld,
           std::vector<float>& dst) {
  dst.resize(size_t(rows * ld));
  const bool bf16 = dtype == GemmDtype::kBF16;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const uint16_t h = src[r * ld + c];
      dst[size_t(r * ld + c)] = bf16 ? numerics::bf16_to_f32(h) : numerics::fp16_to_f32(h);
    }
  }
}

}  // namespace

bool gemm_is_native_cpu(GemmDtype dtype) {
  static const bool bf16 = probe_native(GemmDtype::kBF16);
  static const bool fp16 = probe_native(GemmDtype::kF16);
  return dtype == GemmDtype::kF32 || (dtype == GemmDtype::kBF16 ? bf16 : fp16);
}

void matmul_cpu(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                bool accumulate) {
  const GemmShape s = dense(shape);
  if (s.m == 0 || s.n == 0) return;
  if (!gemm_is_native_cpu(dtype)) {
    // NOTE: exact widening; the fp32 GEMM then sees the same bf16/fp16 values.
    static thread_local std::vector<float> wa, wb;
    const bool ta = s.trans_a == Trans::kT, tb = s.trans_b == Trans::kT;
    widen(dtype, static_cast<const uint16_t*>(a), ta ? s.k : s.m, ta ? s.m : s.k, s.lda, wa);
    widen(dtype, static_cast<const uint16_t*>(b), tb ? s.n : s.k, tb ? s.k : s.n, s.ldb, wb);
    return matmul_cpu(GemmDtype::kF32, s, wa.data(), wb.data(), c, accumulate);
  }
  if (s.k == 0) {
    if (!accumulate) {
      for (int64_t r = 0; r < s.m; ++r) std::memset(c + r * s.ldc, 0, size_t(s.n) * 4);
    }
    return;
  }
  Entry& e = entry_for(dtype, s, accumulate);
  dnnl::memory am(e.a_md, engine(), const_cast<void*>(a));
  dnnl::memory bm(e.b_md, engine(), const_cast<void*>(b));
  dnnl::memory cm(e.c_md, engine(), c);
  static thread_local dnnl::stream stream(engine());
  e.prim.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  stream.wait();
}

std::string matmul_impl_name_cpu(GemmDtype dtype, const GemmShape& shape) {
  if (!gemm_is_native_cpu(dtype)) {
    return std::string(dtype == GemmDtype::kBF16 ? "bf16" : "f16") + " widened to f32: " + entry_for(GemmDtype::kF32, dense(shape), false).impl;
  }
  return entry_for(dtype, dense(shape), false).impl;
}

int64_t matmul_primitive_count_cpu() {
  std::lock_guard lock(g_mutex);
  return int64_t(g_cache.size());
}

}  // namespace farthing::kernels
