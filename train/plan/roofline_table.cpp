// roofline_table.cpp — see roofline_table.h.
#include "train/plan/roofline_table.h"

#include <cstdio>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "train/loop/model_options.h"
#include "train/loop/train_device.h"
#include "train/plan/roofline_measure.h"

namespace farthing::train {

namespace {

// The GEMMs' and attention's types as the model takes them from train.precision.
RooflineMeasureOptions measure_options_of(const recipe::RunConfig& config) {
  const models::ComputeMode compute = train::compute_mode_of(config.train.precision);
  RooflineMeasureOptions o;
  o.gemm = models::gemm_dtype_of(compute);
  o.attention = models::attention_dtype_of(compute);
  return o;
}

}  // namespace

void print_roofline(const recipe::RunConfig& config, const models::ModelConfig& model,
                    const train::MemoryEstimate& estimate, const train::RooflineDevice& device, bool measure_ops) {
  const train::RooflineStep step = train::roofline_step(roofline_inputs(config, model, estimate));

  std::printf("\nRoofline of one optimizer step on an %s at its datasheet rates (bf16 %.1f TFLOP/s, fp8 %.1f, "
              "memory %.0f GB/s):\n",
              device.name, device.bf16_flops / 1e12, device.fp8_flops / 1e12, device.bytes_per_s / 1e9);
  const int64_t rows = step.inputs.micro_batch * step.inputs.seq;
  const std::string chunks = step.inputs.loss_chunk_rows > 0 && step.inputs.loss_chunk_rows < rows
                                 ? ", the head and loss in chunks of " + std::to_string(step.inputs.loss_chunk_rows) + " rows"
                                 : "";
  std::printf("%s, micro-batch %lld x seq %lld, grad_accum %lld%s%s%s. 'built': the code as it is:\n"
              "%s; 'design': bf16 activations and no narrowing.\n"
              "Each op at the larger of FLOPs / peak and bytes / bandwidth: a lower bound (no launch gaps, no host waits).\n\n",
              model.name.c_str(), (long long)step.inputs.micro_batch, (long long)step.inputs.seq, (long long)step.inputs.grad_accum,
              step.inputs.recompute ? ", blocks recomputed in backward" : "", step.inputs.fp8 ? ", FP8 linear layers" : "",
              chunks.c_str(),
              step.inputs.fp8 ? "fp32 activations, every GEMM operand narrowed to bf16 (or quantized) first"
                              : "bf16 activations and gradients (the logits too)");
  std::vector<double> measured;
  std::string where;
  if (measure_ops) {
    // The recipe's device as the trainer resolves it (train.device; auto: a GPU where one is visible).
    const Device here = train::resolve_train_device(config.train.device);
    where = here.name();
    std::fprintf(stderr, "farthing plan: measuring every op of the step on %s ...\n", where.c_str());
    measured = measure_roofline_rows(step, backend_for(here), measure_options_of(config));
    std::printf("'ms measured': the row's calls run here, on %s, each op alone, shape by shape (best of timed\n"
                "batches); '-' where not run here (FP8 quantization and GEMMs, the optimizer: bench gemm, numerics, optim).\n\n",
                where.c_str());
  }
  std::printf("%-30s %7s %10s %10s %10s %10s %10s %-7s", "op", "calls", "TFLOP", "GB built", "GB design", "ms built",
              "ms design", "bound");
  if (measure_ops) std::printf(" %11s %9s", "ms measured", "x built");
  std::printf("\n");
  const double built_s = train::roofline_step_seconds(step, device, false);
  const double design_s = train::roofline_step_seconds(step, device, true);
  // The step with each measured row at its measured time, the others at their 'built' roofline time.
  double measured_step_s = 0.0, measured_rows_s = 0.0;
  for (size_t i = 0; i < step.rows.size(); ++i) {
    const train::RooflineRow& r = step.rows[i];
    const double compute = r.flops / (r.fp8 ? device.fp8_flops : device.bf16_flops);
    const double design = train::roofline_seconds(r, device, true), built = train::roofline_seconds(r, device, false);
    std::printf("%-30s %7lld %10.2f %10.2f %10.2f %10.2f %10.2f %-7s", r.op.c_str(), (long long)r.calls, r.flops / 1e12,
                r.bytes_built / 1e9, r.bytes_design / 1e9, built * 1e3, design * 1e3,
                design > 0 && compute >= design ? "compute" : "memory");
    if (measure_ops && measured[i] >= 0.0) {
      std::printf(" %11.2f %9.2f", measured[i] * 1e3, built > 0.0 ? measured[i] / built : 0.0);
      measured_step_s += measured[i];
      measured_rows_s += measured[i];
    } else if (measure_ops) {
      std::printf(" %11s %9s", "-", "");
      measured_step_s += built;
    }
    std::printf("\n");
  }
  std::printf("%-30s %7s %10.2f %10s %10s %10.1f %10.1f", "step", "", [&] {
    double f = 0;
    for (const train::RooflineRow& r : step.rows) f += r.flops;
    return f / 1e12;
  }(), "", "", built_s * 1e3, design_s * 1e3);
  if (measure_ops) std::printf(" %-7s %11.1f", "", measured_rows_s * 1e3);
  std::printf("\n");
  const double tokens = double(step.inputs.micro_batch * step.inputs.seq * step.inputs.grad_accum);
  std::printf("\nMFU the design can reach: %.1f%% (%.0f tokens/s); as built: %.1f%% (%.0f tokens/s). MFU counts the model's\n"
              "FLOPs (6 per parameter per token + attention, no recomputation: %.1f TFLOP per step) over the bf16 peak.\n",
              100.0 * step.model_flops / (design_s * device.bf16_flops), tokens / design_s,
              100.0 * step.model_flops / (built_s * device.bf16_flops), tokens / built_s, step.model_flops / 1e12);
  if (measure_ops) {
    std::printf("With every op at its measured time on %s (the rows not run at their 'built' roofline time), back to\n"
                "back with no gaps: %.1f ms per step, %.1f%% MFU against %s's bf16 peak (%.0f tokens/s).\n",
                where.c_str(), measured_step_s * 1e3, 100.0 * step.model_flops / (measured_step_s * device.bf16_flops),
                device.name, tokens / measured_step_s);
  }
}

}  // namespace farthing::train
