// fp4_host_emulation.cpp — NnOps' default FP4 ops (nn_ops.h): the CPU kernels run on host copies
// of a device's operands, so any backend computes the CPU's FP4 bits. Copies go through
// NnOps::copy, which moves whole floats: FP4 code and scale buffers are padded to 4 bytes
// (fp4_operand.h), and a bf16 source must have an even number of elements.
// Relies on: kernels/cpu/fp4_cpu.h, fp4_op_checks.h. Tested by: tests/kernels/test_fp4_cpu.cpp (the
// strict device, whose memory the host cannot read, against the CPU's bits).
#include <vector>

#include "framework/backend/fp4_op_checks.h"
#include "framework/backend/nn_ops.h"
#include "framework/core/error.h"
#include "kernels/cpu/fp4_cpu.h"
#include "kernels/numerics/fp4_workspace.h"

namespace farthing {

namespace {

int64_t words(int64_t bytes) { return (bytes + 3) / 4; }

// `bytes` of the ops' memory at p, in host floats.
std::vector<float> to_host(NnOps& ops, const void* p, int64_t bytes) {
  std::vector<float> host(size_t(words(bytes)));
  ops.copy(host.data(), static_cast<const float*>(p), int64_t(host.size()));
  return host;
}

// A host copy of an operand, pointing at its own buffers.
struct HostOperand {
  std::vector<float> codes, scales, decode;
  Fp4Operand op;
  HostOperand(NnOps& ops, const Fp4Operand& x)
      : codes(to_host(ops, x.codes, x.rows * x.cols)),
        scales(to_host(ops, x.scales, x.rows * kernels::fp4_blocks_per_row(x.cols, x.block))),
        decode(to_host(ops, x.decode_scale, 4)),
        op(x) {
    op.codes = reinterpret_cast<const uint8_t*>(codes.data());
    op.scales = reinterpret_cast<const uint8_t*>(scales.data());
    op.decode_scale = decode.data();
  }
};

}  // namespace

int64_t NnOps::fp4_matmul_workspace_bytes(int64_t m, int64_t n, int64_t k, int block) const {
  return numerics::fp4_matmul_workspace_bytes(numerics::Fp4GemmEngine::kEmulated, m, n, k, block);
}

void NnOps::fp4_quantize(const Fp4QuantizeArgs& args) {
  check_fp4_quantize_args(args);
  const int64_t n = args.rows * args.cols, scale_bytes = args.rows * kernels::fp4_blocks_per_row(args.cols, args.block);
  FARTHING_CHECK(args.x_f32 != nullptr || n % 2 == 0, "fp4_quantize: the host emulation copies whole floats, so a "
                 "bf16 source needs an even element count (", args.rows, " x ", args.cols, ")");
  Fp4QuantizeArgs h = args;
  const std::vector<float> x = args.x_f32 != nullptr ? to_host(*this, args.x_f32, n * 4) : to_host(*this, args.x_bf16, n * 2);
  if (args.x_f32 != nullptr) {
    h.x_f32 = x.data();
  } else {
    h.x_bf16 = reinterpret_cast<const uint16_t*>(x.data());
  }
  const std::vector<float> signs = args.rht_size > 0 ? to_host(*this, args.rht_signs, args.rht_size * 4) : std::vector<float>();
  h.rht_signs = signs.data();
  std::vector<float> codes(static_cast<size_t>(words(n))), scales(static_cast<size_t>(words(scale_bytes)));
  std::vector<float> decode(1), workspace(static_cast<size_t>(n));
  h.codes = reinterpret_cast<uint8_t*>(codes.data());
  h.scales = reinterpret_cast<uint8_t*>(scales.data());
  h.decode_scale = decode.data();
  h.workspace = workspace.data();
  kernels::fp4_quantize_cpu(h);
  copy(reinterpret_cast<float*>(args.codes), codes.data(), int64_t(codes.size()));
  copy(reinterpret_cast<float*>(args.scales), scales.data(), int64_t(scales.size()));
  copy(args.decode_scale, decode.data(), 1);
}

void NnOps::matmul_fp4(int64_t m, int64_t n, int64_t k, const Fp4Operand& a, const Fp4Operand& b, float* c,
                       bool accumulate, void* /*workspace*/) {
  check_fp4_matmul_operands(m, n, k, a, b);
  const HostOperand ha(*this, a), hb(*this, b);
  std::vector<float> hc = accumulate ? to_host(*this, c, m * n * 4) : std::vector<float>(size_t(m * n));
  std::vector<uint8_t> workspace(size_t(kernels::fp4_matmul_workspace_bytes(m, n, k)));
  kernels::fp4_matmul_cpu(m, n, k, ha.op, hb.op, hc.data(), accumulate, workspace.data());
  copy(c, hc.data(), m * n);
}

}  // namespace farthing
