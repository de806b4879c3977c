// peer_process.cpp — see peer_process.h.
#include "tools/bench/peer_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace farthing::bench {

PeerProcess::PeerProcess(const std::vector<std::string>& argv) {
  int in[2], out[2];  // in: we write, the peer reads; out: the peer writes, we read
  if (argv.empty() || pipe(in) != 0) return;
  // NOTE: a peer that dies would raise SIGPIPE on our next write; the write reports it instead.
  signal(SIGPIPE, SIG_IGN);
  if (pipe(out) != 0) {
    close(in[0]), close(in[1]);
    return;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDERR_FILENO);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in[0]), close(out[1]);
  if (pid < 0) {
    close(in[1]), close(out[0]);
    return;
  }
  pid_ = pid;
  to_peer_ = fdopen(in[1], "w");
  from_peer_ = fdopen(out[0], "r");
}

PeerProcess::~PeerProcess() {
  if (to_peer_) std::fclose(to_peer_);
  if (from_peer_) std::fclose(from_peer_);
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

bool PeerProcess::send(const std::string& line) {
  if (!to_peer_) return false;
  return std::fprintf(to_peer_, "%s\n", line.c_str()) > 0 && std::fflush(to_peer_) == 0;
}

bool PeerProcess::receive(std::string* line) {
  if (!from_peer_) return false;
  line->clear();
  char buf[512];
  while (std::fgets(buf, sizeof buf, from_peer_)) {
    *line += buf;
    if (!line->empty() && line->back() == '\n') {
      line->pop_back();
      return true;
    }
  }
  return !line->empty();
}

}  // namespace farthing::bench
