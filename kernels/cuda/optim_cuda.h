// optim_cuda.h — the fused AdamW step over one segment of a shard, on a CUDA device.
//
// The same operation as kernels/cpu/optim_cpu.h's adamw_step_cpu, on device pointers: one pass
// per element (gradient → dequantize m and v → numerics::adamw_update_element → requantize →
// master → weight cast), one 256-thread CUDA block per 256-element chunk of the global flat
// space (the CPU's chunks, so an 8-bit block is one CUDA block, a 4-bit block half of one).
// Every element is computed by the numerics/ scalar functions the CPU loops over, and the
// stochastic-rounding bits are keyed exactly as there: (seed, step, purpose, global index),
// purpose kWeightCast with an fp32 master and kMasterFreeUpdate without one. So weights,
// masters, remainders, moment values or codes and absmax are bitwise the CPU's.
// The segment, formats and partials are numerics/adamw_segment.h's (one definition of each); only
// the map pointers differ: here they point to device copies of the tables.
// Relies on: numerics/{adamw_segment,adamw_update,block_quant,block_quant4,bf16,master_remainder,
// stochastic_round}.h, the CUDA runtime. Tested by: tests/kernels/test_cuda_optim_parity.cpp
// (bitwise against adamw_step_cpu for every format combination, three consecutive steps).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/numerics/adamw_segment.h"

namespace farthing::kernels {

// The segment (numerics/adamw_segment.h; every pointer device memory) with device copies of the
// quantization maps. Preconditions as adamw_step_cpu's: for kBlock8 and kBlock4 moments
// global_offset is a multiple of 256 (checked); values hold n codes (kBlock8) or (n + 1) / 2
// bytes (kBlock4, element 2j in the low nibble; an odd tail's high nibble is written 0), absmax
// one float per 256 (kBlock8) or 128 (kBlock4) elements of the segment.
struct AdamWSegmentCuda : AdamWSegment {
  const float* signed_map = nullptr;     // kBlock8: the 256-entry map of m (numerics::make_dynamic_map)
  const float* unsigned_map = nullptr;   // kBlock8: the 256-entry map of v
  const float* signed_map4 = nullptr;    // kBlock4: the 16-entry map of m (numerics::make_dynamic_map_4bit)
  const float* unsigned_map4 = nullptr;  // kBlock4: the 16-entry map of v
};

// The bytes of device scratch the two functions below need (the grid's per-block partials): one
// buffer of this size, allocated once, serves every call queued on one stream.
size_t optim_scratch_bytes();

// Queues the step on `stream` and the addition of its partials to *sums (device memory); nothing
// waits for the host. NOTE: weights_unchanged and elements equal the CPU's exactly. The two sums
// of squares are per-element fp32 squares summed in double in a fixed order (per thread, a fixed
// tree per CUDA block, then the blocks in a fixed tree of one block), so they are deterministic
// for a given n, but not the CPU's order (its per-chunk fp32 sums are vectorized by the
// compiler): they differ from adamw_step_cpu's within the CPU's fp32 rounding over a 256-element
// chunk (< 256 * 2^-24 = 1.5e-5 relative, typically ~1e-7).
void adamw_step_cuda(const AdamWSegmentCuda& segment, AdamWPartials* sums, void* scratch, cudaStream_t stream);

// Queues the sum of squares and count of non-finite values of a device gradient array and their
// addition to *sums (device memory). nonfinite equals grad_partials_cpu's exactly; sum_squares
// sums the same exact double squares in another fixed order, so it may differ from the CPU's in
// the last bits.
void grad_partials_cuda(const void* grad, GradFormat format, size_t n, GradPartials* sums, void* scratch,
                        cudaStream_t stream);

}  // namespace farthing::kernels
