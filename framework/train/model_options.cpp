// model_options.cpp — see model_options.h.
#include "framework/train/model_options.h"

namespace farthing::train {

Fp8Recipe fp8_recipe_of(const recipe::RunConfig& config) {
  const recipe::Fp8Section& f = config.fp8;
  Fp8Recipe r;
  r.scaling = fp8_scaling_named(f.scaling);
  r.input = fp8_format_named(f.input);
  r.weight = fp8_format_named(f.weight);
  r.grad_output = fp8_format_named(f.grad_output);
  r.margin = f.margin;
  r.power_of_two_scales = f.power_of_two_scales;
  r.amax_history_len = f.amax_history_len;
  r.amax_compute = fp8_amax_compute_named(f.amax_compute);
  r.layers = fp8_layers_named(f.layers);
  return r;
}

bool uses_fp8(const recipe::RunConfig& config) { return config.train.precision == "fp8"; }

models::ModelOptions model_options_of(const recipe::RunConfig& config, const Fp8Recipe* fp8,
                                      Fp8AmaxHistory* history) {
  models::ModelOptions o;
  const std::string& p = config.train.precision;
  // fp8 is bf16 compute with FP8 linear layers on top.
  o.compute = p == "fp32" ? models::ComputeMode::kF32 : p == "fp16" ? models::ComputeMode::kF16 : models::ComputeMode::kBF16;
  o.checkpointing = config.model.activation_checkpointing == "per_block" ? models::Checkpointing::kPerBlock
                                                                         : models::Checkpointing::kNone;
  o.loss_chunk_rows = config.model.loss_chunk_rows;
  if (uses_fp8(config)) {
    o.fp8.recipe = fp8;
    o.fp8.history = history;
  }
  return o;
}

}  // namespace farthing::train
