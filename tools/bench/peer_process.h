// peer_process.h — a child process the benchmarks talk to line by line (its stdin and stdout
// are pipes), so a peer such as a PyTorch training step can stay loaded between measurements
// and be timed in turns with farthing's own steps: both sides then see the same machine state,
// which a shared VM whose speed drifts over minutes would otherwise skew.
// Relies on: POSIX fork/exec/pipe. Used by: tools/bench/bench_train.cpp. Not a test.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <string>
#include <vector>

namespace farthing::bench {

class PeerProcess {
 public:
  // Starts argv[0] (looked up in PATH) with argv; its stderr is discarded.
  explicit PeerProcess(const std::vector<std::string>& argv);
  ~PeerProcess();  // closes its stdin (end of input) and waits for it
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  bool running() const { return pid_ > 0; }
  // Sends one line (a newline is appended); false if the peer is gone.
  bool send(const std::string& line);
  // The next line of the peer's output without its newline; false at end of output.
  bool receive(std::string* line);

 private:
  pid_t pid_ = -1;
  FILE* to_peer_ = nullptr;
  FILE* from_peer_ = nullptr;
};

}  // namespace farthing::bench
