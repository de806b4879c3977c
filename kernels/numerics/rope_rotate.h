// rope_rotate.h — one rotary-embedding rotation of a channel pair (rotate-half layout).
//
// (a, b) are channels i and i + head_dim / 2 of a head; (cs, sn) the cosine and sine of the
// pair's angle at the row's position, sn already negated for the inverse rotation. Shared by
// kernels/cpu/nn_cpu.cpp and kernels/cuda/rope_cuda.cu so both round the same four products and
// two sums (no fma on either side): the results are the same bits.
// Relies on: host_device.h. Tested by: tests/kernels/test_nn_ops_parity.cpp, tests/models/test_gradcheck.cpp, tests/models/test_model_goldens.cpp, the model goldens, and
// tests/kernels/test_nn_ops_parity.cpp (CPU vs CUDA, bitwise).
#pragma once

#include "kernels/numerics/host_device.h"

namespace farthing::numerics {

FARTHING_HD void rope_rotate_f32(float a, float b, float cs, float sn, float& out_a, float& out_b) {
  out_a = a * cs - b * sn;
  out_b = b * cs + a * sn;
}

}  // namespace farthing::numerics
