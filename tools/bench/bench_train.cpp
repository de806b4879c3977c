// bench_train.cpp — `farthing bench train`: one full training step of a preset at --batch x
// --seq on this CPU through the Trainer (forward, fused chunked cross-entropy, backward, grad
// clipping, the fused AdamW pass): tokens/s, peak memory (memory tracker, and the process's
// peak RSS growth), the model FLOP/s as a fraction of the best oneDNN GEMM rate measured in
// the same run, and the same step in PyTorch (transformers model + torch.optim.AdamW, bf16
// autocast and fp32, same threads and shapes) as a ratio when python3 can import torch and
// transformers. The torch peers stay loaded in child processes and take turns with farthing's
// steps. Rows: fp32 compute with fp32 AdamW (what torch fp32 does), and farthing's lean
// configuration (8-bit moments, no master, stochastic rounding) in fp32, bf16, with activation
// checkpointing, and with the optimizer step fused into backward (units widened to fp32 as they
// are used, no gradient buffer; without clipping, which that mode cannot do).
// --device cuda: the same on GPU 0 against torch on that GPU, with MFU (run_train_bench_cuda).
// Relies on: train/loop/trainer.h, kernels/cpu/matmul_cpu.h (the ceiling),
// tools/bench/peer_process.h (the torch peers). Not a test.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/backend/buffer.h"
#include "framework/core/memory.h"
#include "framework/dist/mpi_communicator.h"
#include "train/loop/trainer.h"
#include "train/plan/step_profile_report.h"
#include "kernels/cpu/matmul_cpu.h"
#include "models/common/presets.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_cuda.h"
#include "tools/bench/peer_process.h"

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
  std::vector<double> peer_seconds;  // each peer's best step in the turns taken with this run
};

// The PyTorch peer, kept loaded between turns: a transformers model from the preset's config,
// on argv[6] ("cpu" or "cuda"), bf16 autocast (argv[5] "bf16", or "bf16+compile": the model through
// torch.compile, compiled by the warm-up step) or fp32; one step = forward + loss + backward +
// clip_grad_norm_(1.0) + torch.optim.AdamW (fused where this torch has it on the CPU, else
// foreach) + zero_grad. Each mode runs in its own process so peak RSS is its own.
// Prints "version V", "optimizer fused|foreach", then "ready" after a warm-up step (or
// "no-torch"); answers each "step" line with "step_s S" (timed between device synchronisations
// on cuda) and "quit" with "rss_growth_bytes B" (on cuda: torch's peak device allocation).
const char* kTorchScript = R"PY(
import json, sys, time
try:
    import torch, transformers
except Exception:
    print("no-torch", flush=True); sys.exit(0)
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field): return int(line.split()[1]) * 1024
    return 0
cfg, batch, seq, threads = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
amp = sys.argv[5].startswith("bf16")
compiled = sys.argv[5].endswith("+compile")
dev = sys.argv[6]
if dev == "cuda" and not torch.cuda.is_available():
    print("no-torch-cuda", flush=True); sys.exit(0)
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
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
m.to(dev).train()
if compiled:
    try:
        m = torch.compile(m)
    except Exception as e:
        print("no-torch-compile", type(e).__name__, flush=True); sys.exit(0)
ids = torch.randint(0, cfg["vocab"], (batch, seq), device=dev)
try:
    opt = torch.optim.AdamW(m.parameters(), lr=2e-5, weight_decay=0.01, fused=True)
    print("optimizer fused")
except Exception:
    opt = torch.optim.AdamW(m.parameters(), lr=2e-5, weight_decay=0.01, foreach=True)
    print("optimizer foreach")
def step():
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=amp):
        loss = m(input_ids=ids, labels=ids).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
step(); sync()  # warm-up
if dev == "cuda": torch.cuda.reset_peak_memory_stats()
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "step":
        sync(); t0 = time.perf_counter(); step(); sync()
        print("step_s", time.perf_counter() - t0, flush=True)
    elif line.strip() == "quit":
        break
peak = torch.cuda.max_memory_allocated() if dev == "cuda" else rss("VmHWM:") - rss0
print("rss_growth_bytes", peak, flush=True)
)PY";

// One PyTorch configuration, loaded once and stepped on demand.
class TorchPeer {
 public:
  TorchPeer(const models::ModelConfig& c, int64_t batch, int64_t seq, int threads, const char* mode,
            const char* device = "cpu") {
    const nlohmann::json cfg = {{"family", c.family == models::ModelFamily::kGpt2 ? "gpt2" : "llama"},
                                {"vocab", c.vocab_size}, {"dim", c.dim}, {"hidden", c.hidden_dim},
                                {"layers", c.n_layers}, {"heads", c.n_heads}, {"kv_heads", c.n_kv_heads},
                                {"max_seq", c.max_seq_len}, {"eps", c.norm_eps}, {"tied", c.tied_embeddings},
                                {"qkv_bias", c.qkv_bias}};
    process_ = std::make_unique<PeerProcess>(std::vector<std::string>{
        "python3", "-c", kTorchScript, cfg.dump(), std::to_string(batch), std::to_string(seq),
        std::to_string(threads), mode, device});
    std::string line;
    char text[256];
    while (process_->receive(&line)) {
      if (std::sscanf(line.c_str(), "version %255s", text) == 1) version_ = text;
      else if (std::sscanf(line.c_str(), "optimizer %255s", text) == 1) optimizer_ = text;
      else if (line == "no-torch") note_ = "torch/transformers not importable";
      else if (line == "no-torch-cuda") note_ = "this torch sees no CUDA device";
      else if (line == "ready") { ready_ = true; break; }
    }
    if (!ready_ && note_.empty()) note_ = "python3 failed to build the model";
  }

  bool ready() const { return ready_; }
  const std::string& version() const { return version_; }
  const std::string& optimizer() const { return optimizer_; }
  const std::string& note() const { return note_; }
  double best_seconds() const { return best_seconds_; }
  int64_t rss_growth_bytes() const { return rss_growth_bytes_; }

  // Runs one step and returns its seconds (< 0 if the peer failed).
  double step() {
    std::string line;
    double s = -1;
    if (ready_ && process_->send("step") && process_->receive(&line) &&
        std::sscanf(line.c_str(), "step_s %lf", &s) == 1) {
      best_seconds_ = std::min(best_seconds_, s);
      return s;
    }
    ready_ = false;
    note_ = "the python peer stopped mid-run";
    return -1;
  }

  // Ends the peer and collects its peak RSS growth.
  void finish() {
    std::string line;
    long long b = 0;
    if (ready_ && process_->send("quit") && process_->receive(&line) &&
        std::sscanf(line.c_str(), "rss_growth_bytes %lld", &b) == 1) {
      rss_growth_bytes_ = b;
    }
    process_.reset();
  }

 private:
  std::unique_ptr<PeerProcess> process_;
  bool ready_ = false;
  std::string version_, optimizer_, note_;
  double best_seconds_ = 1e30;
  int64_t rss_growth_bytes_ = 0;
};

// Turns of farthing's step and the peers' steps per row (each side keeps its best).
constexpr int kTurns = 3;

// One configuration of the trainer: what `farthing train` would run with these recipe keys.
struct TrainerRun {
  const char* name;
  const char* precision;        // train.precision
  const char* state;            // optimizer.state
  const char* master;           // optimizer.master
  const char* rounding;         // optimizer.weight_rounding
  const char* checkpointing;    // model.activation_checkpointing
  bool in_backward = false;     // train.optimizer_in_backward (no whole fp32 weight or gradient
                                // buffer; needs max_grad_norm 0 and nonfinite fail)
};

// A full training step through the Trainer (the product path): draw the batch, forward, fused
// chunked cross-entropy, backward, grad norm + clip at 1.0, the fused AdamW pass and the new
// bf16 weights. Peak memory counts everything the run allocated: weights, master, moments,
// gradients, activations.
StepResult run_farthing(const TrainerRun& run, const std::string& preset, const std::filesystem::path& tokens,
                        const std::filesystem::path& run_dir, int64_t batch, int64_t seq, double min_seconds,
                        const std::vector<TorchPeer*>& peers, Device device = Device::cpu(), bool profile_ops = false,
                        const std::string& packing = "") {
  StepResult r;
  r.mode = run.name;
  recipe::RunConfig rc;
  rc.model.preset = preset;
  rc.model.activation_checkpointing = recipe::enum_of<models::Checkpointing>(run.checkpointing);
  // NOTE: 512 logits rows per loss chunk (GPT-2: 98 MiB of them): fewer rows make the head's
  // GEMMs smaller and re-read the whole fp32 head gradient once per chunk (64 rows cost
  // 3-6% more step time than 512 here; 1024 buys little more).
  rc.model.loss_chunk_rows = 512;
  rc.data.train = tokens.string();
  rc.data.format = recipe::DataFormat::kTokens;
  rc.data.seq_len = seq;
  rc.data.eval_fraction = 0.0;
  rc.data.shuffle = false;
  if (!packing.empty()) rc.data.packing = recipe::enum_of<data::Packing>(packing);
  rc.optimizer.state = recipe::enum_of<optim::StateFormat>(run.state);
  rc.optimizer.master = recipe::enum_of<optim::MasterMode>(run.master);
  rc.optimizer.weight_rounding = recipe::enum_of<optim::WeightRounding>(run.rounding);
  rc.schedule.kind = optim::LrScheduleKind::kConstant;
  rc.train.steps = 1000;
  rc.train.micro_batch = batch;
  rc.train.precision = recipe::enum_of<recipe::Precision>(run.precision);
  rc.train.optimizer_in_backward = run.in_backward;
  if (run.in_backward) {
    rc.train.max_grad_norm = 0.0;
    rc.train.nonfinite = recipe::Nonfinite::kFail;
  }
  rc.checkpoint.run_dir = run_dir.string();
  rc.train.device = device.is_cpu() ? recipe::TrainDevice::kCpu : recipe::TrainDevice::kCuda;
  if (profile_ops) rc.train.profile = recipe::StepProfileMode::kOps;

  MemoryTracker& tracker = memory_tracker(device);
  tracker.reset_peaks();
  const int64_t base = tracker.snapshot().total_current_bytes;
  { std::ofstream("/proc/self/clear_refs") << "5"; }  // resets VmHWM to the current RSS
  const int64_t rss0 = proc_status_bytes("VmRSS:");
  auto comm = make_world_communicator();
  train::Trainer trainer(rc, *comm, train::TrainerOutput{.progress = false});
  // A step ends with its results on the host (the loss, AdamW's diagnostics), so the device has
  // finished it; the synchronisation makes sure of that for the timing.
  Backend& backend = backend_for(device);
  trainer.train_step();  // warm-up: primitives, page faults
  backend.synchronize();
  // NOTE: farthing's steps and each peer's take turns, so a drift in the machine's speed
  // reaches both sides of a ratio alike; each side keeps its best of the turns.
  r.peer_seconds.assign(peers.size(), 1e30);
  double best = 1e30, total = 0;
  int reps = 0;
  while (total < min_seconds || reps < kTurns) {
    const auto t0 = Clock::now();
    r.loss = float(trainer.train_step().loss);
    backend.synchronize();
    const double s = seconds_since(t0);
    best = std::min(best, s);
    total += s;
    ++reps;
    for (size_t i = 0; i < peers.size(); ++i) {
      if (!peers[i]->ready()) continue;
      const double peer_s = peers[i]->step();
      if (peer_s > 0) r.peer_seconds[i] = std::min(r.peer_seconds[i], peer_s);
    }
  }
  r.seconds = best;
  r.tokens_per_s = double(batch * seq) / best;
  r.flops_per_s = trainer.model().flops_per_step() / best;
  r.tracked_peak_bytes = tracker.snapshot().total_peak_bytes - base;
  r.rss_growth_bytes = proc_status_bytes("VmHWM:") - rss0;
  if (const train::RunStepProfile* profile = trainer.step_profile()) {  // --profile-ops; the timed steps' own
    const std::string model = backend.device_model();
    const train::StepProfileContext context = train::step_profile_context(
        rc, trainer.model().config(), 1, device.name() + (model.empty() ? "" : " (" + model + ")"), model);
    std::fprintf(stderr, "\n== %s%s", run.name, train::step_profile_table(*profile, context).c_str());
  }
  return r;
}

// Every configuration in turn on `device`, over one synthetic token file in a temporary folder.
std::vector<StepResult> run_rows(std::span<const TrainerRun> runs, const std::string& preset,
                                 const models::ModelConfig& config, int64_t batch, int64_t seq, double min_seconds,
                                 const std::vector<TorchPeer*>& peers, Device device, bool profile_ops,
                                 const std::string& packing) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       ("farthing_bench_train_" + device.name() + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path tokens = synthetic_token_file(dir, 64 * batch * (seq + 1), config.vocab_size);
  std::vector<StepResult> rows;
  for (const TrainerRun& run : runs) {
    rows.push_back(
        run_farthing(run, preset, tokens, dir / "run", batch, seq, min_seconds, peers, device, profile_ops, packing));
  }
  fs::remove_all(dir);
  return rows;
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

}  // namespace

int run_train_bench_cuda(const BenchOptions& options);

int run_train_bench(const BenchOptions& options) {
  if (options.device == "cuda") return run_train_bench_cuda(options);
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

  // NOTE: without a native bf16 GEMM (AVX-512-BF16 / AMX) torch's CPU autocast emulates bf16
  // and runs ~50x slower than its fp32 (GPT-2 124M at seq 1024 measured 2.4 tokens/s on an
  // AVX2 EPYC): a peer no user would run there, and minutes per step, so it is skipped unless
  // --torch-amp asks for it.
  const bool torch_amp_useful = k::bf16_gemm_is_native_cpu() || options.torch_amp;
  std::unique_ptr<TorchPeer> torch_amp;
  if (torch_amp_useful) torch_amp = std::make_unique<TorchPeer>(config, batch, seq, threads, "bf16");
  TorchPeer torch32(config, batch, seq, threads, "fp32");
  std::vector<TorchPeer*> peers;
  if (torch_amp && torch_amp->ready()) peers.push_back(torch_amp.get());
  if (torch32.ready()) peers.push_back(&torch32);
  auto peer_index = [&](const TorchPeer* peer) {
    const auto it = std::find(peers.begin(), peers.end(), peer);
    return it == peers.end() ? -1 : int(it - peers.begin());
  };

  // The first row is torch's fp32 AdamW in farthing; the others are what farthing recipes run.
  const TrainerRun runs[] = {
      {"fp32, f32 AdamW", "fp32", "f32", "f32", "nearest", "none"},
      {"fp32, 8bit+SR", "fp32", "8bit", "none", "stochastic", "none"},
      {"bf16, 8bit+SR", "bf16", "8bit", "none", "stochastic", "none"},
      {"fp32 ckpt, 8bit+SR", "fp32", "8bit", "none", "stochastic", "per_block"},
      {"8bit+SR in backward", "fp32", "8bit", "none", "stochastic", "none", true},
  };
  const std::vector<StepResult> rows = run_rows(runs, preset, config, batch, seq, min_s, peers, Device::cpu(),
                                                options.profile_ops, options.packing);
  for (TorchPeer* peer : peers) peer->finish();

  const double f32_after = gemm_rate(k::GemmDtype::kF32, shapes, min_s, &shape_tmp);
  if (f32_after > f32_rate) { f32_rate = f32_after; f32_shape = shape_tmp; }
  const double bf16_after = gemm_rate(k::GemmDtype::kBF16, shapes, min_s, &shape_tmp);
  if (bf16_after > bf16_rate) { bf16_rate = bf16_after; bf16_shape = shape_tmp; }
  const double ceiling = std::max(f32_rate, bf16_rate);
  // farthing's tokens/s over the peer's, both the best of the turns they took together.
  auto speed_ratio = [&](const TorchPeer* peer, const StepResult& r) {
    const int i = peer_index(peer);
    return i < 0 || r.peer_seconds[size_t(i)] >= 1e30 ? 0.0 : r.peer_seconds[size_t(i)] / r.seconds;
  };
  // The same over the peer's best step of all turns (every row's): the conservative ratio, as
  // the peer's steps vary more from turn to turn than farthing's.
  auto best_speed_ratio = [&](const TorchPeer* peer, const StepResult& r) {
    return peer_index(peer) < 0 ? 0.0 : peer->best_seconds() / r.seconds;
  };
  const std::string amp_note =
      torch_amp ? torch_amp->note()
                : "skipped: no native bf16 GEMM on this CPU (emulated autocast is ~50x slower than fp32; --torch-amp runs it)";
  const bool amp_ok = torch_amp && peer_index(torch_amp.get()) >= 0;
  const bool fp32_ok = peer_index(&torch32) >= 0;

  if (options.json) {
    nlohmann::json out = {{"suite", "train"}, {"preset", preset}, {"batch", batch}, {"seq", seq},
                          {"packing", options.packing.empty() ? "stream" : options.packing},
                          {"threads", threads}, {"optimizer_step_included", true}, {"turns", kTurns},
                          {"gemm_f32_flops", f32_rate}, {"gemm_bf16_flops", bf16_rate},
                          {"bf16_gemm_native", k::bf16_gemm_is_native_cpu()}};
    for (const StepResult& r : rows) {
      out["runs"].push_back({{"mode", r.mode}, {"step_s", r.seconds}, {"tokens_per_s", r.tokens_per_s},
                             {"model_flops_per_s", r.flops_per_s}, {"gemm_ceiling_fraction", r.flops_per_s / ceiling},
                             {"tracked_peak_bytes", r.tracked_peak_bytes}, {"rss_growth_bytes", r.rss_growth_bytes},
                             {"loss", r.loss},
                             {"torch_speed_ratio", speed_ratio(torch_amp.get(), r)},
                             {"torch_fp32_speed_ratio", speed_ratio(&torch32, r)},
                             {"torch_fp32_best_speed_ratio", best_speed_ratio(&torch32, r)}});
    }
    if (!amp_ok) out["torch_amp_note"] = amp_note;
    if (amp_ok) {
      out["torch"] = {{"version", torch_amp->version()}, {"optimizer", torch_amp->optimizer()},
                      {"step_s", torch_amp->best_seconds()}, {"tokens_per_s", double(M) / torch_amp->best_seconds()},
                      {"rss_growth_bytes", torch_amp->rss_growth_bytes()}};
    }
    if (fp32_ok) {
      out["torch_fp32"] = {{"version", torch32.version()}, {"optimizer", torch32.optimizer()},
                           {"step_s", torch32.best_seconds()}, {"tokens_per_s", double(M) / torch32.best_seconds()},
                           {"rss_growth_bytes", torch32.rss_growth_bytes()}};
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("farthing bench train: %s, batch %lld x seq %lld, %d threads, %.1fM parameters, data.packing %s\n",
              preset.c_str(), (long long)batch, (long long)seq, threads, double(config.num_params()) / 1e6,
              options.packing.empty() ? "stream" : options.packing.c_str());
  std::printf("step = draw batch + forward + fused chunked cross-entropy + backward + clip + AdamW + new weights\n"
              "(farthing's Trainer::train_step; torch: the transformers model, clip_grad_norm_, AdamW %s)\n",
              torch32.optimizer().empty() ? "-" : torch32.optimizer().c_str());
  std::printf("GEMM ceiling (oneDNN, same run): fp32 %.1f GFLOP/s (%s), bf16 %.1f GFLOP/s (%s)%s\n\n",
              f32_rate / 1e9, f32_shape.c_str(), bf16_rate / 1e9, bf16_shape.c_str(),
              k::bf16_gemm_is_native_cpu() ? "" : " [no native bf16 GEMM here: widened to fp32]");
  auto ratio_text = [&](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", x);
    return x > 0 ? std::string(buf) : std::string("-");
  };
  std::printf("%-20s %9s %10s %9s %8s %14s %14s %9s %9s %9s\n", "run", "step s", "tokens/s", "GFLOP/s",
              "of GEMM", "tracked peak", "RSS growth", "vs amp", "vs fp32", "fp32 best");
  for (const StepResult& r : rows) {
    std::printf("%-20s %9.3f %10.1f %9.1f %7.1f%% %10.1f MiB %10.1f MiB %9s %9s %9s\n", r.mode.c_str(),
                r.seconds, r.tokens_per_s, r.flops_per_s / 1e9, 100.0 * r.flops_per_s / ceiling,
                double(r.tracked_peak_bytes) / 1048576.0, double(r.rss_growth_bytes) / 1048576.0,
                ratio_text(speed_ratio(torch_amp.get(), r)).c_str(), ratio_text(speed_ratio(&torch32, r)).c_str(),
                ratio_text(best_speed_ratio(&torch32, r)).c_str());
  }
  for (const TorchPeer* peer : peers) {
    std::printf("%-20s %9.3f %10.1f %9s %8s %14s %10.1f MiB\n",
                peer == &torch32 ? "torch fp32" : "torch bf16 autocast", peer->best_seconds(),
                double(M) / peer->best_seconds(), "", "", "", double(peer->rss_growth_bytes()) / 1048576.0);
  }
  if (!amp_ok) std::printf("\ntorch bf16 autocast: %s\n", amp_note.c_str());
  if (fp32_ok) {
    std::printf("\ntorch %s, transformers model, %d threads. Each farthing row took %d turns with each torch\n"
                "peer (one farthing step, then one torch step); 'vs amp' / 'vs fp32' is farthing's tokens/s\n"
                "over torch's (bf16 autocast / fp32), each the best of those turns; 'fp32 best' is over\n"
                "torch fp32's best step of all turns (the torch rows), the conservative ratio. Tracked peak:\n"
                "farthing's memory tracker (weights, master, moments, grads, activations); RSS growth: the\n"
                "process's peak resident growth.\n",
                torch32.version().c_str(), threads, kTurns);
  } else {
    std::printf("\ntorch: not measured (%s)\n", torch32.note().c_str());
  }
  return 0;
}

namespace {

// The best bf16 GEMM rate (fp32 C) through the device's own NnOps::matmul at 8192^3: the
// measured ceiling, in the same run.
double device_gemm_ceiling(Device device, double min_seconds) {
  const int64_t n = 8192;
  Backend& backend = backend_for(device);
  Buffer a(device, size_t(n * n) * 2, MemoryCategory::kOther), b(device, size_t(n * n) * 2, MemoryCategory::kOther);
  Buffer c(device, size_t(n * n) * 4, MemoryCategory::kOther);
  backend.fill_bytes(a.data(), 0x3C, a.bytes());  // bf16 0x3C3C ~ 0.0115: finite, no denormals
  backend.fill_bytes(b.data(), 0x3C, b.bytes());
  const k::GemmShape shape{n, n, n};
  const double seconds = cuda_time_best(
      [&] { backend.nn().matmul(k::GemmDtype::kBF16, shape, a.data(), b.data(), static_cast<float*>(c.data()), false); },
      min_seconds);
  return 2.0 * double(n) * double(n) * double(n) / seconds;
}

}  // namespace

// `farthing bench train --device cuda`: the same step on GPU 0 (train.device: cuda) against
// PyTorch on the same GPU (transformers model, bf16 autocast, fused AdamW), with MFU against the
// GPU's dense BF16 peak and against the GEMM ceiling measured here, and both peak memories
// (farthing's device tracker; torch.cuda.max_memory_allocated). Ran on an H200: docs/results.md.
int run_train_bench_cuda(const BenchOptions& options) {
  if (cuda_bench_unavailable("train")) return kBenchSkipped;
  const Device device = Device::cuda(0);
  const std::string preset = options.preset.empty() ? "gpt2-124m" : options.preset;
  const models::ModelConfig config = models::preset_config(preset);
  const int64_t seq = options.seq > 0 ? options.seq : 1024;
  const int64_t batch = options.batch > 0 ? options.batch : 8;
  const double min_s = options.min_seconds;
  const int threads = omp_get_max_threads();
  const std::string summary = cuda_device_summary();
  const double peak = backend_for(device).dense_bf16_peak_flops();
  double ceiling = device_gemm_ceiling(device, min_s);

  TorchPeer torch_amp(config, batch, seq, threads, "bf16", "cuda");
  std::vector<TorchPeer*> peers;
  if (torch_amp.ready()) peers.push_back(&torch_amp);
  // --torch-compile: the same peer through torch.compile, a second row where this torch compiles
  // the model (its first step compiles: minutes for a large model).
  std::unique_ptr<TorchPeer> torch_compiled;
  if (options.torch_compile && torch_amp.ready()) {
    torch_compiled = std::make_unique<TorchPeer>(config, batch, seq, threads, "bf16+compile", "cuda");
    if (torch_compiled->ready()) peers.push_back(torch_compiled.get());
    else std::fprintf(stderr, "bench train: torch.compile peer unavailable: %s\n", torch_compiled->note().c_str());
  }
  const bool has_compiled = peers.size() > 1;

  const TrainerRun runs[] = {
      {"bf16, f32 AdamW", "bf16", "f32", "f32", "nearest", "none"},
      {"bf16, 8bit+SR", "bf16", "8bit", "none", "stochastic", "none"},
      {"bf16 ckpt, 8bit+SR", "bf16", "8bit", "none", "stochastic", "per_block"},
      {"8bit+SR in backward", "bf16", "8bit", "none", "stochastic", "none", true},
  };
  const std::vector<StepResult> rows =
      run_rows(runs, preset, config, batch, seq, min_s, peers, device, options.profile_ops, options.packing);
  for (TorchPeer* p : peers) p->finish();
  ceiling = std::max(ceiling, device_gemm_ceiling(device, min_s));  // best of before and after

  const int64_t M = batch * seq;
  auto ratio = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", x);
    return x > 0 ? std::string(buf) : std::string("-");
  };
  auto percent = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * x);
    return x > 0 ? std::string(buf) : std::string("-");
  };
  if (options.json) {
    nlohmann::json out = {{"suite", "train"}, {"device", summary}, {"preset", preset}, {"batch", batch}, {"seq", seq},
                          {"gemm_bf16_ceiling_flops", ceiling}, {"dense_bf16_peak_flops", peak}};
    for (const StepResult& r : rows) {
      const double peer_s = peers.empty() ? 1e30 : r.peer_seconds[0];
      out["runs"].push_back({{"mode", r.mode}, {"step_s", r.seconds}, {"tokens_per_s", r.tokens_per_s},
                             {"model_flops_per_s", r.flops_per_s}, {"mfu", peak > 0 ? r.flops_per_s / peak : 0.0},
                             {"gemm_ceiling_fraction", r.flops_per_s / ceiling},
                             {"device_peak_bytes", r.tracked_peak_bytes}, {"loss", r.loss},
                             {"torch_speed_ratio", peer_s < 1e30 ? peer_s / r.seconds : 0.0},
                             {"torch_compile_speed_ratio",
                              has_compiled && r.peer_seconds[1] < 1e30 ? r.peer_seconds[1] / r.seconds : 0.0}});
    }
    if (torch_amp.ready() || torch_amp.best_seconds() < 1e30) {
      out["torch"] = {{"version", torch_amp.version()}, {"step_s", torch_amp.best_seconds()},
                      {"tokens_per_s", double(M) / torch_amp.best_seconds()},
                      {"device_peak_bytes", torch_amp.rss_growth_bytes()}};
    } else {
      out["torch_note"] = torch_amp.note();
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("farthing bench train --device cuda: %s, batch %lld x seq %lld, %.1fM parameters\n%s\n", preset.c_str(),
              (long long)batch, (long long)seq, double(config.num_params()) / 1e6, summary.c_str());
  std::printf("ceilings: bf16 GEMM 8192^3 through NnOps::matmul %.1f TFLOP/s (same run); dense bf16 peak %s\n\n",
              ceiling / 1e12, peak > 0 ? (std::to_string(int(peak / 1e12)) + " TFLOP/s (datasheet)").c_str() : "unknown");
  std::printf("%-20s %9s %11s %9s %8s %9s %14s %9s%s\n", "run", "step s", "tokens/s", "TFLOP/s", "MFU", "of GEMM",
              "device peak", "vs torch", has_compiled ? "  vs compiled" : "");
  for (const StepResult& r : rows) {
    const double peer_s = peers.empty() ? 1e30 : r.peer_seconds[0];
    std::printf("%-20s %9.4f %11.0f %9.1f %8s %9s %10.1f MiB %9s%s\n", r.mode.c_str(), r.seconds, r.tokens_per_s,
                r.flops_per_s / 1e12, percent(peak > 0 ? r.flops_per_s / peak : 0).c_str(),
                percent(r.flops_per_s / ceiling).c_str(), double(r.tracked_peak_bytes) / 1048576.0,
                ratio(peer_s < 1e30 ? peer_s / r.seconds : 0).c_str(),
                has_compiled ? ("  " + ratio(r.peer_seconds[1] < 1e30 ? r.peer_seconds[1] / r.seconds : 0)).c_str() : "");
  }
  if (torch_amp.best_seconds() < 1e30) {
    std::printf("%-20s %9.4f %11.0f %9s %8s %9s %10.1f MiB\n", "torch bf16 autocast", torch_amp.best_seconds(),
                double(M) / torch_amp.best_seconds(), "", "", "", double(torch_amp.rss_growth_bytes()) / 1048576.0);
    std::printf("\ntorch %s on the same GPU, transformers model, fused AdamW, bf16 autocast; 'vs torch' is\n"
                "farthing's tokens/s over torch's, each the best of the turns they took together. Device peak:\n"
                "farthing's tracker (every Buffer on the GPU) and torch.cuda.max_memory_allocated.\n",
                torch_amp.version().c_str());
  } else {
    std::printf("\ntorch: not measured (%s)\n", torch_amp.note().c_str());
  }
  return 0;
}

}  // namespace farthing::bench
