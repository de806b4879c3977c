// main.cpp — the farthing command line. The only place that decides to exit: library code
// throws farthing::Error, and this prints it cleanly with a non-zero status.
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "framework/backend/backend.h"
#include "framework/core/error.h"
#include "framework/dist/abort_on_error.h"
#include "tools/bench/bench.h"
#include "tools/farthing/verbs.h"

namespace {

constexpr const char* kUsage =
    "farthing — full fine-tuning of transformer language models with as little memory as the\n"
    "numerics allow.\n"
    "\n"
    "usage: farthing <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  bench SUITE [--json] [--elements N] [--min-seconds S] [--threads T]\n"
    "                 [--preset NAME] [--seq T] [--batch B] [--torch-amp]   (train, gemm suites)\n"
                 "                 [--profile-ops]   (train suite: every op of each row's steps timed; the profile on stderr)\n"
                 "                 [--torch-compile]   (train suite, cuda: also the torch peer through torch.compile)\n"
    "                 [--device cpu|cuda]   (numerics, optim, train, ops: cuda measures the GPU; gemm: cuda only)\n"
    "                 [--quick] [--out DIR]   (precision suite: stories260K in ~2 min; where its report goes)\n"
    "                 [--fp4] [--steps N] [--seed S]   (precision suite: only the FP4 comparison; run length; seed)\n"
    "                 [--only TEXT]   (precision suite --fp4: only the rows whose name contains TEXT, beside bf16)\n"
    "                 [--out FILE] [--profile FILE]   (dist suite: write this world size's measurements;\n"
    "                 predict from another run's, e.g. np 1's) [--reduce-bucket-mib M]   (dist: reductions in flight)\n"
    "                 measure a suite against its ceiling and peers (farthing bench --help)\n"
    "  tokenize --tokenizer PATH (--ids TEXT | INPUT -o OUT.bin)\n"
    "                 text or JSONL to token ids (tokenizer.json, tok512.bin or .gguf)\n"
    "  export --from MODEL|RUN_DIR|latest --out DIR [--recipe RECIPE]\n"
    "                 write a model file (safetensors, GGUF, llama2.c, a run's checkpoint) as a Hugging Face\n"
    "                 directory: safetensors, config.json, and the source model's tokenizer and chat template\n"
    "  info           what this binary was built with and which devices it sees\n"
    "  help           this text\n";

// Verbs that register themselves (verbs.h), after the built-in ones above.
void print_registered_verbs(FILE* out) {
  for (const VerbInfo& v : registered_verbs()) {
    std::fprintf(out, "  %s %s\n                 %s\n", v.name.c_str(), v.synopsis.c_str(), v.summary.c_str());
  }
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "farthing: %s\n\n%s", message.c_str(), kUsage);
  print_registered_verbs(stderr);
  return 2;
}

int run_info() {
  std::printf("farthing %s\n", "0.1.0");
#if defined(FARTHING_WITH_CUDA)
  std::printf("cuda backend: built; devices visible: %s\n", farthing::cuda_available() ? "yes" : "no");
#else
  std::printf("cuda backend: not built\n");
#endif
  std::printf("openmp threads: %d\n", omp_get_max_threads());
  return 0;
}

int run_bench(const std::vector<std::string>& args) {
  using namespace farthing::bench;
  auto print_suites = [](FILE* out) {
    std::fprintf(out, "usage: farthing bench SUITE [--json] [--elements N] [--min-seconds S] [--threads T] [--device cpu|cuda]\n\nsuites:\n");
    for (const BenchSuite& s : bench_suites()) std::fprintf(out, "  %-10s %s\n", s.name, s.summary);
  };
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    print_suites(args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  BenchOptions options;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      FARTHING_CHECK(i + 1 < args.size(), "option ", a, " needs a value");
      return args[++i];
    };
    if (a == "--json") options.json = true;
    else if (a == "--elements") options.elements = std::stoll(value());
    else if (a == "--min-seconds") options.min_seconds = std::stod(value());
    else if (a == "--threads") options.threads = std::stoi(value());
    else if (a == "--preset") options.preset = value();
    else if (a == "--seq") options.seq = std::stoll(value());
    else if (a == "--batch") options.batch = std::stoll(value());
    else if (a == "--torch-amp") options.torch_amp = true;
    else if (a == "--profile-ops") options.profile_ops = true;
    else if (a == "--torch-compile") options.torch_compile = true;
    else if (a == "--packing") {
      options.packing = value();
      if (options.packing != "documents" && options.packing != "stream" && options.packing != "none") {
        return usage_error("--packing must be documents, stream or none, got '" + options.packing + "'");
      }
    }
    else if (a == "--quick") options.quick = true;
    else if (a == "--fp4") options.fp4 = true;
    else if (a == "--only") options.only = value();
    else if (a == "--steps" || a == "--seed") {
      const std::string v = value();
      char* end = nullptr;
      const long long x = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || x < 1) return usage_error(a + " must be a whole number >= 1, got '" + v + "'");
      (a == "--steps" ? options.steps : options.seed) = x;
    }
    else if (a == "--out") options.out = value();
    else if (a == "--profile") options.profile = value();
    else if (a == "--reduce-bucket-mib") {
      const std::string v = value();
      char* end = nullptr;
      options.reduce_bucket_mib = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(options.reduce_bucket_mib >= 0.0) || !std::isfinite(options.reduce_bucket_mib)) {
        return usage_error("--reduce-bucket-mib must be MiB >= 0, got '" + v + "'");
      }
    }
    else if (a == "--device") {
      options.device = value();
      if (options.device != "cpu" && options.device != "cuda") {
        return usage_error("--device must be cpu or cuda, got '" + options.device + "'");
      }
    }
    else return usage_error("unknown bench option '" + a + "'");
  }
  if (options.threads > 0) omp_set_num_threads(options.threads);
  for (const BenchSuite& s : bench_suites()) {
    if (args[0] == s.name) return s.run(options);
  }
  std::fprintf(stderr, "farthing bench: unknown suite '%s'\n\n", args[0].c_str());
  print_suites(stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage_error("no verb given");
  // --verbose anywhere: errors also say where they were raised (FARTHING_DEBUG=1).
  std::vector<std::string> words;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--verbose") {
      setenv("FARTHING_DEBUG", "1", 1);
    } else {
      words.emplace_back(argv[i]);
    }
  }
  if (words.empty()) return usage_error("no verb given");
  const std::string verb = words[0];
  const std::vector<std::string> args(words.begin() + 1, words.end());
  if (verb == "help" || verb == "--help" || verb == "-h") {
    std::printf("%s", kUsage);
    print_registered_verbs(stdout);
    return 0;
  }
  // run_main_or_abort prints an escaping error once, naming the rank, and ends every rank of
  // a multi-process job so that no peer waits forever in a collective.
  return farthing::run_main_or_abort([&]() -> int {
    if (verb == "bench") return run_bench(args);
    if (verb == "tokenize") return run_tokenize(args);
    if (verb == "export") return run_export(args);
    if (verb == "info") return run_info();
    for (const VerbInfo& v : registered_verbs()) {
      if (verb == v.name) return v.run(args);
    }
    return usage_error("unknown verb '" + verb + "'");
  });
}
