// verb_train.cpp — `farthing train RECIPE [--set key=value]... [--resume latest|PATH]` and
// `farthing eval RECIPE [--set ...] [--checkpoint latest|PATH] [--batches N]`.
// The recipe is validated before anything is allocated; every rank of an mpirun job runs the
// same command. Relies on: train/recipe/recipe.h, train/loop/trainer.h.
// Tested by: tests/train/loop/test_train_resume.sh, test_train_bad_input.sh, test_train_preempt.sh (the CLI end to end).
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/dist/mpi_communicator.h"
#include "train/recipe/recipe.h"
#include "train/loop/stop_signals.h"
#include "train/loop/trainer.h"
#include "train/plan/device_fit.h"
#include "train/plan/step_profile_report.h"
#include "tools/farthing/verbs.h"

namespace {

constexpr const char* kTrainUsage =
    "usage: farthing train RECIPE [--set key=value]... [--resume latest|PATH] [--stop-at K] [--quiet]\n"
    "\n"
    "  RECIPE              a YAML recipe (recipes/<family>/<size>_<method>.yaml)\n"
    "  --set key=value     override a recipe key, e.g. --set optimizer.lr=1e-4 --set train.steps=20\n"
    "  --resume latest     continue the run in checkpoint.run_dir from its newest checkpoint\n"
    "  --resume PATH       continue from that checkpoint file\n"
    "  --resume auto       latest when the run_dir has a checkpoint, else a fresh start (requeued jobs)\n"
    "  --stop-at K         stop after step K with a checkpoint (a job time limit); resume later\n"
    "  --quiet             no progress lines (metrics.jsonl is still written)\n"
    "\n"
    "Writes checkpoint.run_dir/{recipe.yaml, metrics.jsonl, checkpoints/step_NNNNNNNN.h5, checkpoints/latest}.\n"
    "One train at a time per run_dir: it holds run_dir/train.lock while it runs (eval may read meanwhile).\n"
    "SIGTERM or SIGUSR1 (Slurm: --signal=USR1@120) to any rank: every rank finishes its step, saves a\n"
    "checkpoint and exits with status 75; a second signal exits at once, keeping the previous checkpoint.\n"
    "Under mpirun every rank runs the same command: mpirun -np 2 farthing train RECIPE\n";

constexpr const char* kEvalUsage =
    "usage: farthing eval RECIPE [--set key=value]... [--checkpoint latest|PATH] [--batches N]\n"
    "\n"
    "  Mean loss of the model on the recipe's held-out data (data.eval, or the eval_fraction\n"
    "  split of data.train), with the weights of a training checkpoint or the recipe's model.\n"
    "  --checkpoint        latest (in checkpoint.run_dir) or a path; default: the recipe's model\n"
    "  --batches N         micro-batches to evaluate (default: train.eval_batches; 0: all)\n";

struct CommonArgs {
  std::string recipe;
  std::vector<std::string> overrides;
  std::string resume, checkpoint;
  int64_t batches = -1;
  int64_t stop_at = 0;
  bool quiet = false;
  bool help = false;
};

CommonArgs parse_args(const std::vector<std::string>& args, const char* verb, bool train) {
  CommonArgs c;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      FARTHING_CHECK(i + 1 < args.size(), "farthing ", verb, ": option ", a, " needs a value");
      return args[++i];
    };
    if (a == "--help" || a == "-h") c.help = true;
    else if (a == "--set") c.overrides.push_back(value());
    else if (train && a == "--resume") c.resume = value();
    else if (a == "--quiet") c.quiet = true;
    else if (train && a == "--stop-at") c.stop_at = std::stoll(value());
    else if (!train && a == "--checkpoint") c.checkpoint = value();
    else if (!train && a == "--batches") c.batches = std::stoll(value());
    else if (!a.empty() && a[0] == '-') FARTHING_FAIL("farthing ", verb, ": unknown option '", a, "' (see --help)");
    else if (c.recipe.empty()) c.recipe = a;
    else FARTHING_FAIL("farthing ", verb, ": unexpected argument '", a, "'; give one RECIPE (see --help)");
  }
  FARTHING_CHECK(c.help || !c.recipe.empty(), "farthing ", verb, ": no RECIPE given; pick one under recipes/, or ",
                 "write a starter recipe for your model with `farthing init MODEL_FILE` (see --help)");
  return c;
}

// Several ranks on one node share its cores: unless OMP_NUM_THREADS says otherwise, each rank
// gets cores / ranks-on-this-node threads (as torchrun does), since oversubscribed OpenMP
// threads spin against each other and run many times slower.
void share_cores_between_local_ranks(const farthing::Communicator& comm) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr || comm.local_size() <= 1) return;
  omp_set_num_threads(std::max(1, omp_get_num_procs() / comm.local_size()));
}

int run_train(const std::vector<std::string>& args) {
  const CommonArgs a = parse_args(args, "train", true);
  if (a.help) {
    std::printf("%s", kTrainUsage);
    return 0;
  }
  farthing::recipe::RunConfig config = farthing::recipe::load_recipe(a.recipe, a.overrides);
  auto comm = farthing::make_world_communicator();
  share_cores_between_local_ranks(*comm);
  farthing::train::TrainerOutput output;
  output.progress = !a.quiet;
  output.auto_loss_chunk_rows = farthing::train::auto_loss_chunk_rows(*comm);
  farthing::train::Trainer trainer(std::move(config), *comm, output);
  const farthing::train::TrainResult r = trainer.train(a.resume, a.stop_at);
  if (r.stopped_by_signal != 0) {
    if (comm->rank() == 0) {
      std::printf("stopped by %s after step %lld of %lld; saved %s\ncontinue with: farthing train %s --resume latest "
                  "(exit status %d: preempted, checkpoint saved)\n",
                  farthing::train::signal_name(r.stopped_by_signal).c_str(), (long long)r.final_step,
                  (long long)trainer.config().train.steps, r.last_checkpoint.string().c_str(), a.recipe.c_str(),
                  farthing::train::kExitPreempted);
    }
    return farthing::train::kExitPreempted;
  }
  farthing::train::report_step_profile(trainer, comm->rank());  // train.profile: ops
  if (comm->rank() == 0) {
    std::printf("trained to step %lld in %.1f s; last loss %.4f", (long long)r.final_step, r.seconds, r.last_loss);
    if (r.eval_before) std::printf("; held-out loss before %.4f", r.eval_before->loss);
    if (r.eval_after) std::printf("%s %.4f", r.eval_before ? ", after" : "; held-out loss after", r.eval_after->loss);
    std::printf("\n");
  }
  return 0;
}

int run_eval(const std::vector<std::string>& args) {
  const CommonArgs a = parse_args(args, "eval", false);
  if (a.help) {
    std::printf("%s", kEvalUsage);
    return 0;
  }
  farthing::recipe::RunConfig config = farthing::recipe::load_recipe(a.recipe, a.overrides);
  auto comm = farthing::make_world_communicator();
  share_cores_between_local_ranks(*comm);
  farthing::train::TrainerOutput output;
  output.progress = false;
  output.auto_loss_chunk_rows = farthing::train::auto_loss_chunk_rows(*comm);
  farthing::train::Trainer trainer(std::move(config), *comm, output);
  if (!a.checkpoint.empty()) trainer.load_checkpoint(trainer.resolve_checkpoint(a.checkpoint));
  const int64_t batches = a.batches >= 0 ? a.batches : trainer.config().train.eval_batches;
  const farthing::train::EvalResult r = trainer.evaluate(batches);
  if (comm->rank() == 0) {
    std::printf("eval_loss %.10f tokens %lld batches %lld step %lld\n", r.loss, (long long)r.tokens,
                (long long)r.batches, (long long)trainer.progress().step);
  }
  return 0;
}

const VerbRegistration kTrain{"train", "RECIPE [--set key=value]... [--resume latest|PATH]",
                              "fine-tune a model as a recipe says (farthing train --help)", run_train};
const VerbRegistration kEval{"eval", "RECIPE [--set key=value]... [--checkpoint latest|PATH]",
                             "held-out loss of a checkpoint or model (farthing eval --help)", run_eval};

}  // namespace
