// verb_train.cpp — `farthing train RECIPE [--set key=value]... [--resume latest|PATH]` and
// `farthing eval RECIPE [--set ...] [--checkpoint latest|PATH] [--batches N]`.
// The recipe is validated before anything is allocated; every rank of an mpirun job runs the
// same command. Relies on: train/recipe/recipe.h, train/loop/trainer.h.
// Tested by: tests/train/loop/test_train_resume.sh, test_train_bad_input.sh, test_train_preempt.sh (the CLI end to end).
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/dist/mpi_communicator.h"
#include "train/recipe/recipe.h"
#include "train/loop/stop_signals.h"
#include "train/loop/trainer.h"
#include "train/plan/device_fit.h"
#include "train/plan/step_profile_report.h"
#include "tools/farthing/cli.h"
#include "tools/farthing/verbs.h"

namespace {

struct TrainArgs {
  std::string recipe;
  std::vector<std::string> overrides;
  std::string resume;      // train: "", latest, auto or a checkpoint path
  int64_t stop_at = 0;     // train: stop after this step with a checkpoint (0: run to train.steps)
  bool quiet = false;      // no progress lines
  std::string checkpoint;  // eval: "", latest or a path
  int64_t batches = -1;    // eval: micro-batches (-1: train.eval_batches)
};

void define_recipe_options(CLI::App& verb, TrainArgs& a) {
  verb.add_option("RECIPE", a.recipe,
                  "a YAML recipe: one under recipes/, or write one for your model with `farthing init MODEL_FILE`")
      ->required();
  farthing::cli::add_set_option(verb, a.overrides);
}
// Several ranks on one node share its cores: unless OMP_NUM_THREADS says otherwise, each rank
// gets cores / ranks-on-this-node threads (as torchrun does), since oversubscribed OpenMP
// threads spin against each other and run many times slower.
void share_cores_between_local_ranks(const farthing::Communicator& comm) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr || comm.local_size() <= 1) return;
  omp_set_num_threads(std::max(1, omp_get_num_procs() / comm.local_size()));
}

int run_train(const TrainArgs& a) {
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

int run_eval(const TrainArgs& a) {
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

VerbRun define_train(CLI::App& verb) {
  auto a = std::make_shared<TrainArgs>();
  define_recipe_options(verb, *a);
  verb.add_option("--resume", a->resume,
                  "latest: continue the run in checkpoint.run_dir from its newest checkpoint;\n"
                  "PATH: from that checkpoint file; auto: latest when the run_dir has a checkpoint,\n"
                  "else a fresh start (requeued jobs)")
      ->type_name("latest|auto|PATH");
  verb.add_option("--stop-at", a->stop_at, "stop after step K with a checkpoint (a job time limit); resume later\n"
                  "(0: run to train.steps)")
      ->type_name("K")
      ->check(farthing::cli::whole_number_at_least(0));
  verb.add_flag("--quiet", a->quiet, "no progress lines (metrics.jsonl is still written)");
  verb.footer(
      "Writes checkpoint.run_dir/{recipe.yaml, metrics.jsonl, checkpoints/step_NNNNNNNN.h5, checkpoints/latest}.\n"
      "One train at a time per run_dir: it holds run_dir/train.lock while it runs (eval may read meanwhile).\n"
      "SIGTERM or SIGUSR1 (Slurm: --signal=USR1@120) to any rank: every rank finishes its step, saves a\n"
      "checkpoint and exits with status 75; a second signal exits at once, keeping the previous checkpoint.\n"
      "Under mpirun every rank runs the same command: mpirun -np 2 farthing train RECIPE");
  return [a] { return run_train(*a); };
}

VerbRun define_eval(CLI::App& verb) {
  auto a = std::make_shared<TrainArgs>();
  define_recipe_options(verb, *a);
  verb.add_option("--checkpoint", a->checkpoint,
                  "latest (in checkpoint.run_dir) or a checkpoint path (default: the recipe's model)")
      ->type_name("latest|PATH");
  verb.add_option("--batches", a->batches, "micro-batches to evaluate (default: train.eval_batches; 0: all)")
      ->type_name("N")
      ->check(farthing::cli::whole_number_at_least(0));
  // Taken as train takes it, so that a train command line's options carry over; eval prints no
  // progress lines either way.
  verb.add_flag("--quiet", a->quiet, "no progress lines (as for train; eval prints none)");
  verb.footer("Mean loss of the model on the recipe's held-out data (data.eval, or the eval_fraction split of\n"
              "data.train), with the weights of a training checkpoint or the recipe's model.");
  return [a] { return run_eval(*a); };
}

const VerbRegistration kTrain{"train", "fine-tune a model as a recipe says", define_train};
const VerbRegistration kEval{"eval", "held-out loss of a checkpoint or model", define_eval};

}  // namespace
