// stop_signals.h — graceful preemption of a training run. Clusters announce the end of
// a job with a signal: Slurm sends SIGTERM at the time limit or on preemption, and SIGUSR1 (or
// another signal) `--signal=USR1@SECONDS` before it. On the first SIGTERM or SIGUSR1 the trainer
// finishes the step it is in, saves a checkpoint and exits with kExitPreempted; every rank stops
// after the same step, because the ranks agree on "stop" after each step (one integer max
// all-reduce), so the signal may reach any one rank. A second signal ends the process at once
// (exit 128 + the signal's number): a save under way is abandoned as a crash would abandon it,
// and the previous checkpoint and `latest` stay intact (saves are written to a temporary file
// and renamed, framework/ckpt/h5_checkpoint_dir.h).
// Relies on: POSIX sigaction. Tested by: tests/train/loop/test_train_preempt.sh.
#pragma once

#include <cstdint>
#include <string>

namespace farthing::train {

// The exit status of a run stopped by a signal after saving: EX_TEMPFAIL of sysexits.h,
// "try again later". A job script can requeue on it and continue with `--resume latest`.
constexpr int kExitPreempted = 75;

// While an instance lives, SIGTERM and SIGUSR1 are caught as above; its destructor puts back
// the handlers that were there before. One instance at a time per process.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first signal received since construction (SIGTERM, SIGUSR1), or 0.
  int received() const;

  // Test hook: FARTHING_TRAIN_TEST_SIGNAL=STEP:NAME[:COUNT] (NAME TERM or USR1) raises that
  // signal COUNT times (default 1) in this process right after optimizer step STEP, on rank
  // FARTHING_TRAIN_TEST_SIGNAL_RANK (default 0): the real handler then runs, at a known step.
  static void raise_test_signal_after_step(int64_t step, int rank);
};

// "SIGTERM", "SIGUSR1", ... for messages.
std::string signal_name(int signal_number);

}  // namespace farthing::train
