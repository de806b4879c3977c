// matmul_cpu.cpp — see matmul_cpu.h.
#include "kernels/cpu/matmul_cpu.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/gemm_tiling.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/gemm_bias.h"
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
  dnnl::memory::desc a_md, b_md, c_md, scratchpad_md;
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

// Sets this task's OpenMP thread count for a scope. oneDNN sizes a primitive by
// omp_get_max_threads() when it is created and by the threads it may use when it runs.
class OmpThreadsScope {
 public:
  explicit OmpThreadsScope(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OmpThreadsScope() { omp_set_num_threads(saved_); }
  OmpThreadsScope(const OmpThreadsScope&) = delete;
  OmpThreadsScope& operator=(const OmpThreadsScope&) = delete;

 private:
  int saved_;
};

// The primitive for one tile shape, built for one thread: it never splits its reduction.
Entry& entry_for(GemmDtype dtype, const GemmShape& s, bool accumulate) {
  std::lock_guard lock(g_mutex);
  const Key key{dtype, accumulate, s};
  auto it = g_cache.find(key);
  if (it != g_cache.end()) return it->second;
  const OmpThreadsScope one_thread(1);
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
  // NOTE: the tiles of one GEMM run one primitive on several threads at once; oneDNN's own
  // scratchpad would be shared between them (a race that changed the bits from run to run), so
  // each execution brings its thread's own.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::desc desc(a_md, b_md, c_md);
  dnnl::matmul::primitive_desc pd(desc, attr, engine());
  Entry e{dnnl::matmul(pd), a_md, b_md, c_md, pd.scratchpad_desc(), pd.impl_info_str()};
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

// A 64-byte aligned region of at least `bytes` in buf (grown as needed), as oneDNN aligns its own.
void* aligned_scratchpad(std::vector<uint8_t>& buf, size_t bytes) {
  constexpr size_t kAlign = 64;
  if (buf.size() < bytes + kAlign) buf.resize(bytes + kAlign);
  const auto address = reinterpret_cast<uintptr_t>(buf.data());
  return buf.data() + (kAlign - address % kAlign) % kAlign;
}

}  // namespace

bool gemm_is_native_cpu(GemmDtype dtype) {
  static const bool bf16 = probe_native(GemmDtype::kBF16);
  static const bool fp16 = probe_native(GemmDtype::kF16);
  return dtype == GemmDtype::kF32 || (dtype == GemmDtype::kBF16 ? bf16 : fp16);
}

namespace {

// Where a GEMM's tiles go: C itself (fp32, row stride ldc), or a bf16 C whose tiles are computed
// in this thread's fp32 staging rows, have the bias added and are rounded once as they are stored.
// NOTE: a staged tile keeps C's row stride, so it runs the very primitive the fp32 GEMM runs:
// with another stride oneDNN may pick another kernel (AVX-512 fp32 with B transposed does), and
// the bits would no longer be the fp32 GEMM's.
struct GemmOut {
  float* f32 = nullptr;
  float* add_to = nullptr;  // fp32 C that each staged tile is added to once (matmul_add_product_cpu)
  uint16_t* bf16 = nullptr;
  const float* bias = nullptr;  // bf16 output only: n values, or none
  const uint16_t* add = nullptr;  // bf16 output only: what the product is added to (C's layout), or none
};

void run_gemm(GemmDtype dtype, const GemmShape& s, const void* a, const void* b, const GemmOut& out, bool accumulate) {
  if (s.m == 0 || s.n == 0) return;
  if (out.add != nullptr) accumulate = true;  // onto the widened add, in the staging rows
  if (!gemm_is_native_cpu(dtype)) {
    // NOTE: exact widening; the fp32 GEMM then sees the same bf16/fp16 values.
    static thread_local std::vector<float> wa, wb;
    const bool ta = s.trans_a == Trans::kT, tb = s.trans_b == Trans::kT;
    widen(dtype, static_cast<const uint16_t*>(a), ta ? s.k : s.m, ta ? s.m : s.k, s.lda, wa);
    widen(dtype, static_cast<const uint16_t*>(b), tb ? s.n : s.k, tb ? s.k : s.n, s.ldb, wb);
    return run_gemm(GemmDtype::kF32, s, wa.data(), wb.data(), out, accumulate);
  }
  const bool staged = out.bf16 != nullptr || out.add_to != nullptr;
  if (s.k == 0) {
    for (int64_t r = 0; r < s.m; ++r) {
      if (out.add_to != nullptr) {
        for (int64_t j = 0; j < s.n; ++j) out.add_to[r * s.ldc + j] += 0.0f;
      } else if (staged) {
        for (int64_t j = 0; j < s.n; ++j) {
          const float added = out.add != nullptr ? numerics::bf16_to_f32(out.add[r * s.ldc + j]) : 0.0f;
          out.bf16[r * s.ldc + j] =
              numerics::f32_to_bf16_rne(out.bias != nullptr ? added + numerics::bf16_output_bias(out.bias[j]) : added);
        }
      } else if (!accumulate) {
        std::memset(out.f32 + r * s.ldc, 0, size_t(s.n) * 4);
      }
    }
    return;
  }
  const GemmTiling tiling = gemm_tiling(s.m, s.n, s.k);
  // At most four tile shapes (full, short last row of tiles, short last column, the corner);
  // built before the threads start, so no thread waits on another's primitive creation.
  const int64_t last_m = s.m - (tiling.tiles_m - 1) * tiling.tile_m;
  const int64_t last_n = s.n - (tiling.tiles_n - 1) * tiling.tile_n;
  const auto tile_shape = [&](int64_t rows, int64_t cols) {
    return GemmShape{rows, cols, s.k, s.lda, s.ldb, s.ldc, s.trans_a, s.trans_b};
  };
  Entry* entries[2][2];
  for (int short_m = 0; short_m < 2; ++short_m) {
    for (int short_n = 0; short_n < 2; ++short_n) {
      entries[short_m][short_n] =
          &entry_for(dtype, tile_shape(short_m ? last_m : tiling.tile_m, short_n ? last_n : tiling.tile_n), accumulate);
    }
  }
  // Where tile (i, j)'s operands start: row i0 of op(A), column j0 of op(B), (i0, j0) of C.
  const size_t elem = dtype == GemmDtype::kF32 ? 4 : 2;
  const auto* a_bytes = static_cast<const char*>(a);
  const auto* b_bytes = static_cast<const char*>(b);
  const int64_t a_row_step = s.trans_a == Trans::kN ? s.lda : 1;
  const int64_t b_col_step = s.trans_b == Trans::kN ? 1 : s.ldb;
  const int64_t tiles = tiling.count();
  // NOTE: the tiles, not the threads, fix the bits; schedule(dynamic) only balances the load.
  // Inside another parallel region (attention's query blocks) the loop runs on the calling thread.
#pragma omp parallel for schedule(dynamic, 1) if (tiles > 1 && !omp_in_parallel())
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t i = t / tiling.tiles_n, j = t % tiling.tiles_n;
    const int64_t i0 = i * tiling.tile_m, j0 = j * tiling.tile_n;
    const bool short_m = i == tiling.tiles_m - 1, short_n = j == tiling.tiles_n - 1;
    Entry& e = *entries[short_m][short_n];
    const OmpThreadsScope one_thread(1);
    static thread_local std::vector<float> staging;
    const int64_t rows = short_m ? last_m : tiling.tile_m, cols = short_n ? last_n : tiling.tile_n;
    if (staged) staging.resize(size_t((tiling.tile_m - 1) * s.ldc + tiling.tile_n));
    if (out.add != nullptr) {  // the tile's add rows, widened: what the primitive accumulates onto
      for (int64_t r = 0; r < rows; ++r) {
        const uint16_t* add_row = out.add + (i0 + r) * s.ldc + j0;
        for (int64_t q = 0; q < cols; ++q) staging[size_t(r * s.ldc + q)] = numerics::bf16_to_f32(add_row[q]);
      }
    }
    dnnl::memory am(e.a_md, engine(), const_cast<char*>(a_bytes + size_t(i0 * a_row_step) * elem));
    dnnl::memory bm(e.b_md, engine(), const_cast<char*>(b_bytes + size_t(j0 * b_col_step) * elem));
    dnnl::memory cm(e.c_md, engine(), staged ? staging.data() : out.f32 + i0 * s.ldc + j0);
    static thread_local dnnl::stream stream(engine());
    static thread_local std::vector<uint8_t> scratchpad;
    dnnl::memory sm(e.scratchpad_md, engine(), aligned_scratchpad(scratchpad, e.scratchpad_md.get_size()));
    e.prim.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}, {DNNL_ARG_SCRATCHPAD, sm}});
    stream.wait();
    if (!staged) continue;
    if (out.add_to != nullptr) {
      for (int64_t r = 0; r < rows; ++r) {
        const float* tile_row = staging.data() + r * s.ldc;
        float* c_row = out.add_to + (i0 + r) * s.ldc + j0;
        for (int64_t q = 0; q < cols; ++q) c_row[q] += tile_row[q];
      }
      continue;
    }
    for (int64_t r = 0; r < rows; ++r) {
      float* tile_row = staging.data() + r * s.ldc;
      uint16_t* c_row = out.bf16 + (i0 + r) * s.ldc + j0;
      // NOTE: a bf16 output's bias is the parameter rounded to bf16 (numerics/gemm_bias.h), added
      // in fp32 after the residual and before the one rounding, as cuBLASLt's bias epilogue adds it.
      if (out.bias != nullptr) {
        for (int64_t q = 0; q < cols; ++q) tile_row[q] += numerics::bf16_output_bias(out.bias[j0 + q]);
      }
      for (int64_t q = 0; q < cols; ++q) c_row[q] = numerics::f32_to_bf16_rne(tile_row[q]);
    }
  }
}

}  // namespace

void matmul_cpu(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c,
                bool accumulate) {
  run_gemm(dtype, dense(shape), a, b, GemmOut{.f32 = c}, accumulate);
}

void matmul_add_product_cpu(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c) {
  run_gemm(dtype, dense(shape), a, b, GemmOut{.add_to = c}, false);
}

void matmul_bf16_out_cpu(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const float* bias,
                         const uint16_t* add, uint16_t* c) {
  run_gemm(dtype, dense(shape), a, b, GemmOut{.bf16 = c, .bias = bias, .add = add}, false);
}

std::string matmul_impl_name_cpu(GemmDtype dtype, const GemmShape& shape) {
  const GemmShape s = dense(shape);
  const GemmTiling t = gemm_tiling(s.m, s.n, s.k);
  const GemmShape tile{t.tile_m, t.tile_n, s.k, s.lda, s.ldb, s.ldc, s.trans_a, s.trans_b};
  const std::string tiles = std::to_string(t.count()) + " tiles of " + std::to_string(t.tile_m) + "x" +
                            std::to_string(t.tile_n) + ", one thread each: ";
  if (!gemm_is_native_cpu(dtype)) {
    return std::string(dtype == GemmDtype::kBF16 ? "bf16" : "f16") + " widened to f32, " + tiles +
           entry_for(GemmDtype::kF32, tile, false).impl;
  }
  return tiles + entry_for(dtype, tile, false).impl;
}

std::string onednn_cpu_isa_cpu() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41: return "SSE41";
    case isa::avx: return "AVX";
    case isa::avx2: return "AVX2";
    case isa::avx2_vnni: return "AVX2_VNNI";
    case isa::avx512_mic: return "AVX512_MIC";
    case isa::avx512_mic_4ops: return "AVX512_MIC_4OPS";
    case isa::avx512_core: return "AVX512_CORE";
    case isa::avx512_core_vnni: return "AVX512_CORE_VNNI";
    case isa::avx512_core_bf16: return "AVX512_CORE_BF16";
    case isa::avx512_core_amx: return "AVX512_CORE_AMX";
    default: return "oneDNN cpu_isa " + std::to_string(int(dnnl::get_effective_cpu_isa()));
  }
}

int64_t matmul_primitive_count_cpu() {
  std::lock_guard lock(g_mutex);
  return int64_t(g_cache.size());
}

}  // namespace farthing::kernels
