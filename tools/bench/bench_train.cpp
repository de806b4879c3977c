// bench_train.cpp — `farthing bench train`: one training step (forward, fused chunked
// cross-entropy, backward) of a preset at --batch x --seq on this CPU, in fp32 and bf16
// compute: tokens/s, peak memory (memory tracker, and the process's peak RSS growth), the
// model FLOP/s as a fraction of the best oneDNN GEMM rate measured in the same run, and
// the same step in PyTorch (transformers model, bf16 autocast, same threads and shapes) as a
// ratio when python3 can import torch and transformers.
//
// NOTE: the optimizer step is not included yet (the optimizer is not wired to the models);
// the output says so, and the PyTorch step likewise stops after backward.
// Relies on: models/, kernels/cpu/matmul_cpu.h. Not a test: numbers only.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "framework/core/memory.h"
#include "kernels/cpu/matmul_cpu.h"
#include "models/common/presets.h"
#include "models/common/transformer.h"
#include "tools/bench/bench.h"

namespace farthing::bench {

namespace {

using Clock = std::chrono::steady_clock;
namespace k = farthing::kernels;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Process resident set (VmRSS) or its peak (VmHWM), in bytes.
int64_t proc_status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field) + 1)) * 1024;
  }
  return 0;
}

struct StepResult {
  std::string mode;
  double seconds = 0, tokens_per_s = 0, flops_per_s = 0;
  int64_t tracked_peak_bytes = 0, rss_growth_bytes = 0;
  float loss = 0;
};

StepResult run_farthing(const models::ModelConfig& config, int64_t batch, int64_t seq,
                        models::ComputeMode mode, double min_seconds,
                        models::Checkpointing ckpt = models::Checkpointing::kNone) {
  StepResult r;
  r.mode = mode == models::ComputeMode::kBF16 ? "farthing bf16" : "farthing fp32";
  if (ckpt == models::Checkpointing::kPerBlock) r.mode += " ckpt";
  MemoryTracker& tracker = memory_tracker(Device::cpu());
  tracker.reset_peaks();
  const int64_t base = tracker.snapshot().total_current_bytes;
  { std::ofstream("/proc/self/clear_refs") << "5"; }  // resets VmHWM to the current RSS
  const int64_t rss0 = proc_status_bytes("VmRSS:");
  models::Transformer model(models::make_spec(config), batch, seq,
                            models::ModelOptions{mode, ckpt, 256});
  model.init_weights(1, 0.02f);
  std::vector<int32_t> tokens(size_t(batch * seq)), targets(size_t(batch * seq));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 2654435761u) % uint64_t(config.vocab_size));
  for (size_t i = 0; i < tokens.size(); ++i) targets[i] = tokens[(i + 1) % tokens.size()];
  model.zero_grads();
  model.forward_backward(tokens.data(), targets.data());  // warm-up: primitives, page faults
  double best = 1e30, total = 0;
  int reps = 0;
  while (total < min_seconds || reps < 2) {
    const auto t0 = Clock::now();
    r.loss = model.forward_backward(tokens.data(), targets.data());
    const double s = seconds_since(t0);
    best = std::min(best, s);
    total += s;
    ++reps;
  }
  r.seconds = best;
  r.tokens_per_s = double(batch * seq) / best;
  r.flops_per_s = model.flops_per_step() / best;
  r.tracked_peak_bytes = tracker.snapshot().total_peak_bytes - base;
  r.rss_growth_bytes = proc_status_bytes("VmHWM:") - rss0;
  return r;
}

// Best GEMM rate over the model's own large GEMM shapes and a square one.
double gemm_rate(k::GemmDtype dtype, const std::vector<k::GemmShape>& shapes, double min_seconds,
                 std::string* best_shape) {
  double best_rate = 0;
  for (const k::GemmShape& s : shapes) {
    const int64_t a_elems = s.m * s.k, b_elems = s.k * s.n;
    std::vector<float> af, bf, c(size_t(s.m * s.n));
    std::vector<uint16_t> ah, bh;
    const void *a = nullptr, *b = nullptr;
    if (dtype == k::GemmDtype::kF32) {
      af.assign(size_t(a_elems), 0.01f);
      bf.assign(size_t(b_elems), 0.02f);
      a = af.data();
      b = bf.data();
    } else {
      ah.assign(size_t(a_elems), 0x3C23);  // ~0.01 in bf16
      bh.assign(size_t(b_elems), 0x3CA3);
      a = ah.data();
      b = bh.data();
    }
    k::matmul_cpu(dtype, s, a, b, c.data(), false);
    double best = 1e30, total = 0;
    int reps = 0;
    while (total < min_seconds || reps < 3) {
      const auto t0 = Clock::now();
      k::matmul_cpu(dtype, s, a, b, c.data(), false);
      const double sec = seconds_since(t0);
      best = std::min(best, sec);
      total += sec;
      ++reps;
    }
    const double rate = 2.0 * double(s.m) * double(s.n) * double(s.k) / best;
    if (rate > best_rate) {
      best_rate = rate;
      *best_shape = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    }
  }
  return best_rate;
}

// transformers model from the preset's config, bf16 autocast (argv[6] == "bf16") or fp32,
// forward + loss + backward; each mode in its own process so peak RSS is its own.
// Prints "version V", "step_s S", "rss_growth_bytes B", or "no-torch".
const char* kTorchScript = R"PY(
import json, sys, time
try:
    import torch, transformers
except Exception:
    print("no-torch"); sys.exit(0)
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field): return int(line.split()[1]) * 1024
    return 0
cfg, batch, seq, threads, min_s = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
amp = sys.argv[6] == "bf16"
torch.set_num_threads(threads)
print("version", torch.__version__)
rss0 = rss("VmRSS:")
if cfg["family"] == "gpt2":
    c = transformers.GPT2Config(vocab_size=cfg["vocab"], n_positions=cfg["max_seq"], n_embd=cfg["dim"],
        n_layer=cfg["layers"], n_head=cfg["heads"], resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    m = transformers.GPT2LMHeadModel(c)
else:
    kw = dict(vocab_size=cfg["vocab"], hidden_size=cfg["dim"], intermediate_size=cfg["hidden"],
        num_hidden_layers=cfg["layers"], num_attention_heads=cfg["heads"],
        num_key_value_heads=cfg["kv_heads"], max_position_embeddings=cfg["max_seq"],
        rms_norm_eps=cfg["eps"], tie_word_embeddings=cfg["tied"])
    m = (transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**kw)) if cfg["qkv_bias"]
         else transformers.LlamaForCausalLM(transformers.LlamaConfig(**kw)))
m.train()
ids = torch.randint(0, cfg["vocab"], (batch, seq))
def step():
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        loss = m(input_ids=ids, labels=ids).loss
    loss.backward()
step()
best, total, reps = 1e30, 0.0, 0
while total < min_s or reps < 1:
    m.zero_grad(set_to_none=False)
    t0 = time.perf_counter(); step(); s = time.perf_counter() - t0
    best = min(best, s); total += s; reps += 1
print("step_s", best)
print("rss_growth_bytes", rss("VmHWM:") - rss0)
)PY";

struct TorchResult {
  bool ok = false;
  std::string version, note;
  double seconds = 0;
  int64_t rss_growth_bytes = 0;
};

TorchResult run_torch(const models::ModelConfig& c, int64_t batch, int64_t seq, int threads,
                      double min_seconds, const char* mode) {
  TorchResult r;
  nlohmann::json cfg = {{"family", c.family == models::ModelFamily::kGpt2 ? "gpt2" : "llama"},
                        {"vocab", c.vocab_size}, {"dim", c.dim}, {"hidden", c.hidden_dim},
                        {"layers", c.n_layers}, {"heads", c.n_heads}, {"kv_heads", c.n_kv_heads},
                        {"max_seq", c.max_seq_len}, {"eps", c.norm_eps}, {"tied", c.tied_embeddings},
                        {"qkv_bias", c.qkv_bias}};
  char path[] = "/tmp/farthing_bench_train_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return r;
  const ssize_t written = write(fd, kTorchScript, std::strlen(kTorchScript));
  close(fd);
  if (written > 0) {
    const std::string cmd = "python3 " + std::string(path) + " '" + cfg.dump() + "' " +
                            std::to_string(batch) + " " + std::to_string(seq) + " " +
                            std::to_string(threads) + " " + std::to_string(min_seconds) + " " + mode +
                            " 2>/dev/null";
    if (FILE* pipe = popen(cmd.c_str(), "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, pipe)) {
        char text[256] = {0};
        double v = 0;
        long long b = 0;
        if (std::sscanf(line, "version %255s", text) == 1) r.version = text;
        else if (std::sscanf(line, "step_s %lf", &v) == 1) { r.seconds = v; r.ok = true; }
        else if (std::sscanf(line, "rss_growth_bytes %lld", &b) == 1) r.rss_growth_bytes = b;
        else if (std::strncmp(line, "no-torch", 8) == 0) r.note = "torch/transformers not importable";
      }
      pclose(pipe);
    }
  }
  std::remove(path);
  return r;
}

}  // namespace

int run_train_bench(const BenchOptions& options) {
  const std::string preset = options.preset.empty() ? "gpt2-124m" : options.preset;
  const models::ModelConfig config = models::preset_config(preset);
  const int64_t seq = options.seq > 0 ? options.seq : 512;
  const int64_t batch = options.batch > 0 ? options.batch : 1;
  const int threads = omp_get_max_threads();
  const double min_s = options.min_seconds;

  const int64_t M = batch * seq, C = config.dim, H = config.hidden_dim;
  const std::vector<k::GemmShape> shapes = {k::GemmShape{M, H, C}, k::GemmShape{M, C, H},
                                            k::GemmShape{2048, 2048, 2048}};
  // NOTE: the ceiling is measured before and after the model runs and the best is kept, so
  // a machine shared with other work is less likely to understate it.
  std::string f32_shape, bf16_shape, shape_tmp;
  double f32_rate = gemm_rate(k::GemmDtype::kF32, shapes, min_s, &f32_shape);
  double bf16_rate = gemm_rate(k::GemmDtype::kBF16, shapes, min_s, &bf16_shape);

  std::vector<StepResult> rows;
  rows.push_back(run_farthing(config, batch, seq, models::ComputeMode::kF32, min_s));
  rows.push_back(run_farthing(config, batch, seq, models::ComputeMode::kBF16, min_s));
  rows.push_back(run_farthing(config, batch, seq, models::ComputeMode::kF32, min_s, models::Checkpointing::kPerBlock));

  const double f32_after = gemm_rate(k::GemmDtype::kF32, shapes, min_s, &shape_tmp);
  if (f32_after > f32_rate) { f32_rate = f32_after; f32_shape = shape_tmp; }
  const double bf16_after = gemm_rate(k::GemmDtype::kBF16, shapes, min_s, &shape_tmp);
  if (bf16_after > bf16_rate) { bf16_rate = bf16_after; bf16_shape = shape_tmp; }
  const double ceiling = std::max(f32_rate, bf16_rate);
  const TorchResult torch = run_torch(config, batch, seq, threads, min_s, "bf16");
  const TorchResult torch32 = run_torch(config, batch, seq, threads, min_s, "fp32");

  if (options.json) {
    nlohmann::json out = {{"suite", "train"}, {"preset", preset}, {"batch", batch}, {"seq", seq},
                          {"threads", threads}, {"optimizer_step_included", false},
                          {"gemm_f32_flops", f32_rate}, {"gemm_bf16_flops", bf16_rate},
                          {"bf16_gemm_native", k::bf16_gemm_is_native_cpu()}};
    for (const StepResult& r : rows) {
      out["runs"].push_back({{"mode", r.mode}, {"step_s", r.seconds}, {"tokens_per_s", r.tokens_per_s},
                             {"model_flops_per_s", r.flops_per_s}, {"gemm_ceiling_fraction", r.flops_per_s / ceiling},
                             {"tracked_peak_bytes", r.tracked_peak_bytes}, {"rss_growth_bytes", r.rss_growth_bytes},
                             {"loss", r.loss},
                             {"torch_speed_ratio", torch.ok ? torch.seconds / r.seconds : 0.0},
                             {"torch_fp32_speed_ratio", torch32.ok ? torch32.seconds / r.seconds : 0.0}});
    }
    if (torch.ok) {
      out["torch"] = {{"version", torch.version}, {"step_s", torch.seconds},
                      {"tokens_per_s", double(M) / torch.seconds}, {"rss_growth_bytes", torch.rss_growth_bytes}};
    }
    if (torch32.ok) {
      out["torch_fp32"] = {{"step_s", torch32.seconds}, {"tokens_per_s", double(M) / torch32.seconds},
                           {"rss_growth_bytes", torch32.rss_growth_bytes}};
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("farthing bench train: %s, batch %lld x seq %lld, %d threads, %.1fM parameters\n",
              preset.c_str(), (long long)batch, (long long)seq, threads, double(config.num_params()) / 1e6);
  std::printf("step = forward + fused chunked cross-entropy + backward; the optimizer step is NOT included yet\n");
  std::printf("GEMM ceiling (oneDNN, same run): fp32 %.1f GFLOP/s (%s), bf16 %.1f GFLOP/s (%s)%s\n\n",
              f32_rate / 1e9, f32_shape.c_str(), bf16_rate / 1e9, bf16_shape.c_str(),
              k::bf16_gemm_is_native_cpu() ? "" : " [no native bf16 GEMM here: widened to fp32]");
  auto ratio = [](const TorchResult& t, double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", t.seconds / seconds);
    return t.ok ? std::string(buf) : std::string("-");
  };
  std::printf("%-19s %9s %10s %9s %8s %14s %14s %9s %9s\n", "run", "step s", "tokens/s", "GFLOP/s",
              "of GEMM", "tracked peak", "RSS growth", "vs amp", "vs fp32");
  for (const StepResult& r : rows) {
    std::printf("%-19s %9.3f %10.1f %9.1f %7.1f%% %10.1f MiB %10.1f MiB %9s %9s\n", r.mode.c_str(),
                r.seconds, r.tokens_per_s, r.flops_per_s / 1e9, 100.0 * r.flops_per_s / ceiling,
                double(r.tracked_peak_bytes) / 1048576.0, double(r.rss_growth_bytes) / 1048576.0,
                ratio(torch, r.seconds).c_str(), ratio(torch32, r.seconds).c_str());
  }
  for (const auto* t : {&torch, &torch32}) {
    if (!t->ok) continue;
    std::printf("%-19s %9.3f %10.1f %9s %8s %14s %10.1f MiB\n", t == &torch ? "torch bf16 autocast" : "torch fp32",
                t->seconds, double(M) / t->seconds, "", "", "", double(t->rss_growth_bytes) / 1048576.0);
  }
  if (torch.ok) {
    std::printf("\ntorch %s, transformers model, %d threads. 'vs amp' / 'vs fp32': farthing tokens/s over\n"
                "torch's with bf16 autocast / in fp32. Tracked peak: farthing's memory tracker (weights,\n"
                "grads, activations); RSS growth: the process's peak resident growth during the run.\n",
                torch.version.c_str(), threads);
  } else {
    std::printf("\ntorch: not measured (%s)\n", torch.note.empty() ? "python3 failed" : torch.note.c_str());
  }
  return 0;
}

}  // namespace farthing::bench
