// stop_signals.cpp — see stop_signals.h.
#include "train/loop/stop_signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "framework/core/error.h"

namespace farthing::train {

namespace {

constexpr int kCaught[] = {SIGTERM, SIGUSR1};

// Lock-free atomics are the only state a handler may touch (besides write and _exit).
std::atomic<int> first_signal{0};
std::atomic<int> signals_received{0};
std::atomic<bool> installed{false};
struct sigaction previous[sizeof(kCaught) / sizeof(kCaught[0])];

void write_stderr(const char* text) {
  // write(2) is async-signal-safe; stdio is not. A short write only shortens the note.
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void on_stop_signal(int signal_number) {
  if (signals_received.fetch_add(1) == 0) {
    first_signal.store(signal_number);
    write_stderr(signal_number == SIGTERM
                     ? "farthing: SIGTERM received: finishing this step, then saving a checkpoint and exiting "
                       "(send it again to stop at once)\n"
                     : "farthing: SIGUSR1 received: finishing this step, then saving a checkpoint and exiting "
                       "(send it again to stop at once)\n");
    return;
  }
  write_stderr("farthing: a second stop signal: exiting at once; the previous checkpoint is kept\n");
  ::_exit(128 + signal_number);
}

int signal_from_name(const std::string& name) {
  if (name == "TERM" || name == "SIGTERM") return SIGTERM;
  if (name == "USR1" || name == "SIGUSR1") return SIGUSR1;
  FARTHING_FAIL("FARTHING_TRAIN_TEST_SIGNAL names signal '", name, "'; expected TERM or USR1");
}

}  // namespace

StopSignals::StopSignals() {
  FARTHING_CHECK(!installed.exchange(true), "StopSignals: only one instance at a time");
  first_signal.store(0);
  signals_received.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (int s : kCaught) sigaddset(&action.sa_mask, s);  // the handler never interrupts itself
  action.sa_flags = SA_RESTART;  // blocking reads and MPI waits carry on; the loop looks between steps
  for (size_t i = 0; i < std::size(kCaught); ++i) sigaction(kCaught[i], &action, &previous[i]);
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < std::size(kCaught); ++i) sigaction(kCaught[i], &previous[i], nullptr);
  installed.store(false);
}

int StopSignals::received() const { return first_signal.load(); }

void StopSignals::raise_test_signal_after_step(int64_t step, int rank) {
  const char* spec = std::getenv("FARTHING_TRAIN_TEST_SIGNAL");
  if (spec == nullptr || *spec == '\0') return;
  const char* rank_env = std::getenv("FARTHING_TRAIN_TEST_SIGNAL_RANK");
  if (rank != (rank_env != nullptr ? std::atoi(rank_env) : 0)) return;
  const std::string text = spec;
  const size_t colon = text.find(':');
  FARTHING_CHECK(colon != std::string::npos, "FARTHING_TRAIN_TEST_SIGNAL='", text, "'; expected STEP:NAME[:COUNT]");
  if (std::stoll(text.substr(0, colon)) != step) return;
  const std::string rest = text.substr(colon + 1);
  const size_t colon2 = rest.find(':');
  const int signal_number = signal_from_name(rest.substr(0, colon2));
  const int count = colon2 == std::string::npos ? 1 : std::atoi(rest.c_str() + colon2 + 1);
  for (int i = 0; i < count; ++i) ::raise(signal_number);
}

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGINT: return "SIGINT";
    default: return "signal " + std::to_string(signal_number);
  }
}

}  // namespace farthing::train
