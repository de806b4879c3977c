// verb_bench.cpp — `farthing bench SUITE [options]`: one subcommand per benchmark suite
// (tools/bench/bench.h). Every suite takes --json and --threads; each takes the other options
// its BenchSuite lists, so `farthing bench SUITE --help` shows what that suite reads and an
// option it does not read is refused.
// Relies on: tools/bench/bench.h, cli.h. Tested by: tests/cli/test_help.sh.
#include <omp.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "framework/core/error.h"
#include "tools/bench/bench.h"
#include "tools/farthing/cli.h"
#include "tools/farthing/verbs.h"

namespace {

using farthing::bench::BenchOptions;
using farthing::bench::BenchSuite;
namespace cli = farthing::cli;

// The options of BenchOptions that `suite` reads, on its subcommand.
void define_suite_options(CLI::App& app, const BenchSuite& suite, BenchOptions& o) {
  const std::string name = suite.name;
  auto reads = [&](const char* option) {
    return std::find(suite.options.begin(), suite.options.end(), option) != suite.options.end();
  };
  app.add_flag("--json", o.json, "print one JSON document instead of the table");
  app.add_option("--threads", o.threads, "OpenMP threads (0: the runtime's default)")
      ->capture_default_str()
      ->check(cli::whole_number_at_least(0));
  if (reads("--device")) {
    app.add_option("--device", o.device,
                   name == "precision" ? "cpu (the study runs on the CPU only)"
                   : name == "gemm"    ? "cuda (cuBLASLt on device 0; there is no cpu form)"
                                       : "cpu, or cuda to measure device 0")
        ->type_name("cpu|cuda")
        ->capture_default_str()
        ->check(cli::one_of({"cpu", "cuda"}));
  }
  if (reads("--elements")) {
    app.add_option("--elements", o.elements, "problem size (0: the suite's default)")
        ->capture_default_str()
        ->check(cli::whole_number_at_least(0));
  }
  if (reads("--min-seconds")) {
    app.add_option("--min-seconds", o.min_seconds, "time each measurement at least this long")
        ->capture_default_str()
        ->check(cli::positive_number());
  }
  if (reads("--preset")) {
    app.add_option("--preset", o.preset, "model preset, e.g. gpt2-124m, stories260k (default: the suite's)");
  }
  if (reads("--seq")) {
    app.add_option("--seq", o.seq, "tokens per sequence (0: the suite's default)")
        ->capture_default_str()
        ->check(cli::whole_number_at_least(0));
  }
  if (reads("--batch")) {
    app.add_option("--batch", o.batch, "sequences per step (0: the suite's default)")
        ->capture_default_str()
        ->check(cli::whole_number_at_least(0));
  }
  if (reads("--torch-amp")) {
    app.add_flag("--torch-amp", o.torch_amp, "run the bf16-autocast torch peer even where bf16 is emulated");
  }
  if (reads("--profile-ops")) {
    app.add_flag("--profile-ops", o.profile_ops, "time every op of each row's steps; the profile goes to stderr");
  }
  if (reads("--torch-compile")) {
    app.add_flag("--torch-compile", o.torch_compile, "with --device cuda: also the torch peer through torch.compile");
  }
  if (reads("--packing")) {
    app.add_option("--packing", o.packing,
                   "data.packing of farthing's rows (default: stream, the token file's); documents runs the "
                   "document path over the same tokens")
        ->type_name("documents|stream|none")
        ->check(cli::one_of({"documents", "stream", "none"}));
  }
  if (reads("--quick")) {
    app.add_flag("--quick", o.quick, "stories260K and short runs (about 2 minutes) instead of SmolLM2-135M");
  }
  if (reads("--fp4")) {
    app.add_flag("--fp4", o.fp4, "only the FP4 comparison: bf16, fp8 block, nvfp4 and its ablations, mxfp4");
  }
  if (reads("--steps")) {
    app.add_option("--steps", o.steps, "steps per trajectory (default: the study's)")->check(cli::whole_number_at_least(1));
  }
  if (reads("--seed")) {
    app.add_option("--seed", o.seed, "train.seed of every run (default: 1234)")->check(cli::whole_number_at_least(1));
  }
  if (reads("--only")) {
    app.add_option("--only", o.only, "with --fp4: only the rows whose name contains TEXT, beside bf16")
        ->type_name("TEXT");
  }
  if (reads("--out")) {
    app.add_option("--out", o.out,
                   name == "dist" ? "write this world size's links and compute as JSON (for --profile, and for\n"
                                    "farthing plan --interconnect/--profile)"
                                  : "the folder for the report, its JSON and plots (default: the study's)")
        ->type_name(name == "dist" ? "FILE" : "DIR");
  }
  if (reads("--profile")) {
    app.add_option("--profile", o.profile, "another run's --out file (e.g. np 1's), whose compute predicts this one")
        ->type_name("FILE");
  }
  if (reads("--reduce-bucket-mib")) {
    app.add_option("--reduce-bucket-mib", o.reduce_bucket_mib,
                   "the runs' distributed.reduce_bucket_mib (> 0: reductions in flight)")
        ->capture_default_str()
        ->check(cli::non_negative_number());
  }
  for (const std::string& option : suite.options) {
    FARTHING_CHECK(app.get_option_no_throw(option) != nullptr, "bench suite '", suite.name, "' lists option ",
                   option, ", which farthing bench does not define");
  }
}

VerbRun define_bench(CLI::App& verb) {
  verb.require_subcommand(1);
  auto options = std::make_shared<BenchOptions>();
  auto suites = std::make_shared<std::map<const CLI::App*, const BenchSuite*>>();
  for (const BenchSuite& suite : farthing::bench::bench_suites()) {
    CLI::App* app = verb.add_subcommand(suite.name, suite.summary)->group("Suites");
    define_suite_options(*app, suite, *options);
    (*suites)[app] = &suite;
  }
  return [&verb, options, suites]() -> int {
    if (options->threads > 0) omp_set_num_threads(options->threads);
    return suites->at(verb.get_subcommands().front())->run(*options);
  };
}

const VerbRegistration kBench{"bench", "measure a suite against its ceiling and its peers",
                              define_bench};

}  // namespace
