// recipe_keys.cpp — see recipe_keys.h. One line per RunConfig field.
#include "train/recipe/recipe_keys.h"

namespace farthing::recipe {

// RECIPE_KEY(model, preset): YAML key "preset" of section "model" fills config.model.preset;
// the macro keeps the key's spelling and the field's name the same by construction. An enum
// field's accepted names come from its type (EnumNames, run_config.h), not from this line.
#define RECIPE_KEY(section, name) \
  RecipeKey{#section, #name, [](RunConfig& c) -> FieldRef { return field_ref(&c.section.name); }}

const std::vector<RecipeKey>& recipe_keys() {
  static const std::vector<RecipeKey> keys = {
      RECIPE_KEY(model, preset),
      RECIPE_KEY(model, path),
      RECIPE_KEY(model, tokenizer),
      RECIPE_KEY(model, activation_checkpointing),
      RECIPE_KEY(model, loss_chunk_rows),
      RECIPE_KEY(model, init_std),
      RECIPE_KEY(model, bf16_activations),

      RECIPE_KEY(data, train),
      RECIPE_KEY(data, eval),
      RECIPE_KEY(data, format),
      RECIPE_KEY(data, eval_fraction),
      RECIPE_KEY(data, seq_len),
      RECIPE_KEY(data, packing),
      RECIPE_KEY(data, long_documents),
      RECIPE_KEY(data, shuffle),
      RECIPE_KEY(data, add_bos),
      RECIPE_KEY(data, add_eos),
      RECIPE_KEY(data, chat_template),

      RECIPE_KEY(optimizer, name),
      RECIPE_KEY(optimizer, lr),
      RECIPE_KEY(optimizer, beta1),
      RECIPE_KEY(optimizer, beta2),
      RECIPE_KEY(optimizer, eps),
      RECIPE_KEY(optimizer, weight_decay),
      RECIPE_KEY(optimizer, state),
      RECIPE_KEY(optimizer, master),
      RECIPE_KEY(optimizer, weight_rounding),
      RECIPE_KEY(optimizer, embedding_f32_state),
      RECIPE_KEY(optimizer, offload),
      RECIPE_KEY(optimizer, offload_ring_units),

      RECIPE_KEY(schedule, kind),
      RECIPE_KEY(schedule, warmup_steps),
      RECIPE_KEY(schedule, min_ratio),

      RECIPE_KEY(loss_scale, initial),
      RECIPE_KEY(loss_scale, growth_factor),
      RECIPE_KEY(loss_scale, backoff_factor),
      RECIPE_KEY(loss_scale, growth_interval),

      RECIPE_KEY(fp8, scaling),
      RECIPE_KEY(fp8, input),
      RECIPE_KEY(fp8, weight),
      RECIPE_KEY(fp8, grad_output),
      RECIPE_KEY(fp8, margin),
      RECIPE_KEY(fp8, power_of_two_scales),
      RECIPE_KEY(fp8, amax_history_len),
      RECIPE_KEY(fp8, amax_compute),
      RECIPE_KEY(fp8, layers),

      RECIPE_KEY(nvfp4, block),
      RECIPE_KEY(nvfp4, scale),
      RECIPE_KEY(nvfp4, weight_scaling),
      RECIPE_KEY(nvfp4, gemms),
      RECIPE_KEY(nvfp4, rht),
      RECIPE_KEY(nvfp4, rht_size),
      RECIPE_KEY(nvfp4, sr),
      RECIPE_KEY(nvfp4, bf16_last_fraction),
      RECIPE_KEY(nvfp4, sr_prescale),

      RECIPE_KEY(mxfp4, block),
      RECIPE_KEY(mxfp4, scale),
      RECIPE_KEY(mxfp4, weight_scaling),
      RECIPE_KEY(mxfp4, gemms),
      RECIPE_KEY(mxfp4, rht),
      RECIPE_KEY(mxfp4, rht_size),
      RECIPE_KEY(mxfp4, sr),
      RECIPE_KEY(mxfp4, bf16_last_fraction),
      RECIPE_KEY(mxfp4, sr_prescale),

      RECIPE_KEY(train, steps),
      RECIPE_KEY(train, micro_batch),
      RECIPE_KEY(train, grad_accum),
      RECIPE_KEY(train, max_grad_norm),
      RECIPE_KEY(train, precision),
      RECIPE_KEY(train, fp4_gpu_emulation),
      RECIPE_KEY(train, deterministic_attention),
      RECIPE_KEY(train, gemm_algorithm),
      RECIPE_KEY(train, grad_dtype),
      RECIPE_KEY(train, device),
      RECIPE_KEY(train, optimizer_in_backward),
      RECIPE_KEY(train, seed),
      RECIPE_KEY(train, eval_every),
      RECIPE_KEY(train, eval_batches),
      RECIPE_KEY(train, log_every),
      RECIPE_KEY(train, nonfinite),
      RECIPE_KEY(train, profile),

      RECIPE_KEY(checkpoint, run_dir),
      RECIPE_KEY(checkpoint, save_every),
      RECIPE_KEY(checkpoint, keep_last),
      RECIPE_KEY(checkpoint, save_final),
      RECIPE_KEY(checkpoint, save_timeout_s),

      RECIPE_KEY(distributed, zero_stage),
      RECIPE_KEY(distributed, collective_timeout_s),
      RECIPE_KEY(distributed, reduce),
      RECIPE_KEY(distributed, reduce_bucket_mib),

      RECIPE_KEY(metrics, tensorboard),
  };
  return keys;
}

#undef RECIPE_KEY

const std::vector<std::string>& recipe_sections() {
  static const std::vector<std::string> sections = [] {
    std::vector<std::string> names;
    for (const RecipeKey& key : recipe_keys()) {
      if (names.empty() || names.back() != key.section) names.emplace_back(key.section);
    }
    return names;
  }();
  return sections;
}

const RecipeKey* find_recipe_key(std::string_view section, std::string_view name) {
  for (const RecipeKey& key : recipe_keys()) {
    if (key.section == section && key.name == name) return &key;
  }
  return nullptr;
}

std::vector<std::string> recipe_key_names(std::string_view section) {
  std::vector<std::string> names;
  for (const RecipeKey& key : recipe_keys()) {
    if (key.section == section) names.emplace_back(key.name);
  }
  return names;
}

}  // namespace farthing::recipe
