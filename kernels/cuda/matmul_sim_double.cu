// matmul_sim_double.cu — a test double for MatmulLt (matmul_cublaslt.h), compiled INSTEAD of
// matmul_cublaslt.cu only when FARTHING_SIM_GEMM_DOUBLE is ON (the GPU-simulator build made by
// tools/gpu/sim_check.sh; never a normal or shipped build). A GPU simulator cannot run cuBLASLt,
// so this plain kernel stands in for it there: everything around the GEMMs (CudaNnOps, streams,
// the stream-ordered workspace, host staging) then runs under the simulator too. It is not
// tuned and not a reference: one thread per C element, fp32 sums in k order (inside the GEMM
// tolerance class, docs/cuda_ops.md). Same contract as matmul_cublaslt.cu: default strides,
// empty k gives C = 0 (or C = add when accumulating), a bf16 C rounded once to nearest even,
// queues on `stream` without waiting. It has no epilogues: run_bias, run_bf16_out_bias and
// run_bias_grad return false (said once on stderr), so the callers' separate bias kernels, which
// the simulator runs, take every bias.
#include <cstdint>
#include <cstdio>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cublaslt_planner.h"
#include "kernels/cuda/matmul_cublaslt.h"
#include "kernels/numerics/bf16.h"
#include "kernels/numerics/minifloat.h"

namespace farthing::kernels {

namespace {

template <GemmDtype D>
__device__ float load(const void* p, int64_t i) {
  if constexpr (D == GemmDtype::kF32) {
    return static_cast<const float*>(p)[i];
  } else if constexpr (D == GemmDtype::kBF16) {
    return numerics::bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
  } else {
    return numerics::fp16_to_f32(static_cast<const uint16_t*>(p)[i]);
  }
}

__device__ void store(float* p, float v) { *p = v; }
__device__ void store(uint16_t* p, float v) { *p = numerics::f32_to_bf16_rne(v); }

// c = op(A) op(B), plus c_in (c's type and layout; may be c) when accumulate.
template <GemmDtype D, class Out>
__global__ void gemm_double_kernel(GemmShape s, const void* a, const void* b, const Out* c_in, Out* c, bool accumulate) {
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t row = blockIdx.y;
  if (col >= s.n) return;
  const bool ta = s.trans_a == Trans::kT, tb = s.trans_b == Trans::kT;
  float sum = 0.0f;
  for (int64_t p = 0; p < s.k; ++p) {
    const float x = load<D>(a, ta ? p * s.lda + row : row * s.lda + p);
    const float y = load<D>(b, tb ? col * s.ldb + p : p * s.ldb + col);
    sum += x * y;
  }
  const int64_t at = row * s.ldc + col;
  if constexpr (sizeof(Out) == 4) {
    c[at] = accumulate ? c_in[at] + sum : sum;
  } else {
    store(c + at, accumulate ? numerics::bf16_to_f32(c_in[at]) + sum : sum);
  }
}

template <class Out>
void queue_gemm(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const Out* c_in, Out* c,
                bool accumulate, cudaStream_t stream) {
  GemmShape s = shape;
  if (s.m <= 0 || s.n <= 0) return;
  const bool ta = s.trans_a == Trans::kT, tb = s.trans_b == Trans::kT;
  if (s.lda == 0) s.lda = ta ? s.m : s.k;
  if (s.ldb == 0) s.ldb = tb ? s.k : s.n;
  if (s.ldc == 0) s.ldc = s.n;
  if (s.k < 0) s.k = 0;  // the kernel's empty sum is 0: C = 0, or C unchanged when accumulating
  const dim3 grid(unsigned((s.n + 127) / 128), unsigned(s.m));
  switch (dtype) {
    case GemmDtype::kF32: gemm_double_kernel<GemmDtype::kF32><<<grid, 128, 0, stream>>>(s, a, b, c_in, c, accumulate); break;
    case GemmDtype::kBF16: gemm_double_kernel<GemmDtype::kBF16><<<grid, 128, 0, stream>>>(s, a, b, c_in, c, accumulate); break;
    case GemmDtype::kF16: gemm_double_kernel<GemmDtype::kF16><<<grid, 128, 0, stream>>>(s, a, b, c_in, c, accumulate); break;
  }
  FARTHING_CUDA_CHECK(cudaGetLastError());
}

bool no_epilogue() {
  static const bool said = [] {
    std::fprintf(stderr, "farthing: the GEMM test double has no epilogues: biases run as separate kernels\n");
    return true;
  }();
  return !said;
}

}  // namespace

struct MatmulLt::State {
  LtPlanner planner;  // the FP8 and FP4 GEMMs' (this double plans nothing)
};

MatmulLt::MatmulLt(size_t) : state_(std::make_unique<State>()) {}
MatmulLt::~MatmulLt() = default;
size_t MatmulLt::cached_plans() const { return 0; }
LtPlanner& MatmulLt::planner() { return state_->planner; }

void MatmulLt::run(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, float* c, bool accumulate,
                   cudaStream_t stream) {
  queue_gemm(dtype, shape, a, b, c, c, accumulate, stream);
}

void MatmulLt::run_bf16_out(GemmDtype dtype, const GemmShape& shape, const void* a, const void* b, const uint16_t* add,
                            uint16_t* c, cudaStream_t stream) {
  queue_gemm(dtype, shape, a, b, add, c, add != nullptr, stream);
}

bool MatmulLt::run_bias(GemmDtype, const GemmShape&, const void*, const void*, const float*, float*, bool,
                        cudaStream_t) {
  return no_epilogue();
}

bool MatmulLt::run_bf16_out_bias(GemmDtype, const GemmShape&, const void*, const void*, const uint16_t*,
                                 const uint16_t*, uint16_t*, cudaStream_t) {
  return no_epilogue();
}

bool MatmulLt::run_bias_grad(GemmDtype, const GemmShape&, const void*, const void*, float*, bool, BiasGradOf, float*,
                             cudaStream_t) {
  return no_epilogue();
}

}  // namespace farthing::kernels
