// attention_cpu.h — causal multi-head attention with grouped-query heads on the host, fp32
// (the output may be stored as bf16).
//
// Input is the packed projection qkv (B*T rows of [q: Hq*D | k: Hkv*D | v: Hkv*D]); query
// head h reads kv head h / (Hq / Hkv). Forward keeps only the output and the per-row
// log-sum-exp; scores exist for one block of 64 query rows per thread (64 x T floats),
// never as a T x T matrix; products are small fp32 oneDNN GEMMs run inside each task, over
// dense per-thread copies of the heads' q, k and v rows (T x D floats each at most).
// Backward recomputes the probabilities from q, k and the log-sum-exp (as FlashAttention).
// A sliding window (AttentionShape::window) masks the keys below numerics::attention_first_key of
// each query row, in the forward, the backward and decoding alike.
// Relies on: matmul_cpu.h, OpenMP, numerics/attention_steps.h (shared with kernels/cuda). Tested by: tests/models/test_model_goldens.cpp (GQA and
// plain heads against PyTorch), test_gradcheck.cpp, test_model_modes.cpp.
#pragma once

#include <cstdint>

#include "kernels/numerics/op_shapes.h"

namespace farthing::kernels {

// out (B*T, Hq*D), lse (B, Hq, T). A bf16 out holds each fp32 output rounded to nearest even. A
// bf16 qkv (the projection as a bf16 GEMM stores it, with a bf16 out) is widened exactly: the
// bits of an fp32 qkv holding the same values (each head's rows are copied into dense fp32 blocks
// for the GEMMs either way).
void attention_forward_cpu(const AttentionShape& s, float* out, float* lse, const float* qkv);
void attention_forward_cpu(const AttentionShape& s, uint16_t* out, float* lse, const float* qkv);
void attention_forward_cpu(const AttentionShape& s, uint16_t* out, float* lse, const uint16_t* qkv);

// dqkv (B*T, stride) is overwritten. scratch holds 2 * B * Hq * T * D floats (per-query-head
// dk/dv, summed over each group in head order so results never depend on thread count).
// D = rowsum(dO . O) reads out as stored: a bf16 out gives the bits of an fp32 out holding its
// widened values (as cuDNN, whose O is bf16).
void attention_backward_cpu(const AttentionShape& s, float* dqkv, float* scratch, const float* dout,
                            const float* out, const float* lse, const float* qkv);
void attention_backward_cpu(const AttentionShape& s, float* dqkv, float* scratch, const float* dout,
                            const uint16_t* out, const float* lse, const float* qkv);
void attention_backward_cpu(const AttentionShape& s, float* dqkv, float* scratch, const float* dout,
                            const uint16_t* out, const float* lse, const uint16_t* qkv);
// Every array bf16 (bf16 activations store dO, as its GEMM writes it, and dqkv too): dO widened
// exactly, each of dqkv's fp32 values rounded to nearest even once as it is stored, so the bits
// are the fp32 backward's on the widened dout, narrowed (dO and dq go through dense fp32 blocks
// whatever their storage).
void attention_backward_cpu(const AttentionShape& s, uint16_t* dqkv, float* scratch, const uint16_t* dout,
                            const uint16_t* out, const float* lse, const uint16_t* qkv);

// Decoding against a KV cache: `rows` new query rows (rows of qkv, stride s.qkv_stride(),
// queries first) at positions first_position, first_position + 1, ...; keys and values of
// positions 0 .. first_position + rows - 1 are consecutive rows of Hkv*D floats in k_cache and
// v_cache. out (rows, Hq*D). Row r attends causally to positions 0 .. first_position + r (from
// attention_first_key(first_position + r, s.window) under a sliding window).
// s.head_dim, q_heads and kv_heads are used; batch and seq are not.
void attention_decode_cpu(const AttentionShape& s, float* out, const float* qkv, int64_t rows,
                          int64_t first_position, const float* k_cache, const float* v_cache);

}  // namespace farthing::kernels
