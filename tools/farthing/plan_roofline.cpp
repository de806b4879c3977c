// plan_roofline.cpp — see plan_roofline.h.
#include "tools/farthing/plan_roofline.h"

#include <cstdio>

namespace farthing::cli {

void print_roofline(const recipe::RunConfig& config, const models::ModelConfig& model,
                    const train::MemoryEstimate& estimate, const train::RooflineDevice& device) {
  train::RooflineInputs in;
  in.model = model;
  in.micro_batch = config.train.micro_batch;
  in.seq = config.data.seq_len;
  in.grad_accum = config.train.grad_accum;
  in.recompute = config.model.activation_checkpointing == models::Checkpointing::kPerBlock;
  in.fp8 = config.train.precision == recipe::Precision::kFp8;
  in.optimizer_bytes = train::optimizer_step_bytes(estimate);
  const train::RooflineStep step = train::roofline_step(in);

  std::printf("\nRoofline of one optimizer step on an %s at its datasheet rates (bf16 %.1f TFLOP/s, fp8 %.1f, "
              "memory %.0f GB/s):\n",
              device.name, device.bf16_flops / 1e12, device.fp8_flops / 1e12, device.bytes_per_s / 1e9);
  std::printf("%s, micro-batch %lld x seq %lld, grad_accum %lld%s%s. 'built': fp32 activations, GEMM operands\n"
              "narrowed to bf16 (as the code is today); 'design': bf16 activations (issue 36). Each op at the larger of\n"
              "FLOPs / peak and bytes / bandwidth: a lower bound (no launch gaps, no host waits).\n\n",
              model.name.c_str(), (long long)step.inputs.micro_batch, (long long)step.inputs.seq, (long long)step.inputs.grad_accum,
              step.inputs.recompute ? ", blocks recomputed in backward" : "", step.inputs.fp8 ? ", FP8 linear layers" : "");
  std::printf("%-30s %7s %10s %10s %10s %10s %10s %-7s\n", "op", "calls", "TFLOP", "GB built", "GB design",
              "ms built", "ms design", "bound");
  const double built_s = train::roofline_step_seconds(step, device, false);
  const double design_s = train::roofline_step_seconds(step, device, true);
  for (const train::RooflineRow& r : step.rows) {
    const double compute = r.flops / (r.fp8 ? device.fp8_flops : device.bf16_flops);
    const double design = train::roofline_seconds(r, device, true);
    std::printf("%-30s %7lld %10.2f %10.2f %10.2f %10.2f %10.2f %-7s\n", r.op.c_str(), (long long)r.calls, r.flops / 1e12,
                r.bytes_built / 1e9, r.bytes_design / 1e9, train::roofline_seconds(r, device, false) * 1e3,
                design * 1e3, design > 0 && compute >= design ? "compute" : "memory");
  }
  std::printf("%-30s %7s %10.2f %10s %10s %10.1f %10.1f\n", "step", "", [&] {
    double f = 0;
    for (const train::RooflineRow& r : step.rows) f += r.flops;
    return f / 1e12;
  }(), "", "", built_s * 1e3, design_s * 1e3);
  const double tokens = double(step.inputs.micro_batch * step.inputs.seq * step.inputs.grad_accum);
  std::printf("\nMFU the design can reach: %.1f%% (%.0f tokens/s); as built: %.1f%% (%.0f tokens/s). MFU counts the model's\n"
              "FLOPs (6 per parameter per token + attention, no recomputation: %.1f TFLOP per step) over the bf16 peak.\n",
              100.0 * step.model_flops / (design_s * device.bf16_flops), tokens / design_s,
              100.0 * step.model_flops / (built_s * device.bf16_flops), tokens / built_s, step.model_flops / 1e12);
}

}  // namespace farthing::cli
