// recipe_validate.cpp — validate_run_config (recipe.h): every value's range and every
// combination the trainer cannot honour, checked before anything is allocated.
//
// Messages start with the key and where it was set ("optimizer.lr at recipe.yaml:7:7",
// "optimizer.lr at --set optimizer.lr=-1", or "(default; ...)" when the recipe left it out),
// then the value and what was expected; combinations name both keys.
// Combinations that conflict (two settings each valid alone) are collected, not thrown one at a
// time: the error lists every conflict of the recipe, each with its locations, and ends with one
// --set line that resolves them all, so fixing a recipe takes one run instead of one per conflict.
// A value out of its own range still stops the check at once (conflicts are judged on sane values).
// Enum values need no check here: they were parsed from their names (recipe_scalar.cpp), so
// an unknown name never reaches a RunConfig.
// Relies on: models/common/presets.h (preset names and shapes).
// Tested by: tests/train/recipe/test_recipe_errors.cpp, test_recipe_files.cpp.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "train/recipe/closest_name.h"
#include "train/recipe/recipe.h"
#include "train/recipe/recipe_scalar.h"
#include "kernels/numerics/hadamard.h"
#include "models/common/presets.h"

namespace farthing::recipe {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Two settings that cannot hold together, and the overrides that reconcile them.
struct Conflict {
  std::string message;
  std::vector<std::string> fixes;  // key=value, for --set
  std::string alternative;         // another way out ("key=value"), or ""
};

std::string set_line(const std::vector<std::string>& fixes) {
  std::string line;
  for (const std::string& f : fixes) line += (line.empty() ? "--set " : " --set ") + f;
  return line;
}

// One error for every conflict found: a single one stays on one line; several get one line each,
// then the --set line that resolves all of them.
[[noreturn]] void fail_with_conflicts(const std::vector<Conflict>& conflicts) {
  std::vector<std::string> fixes;
  for (const Conflict& c : conflicts) {
    for (const std::string& f : c.fixes) {
      if (std::find(fixes.begin(), fixes.end(), f) == fixes.end()) fixes.push_back(f);
    }
  }
  const std::string& alternative = conflicts.front().alternative;
  const bool shared_alternative =
      !alternative.empty() && std::all_of(conflicts.begin(), conflicts.end(),
                                          [&](const Conflict& c) { return c.alternative == alternative; });
  const std::string or_else = shared_alternative ? " (or --set " + alternative + ")" : "";
  if (conflicts.size() == 1) {
    FARTHING_FAIL(conflicts.front().message, "; to resolve it: ", set_line(fixes), or_else);
  }
  std::string text = std::to_string(conflicts.size()) + " settings of the recipe conflict:";
  for (const Conflict& c : conflicts) text += "\n  - " + c.message;
  FARTHING_FAIL(text, "\nto resolve them all: ", set_line(fixes), or_else);
}

class Checker {
 public:
  explicit Checker(const RunConfig& config) : c_(config) {}

  void check() const {
    check_model();
    check_data();
    check_optimizer();
    check_train();  // before check_schedule, which compares warmup_steps with train.steps
    check_schedule();
    check_loss_scale();
    check_fp8();
    check_fp4("nvfp4", c_.nvfp4);
    check_fp4("mxfp4", c_.mxfp4);
    check_checkpoint();
    FARTHING_CHECK(c_.distributed.zero_stage >= 1 && c_.distributed.zero_stage <= 3, at("distributed.zero_stage"),
                   " is ", c_.distributed.zero_stage,
                   ", expected 1, 2 or 3 (1: optimizer state and master sharded; 2: + gradients; 3: + parameters)");
    FARTHING_CHECK(std::isfinite(c_.distributed.collective_timeout_s) && c_.distributed.collective_timeout_s >= 0.0,
                   at("distributed.collective_timeout_s"), " is ", num(c_.distributed.collective_timeout_s),
                   ", expected seconds >= 0 (how long a rank waits in a collective before ending the job; 0: forever)");
    FARTHING_CHECK(std::isfinite(c_.distributed.reduce_bucket_mib) && c_.distributed.reduce_bucket_mib >= 0.0,
                   at("distributed.reduce_bucket_mib"), " is ", num(c_.distributed.reduce_bucket_mib),
                   ", expected MiB >= 0 (gradient reductions left in flight during backward; 0: none)");
    if (!conflicts_.empty()) fail_with_conflicts(conflicts_);
  }

 private:
  const RunConfig& c_;
  mutable std::vector<Conflict> conflicts_;

  // Records a conflict unless ok: fixes (key=value) resolve it; alternative is another way out.
  template <class... Parts>
  void conflict(bool ok, std::vector<std::string> fixes, std::string alternative, const Parts&... parts) const {
    if (!ok) conflicts_.push_back({error_detail::concat(parts...), std::move(fixes), std::move(alternative)});
  }

  // "optimizer.lr at recipe.yaml:7:7", or where the default came from when the recipe left it out.
  std::string at(const std::string& path) const { return key_origin(c_, path); }
  static std::string num(double value) { return number_text(value); }

  void check_model() const {
    const ModelSection& m = c_.model;
    const std::vector<std::string> presets = models::preset_names();
    FARTHING_CHECK(!(m.preset.empty() && m.path.empty()), at("model.preset"), " and model.path are both empty: give ",
                   "model.preset (one of ", join_names(presets, ", "), ") to train from random init, or model.path ",
                   "(an HF directory, .safetensors, .gguf or llama2.c .bin whose own config gives the architecture) to "
                   "fine-tune it");
    FARTHING_CHECK(m.preset.empty() || m.path.empty(), at("model.preset"), " is '", m.preset, "' and ",
                   at("model.path"), " is '", m.path,
                   "': give model.preset or model.path, not both (the weights at model.path carry ",
                   "their own architecture: keep only model.path to fine-tune them, only model.preset to train from ",
                   "random init; on the command line, --set model.path= clears a path)");
    if (!m.preset.empty()) {
      bool known = false;
      for (const std::string& p : presets) known = known || p == m.preset;
      FARTHING_CHECK(known, at("model.preset"), " is '", m.preset, "', expected a known preset",
                     did_you_mean(m.preset, presets), "; known presets: ", join_names(presets, ", "));
      // A preset brings shapes but no vocabulary, so text needs model.tokenizer. Only data that
      // is surely text is refused here: with format auto, a file of another name may be a
      // token file (the data reader looks for its magic).
      const std::string& train = c_.data.train;
      const bool surely_text =
          c_.data.format == DataFormat::kText || c_.data.format == DataFormat::kJsonl ||
          (c_.data.format == DataFormat::kAuto && (ends_with(train, ".txt") || ends_with(train, ".jsonl")));
      FARTHING_CHECK(!m.tokenizer.empty() || !surely_text, at("model.tokenizer"), " is empty, expected a tokenizer ",
                     "file or directory: model.preset '", m.preset, "' gives shapes but no vocabulary, and ",
                     at("data.train"), " is '", train, "' (text; pre-tokenize it with `farthing tokenize` or give ",
                     "model.tokenizer)");
    }
    FARTHING_CHECK(m.loss_chunk_rows >= 0, at("model.loss_chunk_rows"), " is ", m.loss_chunk_rows,
                   ", expected a whole number >= 1 (rows of logits alive at once in the cross-entropy), or 0 "
                   "for the largest the device's memory allows");
    FARTHING_CHECK(std::isfinite(m.init_std) && m.init_std > 0.0, at("model.init_std"), " is ", num(m.init_std),
                   ", expected a number > 0 (standard deviation of the random init)");
  }

  void check_data() const {
    const DataSection& d = c_.data;
    FARTHING_CHECK(
        !d.train.empty(), at("data.train"), " is missing, expected the training file: a .txt, a .jsonl ",
        "or a .tok token file from `farthing tokenize` (e.g. data: train: my_chats.jsonl)");
    FARTHING_CHECK(d.eval_fraction >= 0.0 && d.eval_fraction < 1.0, at("data.eval_fraction"), " is ",
                   num(d.eval_fraction), ", expected a number in [0, 1) (the share of sequences held out for eval; ",
                   "0: no held-out split)");
    FARTHING_CHECK(d.seq_len >= 1, at("data.seq_len"), " is ", d.seq_len,
                   ", expected a whole number >= 1 (tokens per sequence)");
    if (!c_.model.preset.empty()) {
      const models::ModelConfig shapes = models::preset_config(c_.model.preset);
      FARTHING_CHECK(d.seq_len <= shapes.max_seq_len, at("data.seq_len"), " is ", d.seq_len, ", expected at most ",
                     shapes.max_seq_len, ", the longest context of model.preset '", c_.model.preset, "'");
    }
  }

  void check_optimizer() const {
    const OptimizerSection& o = c_.optimizer;
    FARTHING_CHECK(std::isfinite(o.lr) && o.lr > 0.0, at("optimizer.lr"), " is ", num(o.lr),
                   ", expected a number > 0 (fine-tuning usually wants 1e-5 to 1e-4)");
    FARTHING_CHECK(o.beta1 >= 0.0 && o.beta1 < 1.0, at("optimizer.beta1"), " is ", num(o.beta1),
                   ", expected a number in [0, 1) (0.9 is usual)");
    FARTHING_CHECK(o.beta2 >= 0.0 && o.beta2 < 1.0, at("optimizer.beta2"), " is ", num(o.beta2),
                   ", expected a number in [0, 1) (0.95 to 0.999 is usual)");
    FARTHING_CHECK(std::isfinite(o.eps) && o.eps > 0.0, at("optimizer.eps"), " is ", num(o.eps),
                   ", expected a number > 0 (it keeps m / sqrt(v) finite where v is 0)");
    FARTHING_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0, at("optimizer.weight_decay"), " is ",
                   num(o.weight_decay), ", expected a number >= 0");
    FARTHING_CHECK(o.lr * o.weight_decay < 1.0, at("optimizer.lr"), " is ", num(o.lr), " and ",
                   at("optimizer.weight_decay"), " is ", num(o.weight_decay), ": expected lr * weight_decay < 1, got ",
                   num(o.lr * o.weight_decay), ", which would flip or zero every weight each step");
    conflict(!(o.master == optim::MasterMode::kRemainder16 && o.weight_rounding == optim::WeightRounding::kStochastic),
             {"optimizer.weight_rounding=nearest"}, "optimizer.master=f32", at("optimizer.master"),
             " is 'remainder16' and ", at("optimizer.weight_rounding"), " is 'stochastic': remainder16 keeps the ",
             "master's high half in the bf16 weight, so the weight must be rounded to nearest; expected ",
             "weight_rounding 'nearest' with it, or master 'f32' for stochastic rounding");
    FARTHING_CHECK(o.offload_ring_units >= 1 && o.offload_ring_units <= 64, at("optimizer.offload_ring_units"), " is ",
                   o.offload_ring_units, ", expected a whole number in 1..64 (shards whose host copies may be in "
                   "flight at once; each holds the largest shard's fp32 gradients and bf16 weights in host memory)");
    // Precision fp32 with an fp32 master computes from the master's values (param_store.h): the
    // device would read host memory.
    conflict(!(o.offload == optim::Offload::kHost && o.master == optim::MasterMode::kF32 &&
               c_.train.precision == Precision::kFp32),
             {"train.precision=bf16"}, "optimizer.offload=none", at("optimizer.offload"), " is 'host' but ",
             at("train.precision"), " is 'fp32' with ", at("optimizer.master"), " 'f32': that compute reads the ",
             "master's values on the device, and offload keeps the master in host memory; expected precision bf16 ",
             "(the GEMMs read the bf16 weights), or offload none");
  }

  void check_schedule() const {
    const ScheduleSection& s = c_.schedule;
    const int64_t steps = c_.train.steps;
    FARTHING_CHECK(s.warmup_steps >= 0, at("schedule.warmup_steps"), " is ", s.warmup_steps,
                   ", expected a whole number >= 0");
    conflict(!(s.kind == optim::LrScheduleKind::kConstant && s.warmup_steps > 0), {"schedule.warmup_steps=0"},
             "schedule.kind=linear_warmup", at("schedule.kind"), " is 'constant' but ", at("schedule.warmup_steps"),
             " is ", s.warmup_steps, ": a constant schedule has no warmup; ",
             "expected kind 'linear_warmup' (or cosine/linear) to warm up, or warmup_steps 0");
    if (s.kind == optim::LrScheduleKind::kLinearWarmup) {
      FARTHING_CHECK(s.warmup_steps <= steps, at("schedule.warmup_steps"), " is ", s.warmup_steps,
                     ", expected at most ", at("train.steps"), " (", steps, ")");
    } else if (s.kind == optim::LrScheduleKind::kCosine || s.kind == optim::LrScheduleKind::kLinearDecay) {
      FARTHING_CHECK(s.warmup_steps < steps, at("schedule.warmup_steps"), " is ", s.warmup_steps,
                     ", expected fewer than ", at("train.steps"), " (", steps, "): a ", enum_name(s.kind),
                     " schedule decays after the warmup");
    }
    FARTHING_CHECK(s.min_ratio >= 0.0 && s.min_ratio <= 1.0, at("schedule.min_ratio"), " is ", num(s.min_ratio),
                   ", expected a number in [0, 1] (the final lr as a fraction of optimizer.lr)");
  }

  void check_loss_scale() const {
    const LossScaleSection& l = c_.loss_scale;
    FARTHING_CHECK(std::isfinite(l.initial) && l.initial > 0.0, at("loss_scale.initial"), " is ", num(l.initial),
                   ", expected a number > 0 (65536 is usual)");
    FARTHING_CHECK(std::isfinite(l.growth_factor) && l.growth_factor > 1.0, at("loss_scale.growth_factor"), " is ",
                   num(l.growth_factor), ", expected a number > 1 (2 is usual)");
    FARTHING_CHECK(l.backoff_factor > 0.0 && l.backoff_factor < 1.0, at("loss_scale.backoff_factor"), " is ",
                   num(l.backoff_factor), ", expected a number in (0, 1) (0.5 is usual)");
    FARTHING_CHECK(l.growth_interval >= 1, at("loss_scale.growth_interval"), " is ", l.growth_interval,
                   ", expected a whole number >= 1 (finite steps before the scale grows)");
  }

  void check_fp8() const {
    const Fp8Section& f = c_.fp8;
    FARTHING_CHECK(f.margin >= 0 && f.margin <= 32, at("fp8.margin"), " is ", f.margin,
                   ", expected a whole number in 0..32 (scales leave 2^margin of headroom; 0 is usual)");
    FARTHING_CHECK(f.amax_history_len >= 1 && f.amax_history_len <= 1024, at("fp8.amax_history_len"), " is ",
                   f.amax_history_len, ", expected a whole number in 1..1024 (steps of amax that tensor_delayed "
                   "scaling keeps; 16 is usual)");
  }

  void check_fp4(const std::string& section, const Fp4Recipe& f) const {
    FARTHING_CHECK(f.block == 16 || f.block == 32, at(section + ".block"), " is ", f.block,
                   ", expected 16 (NVFP4) or 32 (MXFP4): elements sharing one scale");
    FARTHING_CHECK(numerics::hadamard_size_ok(f.rht_size), at(section + ".rht_size"), " is ", f.rht_size,
                   ", expected 4, 16, 64 or 256 (a power of 4, so the transform's 1/sqrt(n) is exact)");
    FARTHING_CHECK(f.bf16_last_fraction >= 0.0 && f.bf16_last_fraction <= 1.0, at(section + ".bf16_last_fraction"),
                   " is ", num(f.bf16_last_fraction),
                   ", expected a number in 0..1 (the share of the last blocks kept in bf16, rounded up)");
    FARTHING_CHECK(!f.sr_prescale || f.scale == kernels::Fp4Scale::kE8M0, at(section + ".sr_prescale"),
                   " is true with scale e4m3; the 3/4 pre-scale is for e8m0 scales (whose floor rule can clip a "
                   "block's largest values); set it false or scale: e8m0");
  }

  void check_train() const {
    const TrainSection& t = c_.train;
    FARTHING_CHECK(t.steps >= 1, at("train.steps"), " is ", t.steps, ", expected a whole number >= 1");
    FARTHING_CHECK(t.micro_batch >= 1, at("train.micro_batch"), " is ", t.micro_batch,
                   ", expected a whole number >= 1 (sequences per forward/backward on each rank)");
    FARTHING_CHECK(t.grad_accum >= 1, at("train.grad_accum"), " is ", t.grad_accum,
                   ", expected a whole number >= 1 (micro-batches per optimizer step)");
    FARTHING_CHECK(std::isfinite(t.max_grad_norm) && t.max_grad_norm >= 0.0, at("train.max_grad_norm"), " is ",
                   num(t.max_grad_norm), ", expected a number >= 0 (0: no clipping)");
    FARTHING_CHECK(t.eval_every >= 0, at("train.eval_every"), " is ", t.eval_every,
                   ", expected a whole number >= 0 (0: evaluate only before the first and after the last step)");
    FARTHING_CHECK(t.eval_batches >= 0, at("train.eval_batches"), " is ", t.eval_batches,
                   ", expected a whole number >= 0 (0: the whole eval set)");
    FARTHING_CHECK(t.log_every >= 0, at("train.log_every"), " is ", t.log_every,
                   ", expected a whole number >= 0 (0: no progress lines)");
    if (!t.optimizer_in_backward) return;
    // Each unit is stepped as soon as its gradients are ready, so nothing may need the whole
    // step's gradients first.
    const std::string oib = at("train.optimizer_in_backward") + " is true";
    const std::string off = "train.optimizer_in_backward=false";
    conflict(t.grad_accum == 1, {"train.grad_accum=1"}, off, oib, " but ", at("train.grad_accum"), " is ",
             t.grad_accum, ": a unit stepped during the first micro-batch's backward cannot wait for the others; ",
             "expected grad_accum 1 (raise micro_batch instead) or optimizer_in_backward false");
    conflict(t.max_grad_norm == 0.0, {"train.max_grad_norm=0"}, off, oib, " but ", at("train.max_grad_norm"), " is ",
             num(t.max_grad_norm), ": clipping needs the global gradient norm before any unit steps; expected ",
             "max_grad_norm 0 (no clipping) or optimizer_in_backward false");
    conflict(t.precision != Precision::kFp16, {"train.precision=bf16"}, off, oib, " but ", at("train.precision"),
             " is 'fp16': the loss scaler must see every gradient (to skip the step on overflow) before any unit ",
             "steps; expected precision bf16 or fp32, or optimizer_in_backward false");
    conflict(t.nonfinite != Nonfinite::kSkip, {"train.nonfinite=fail"}, off, oib, " but ", at("train.nonfinite"),
             " is 'skip': a non-finite gradient found in a late unit cannot skip the step, because the units after ",
             "it have already stepped; expected nonfinite 'fail' or optimizer_in_backward false");
  }

  void check_checkpoint() const {
    const CheckpointSection& k = c_.checkpoint;
    FARTHING_CHECK(!k.run_dir.empty(), at("checkpoint.run_dir"), " is empty, expected a directory for recipe.yaml, ",
                   "metrics.jsonl and checkpoints/ (e.g. runs/my_run)");
    FARTHING_CHECK(k.save_every >= 0, at("checkpoint.save_every"), " is ", k.save_every,
                   ", expected a whole number >= 0 (0: save only at the end)");
    FARTHING_CHECK(k.keep_last >= 0, at("checkpoint.keep_last"), " is ", k.keep_last,
                   ", expected a whole number >= 0 (0: keep every checkpoint)");
  }
};

}  // namespace

void validate_run_config(const RunConfig& config) { Checker(config).check(); }

std::string key_origin(const RunConfig& config, const std::string& key) {
  const auto given = config.key_locations.find(key);
  if (given != config.key_locations.end()) return key + " at " + given->second;
  const std::string section = key.substr(0, key.find('.'));
  const auto section_given = config.key_locations.find(section);
  if (section_given != config.key_locations.end()) {
    return key + " (default; not set in the " + section + " section at " + section_given->second + ")";
  }
  if (!config.source.empty()) return key + " (default; " + config.source + " has no " + section + " section)";
  return key;
}

}  // namespace farthing::recipe
