// roll_call.h — which ranks of a communicator are still there, asked when a wait has run out.
//
// A timed-out collective or save knows only that it is still waiting, not for whom: MPI's
// blocking calls do not say which peer has not arrived, and a silent peer (its node cut off, its
// process hung) looks the same as a slow one. So every rank runs a responder on a communicator
// of its own (a duplicate: its messages never match the job's) that answers a query with the
// rank's progress, here the number of collectives it has issued on the communicator. A rank whose
// wait ran out asks every other rank and waits a short, fixed grace for answers: a rank that does
// not answer is silent (lost, hung or cut off); one that answers with less progress than the
// wait needs has not arrived either, but is alive elsewhere.
//
// The responder is a thread (it must answer while this rank's own threads are blocked in MPI),
// so it needs MPI_THREAD_MULTIPLE; without it there is no roll call, and the report says that
// MPI cannot say which ranks did not arrive. The responder polls its one pending receive: every
// 5 ms after a query, slowing to every 100 ms while none comes (no busy wait; ten wake-ups a
// second for the whole run), which still answers well within the asker's grace.
// Relies on: MPI (Open MPI), framework/core.
// Tested by: tests/dist/test_fault.sh (a hung rank named by its peers), tests/dist/multihost/
// test_multihost.sh (faults a' and e: the ranks of a lost or cut-off host named).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace farthing {

struct RollCallAnswer {
  int rank = 0;
  bool answered = false;
  int64_t progress = 0;  // what the rank reported (meaningful when answered)
};

class RollCall {
 public:
  // Collective over parent (duplicates it). progress is read on the responder's thread.
  RollCall(MPI_Comm parent, std::function<int64_t()> progress);
  ~RollCall();
  RollCall(const RollCall&) = delete;
  RollCall& operator=(const RollCall&) = delete;

  // Asks every rank (this one answers for itself) and waits up to grace_s for the answers.
  // Never blocks longer: a silent rank's query and answer are left behind (the caller ends the job).
  std::vector<RollCallAnswer> ask(double grace_s);

 private:
  void respond();

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  std::function<int64_t()> progress_;
  std::atomic<bool> stopping_{false};
  std::mutex ask_mutex_;  // one roll call at a time from this rank
  std::thread responder_;
};

// The ranks that did not arrive at a wait that needs progress `needed` from every rank, in one
// clause for an error line: "ranks 2, 3 did not answer a roll call within 2 s (lost, hung or cut
// off)", "rank 1 answered but has issued only 345 collectives", or that all have arrived.
std::string describe_absent_ranks(const std::vector<RollCallAnswer>& answers, int64_t needed, double grace_s);

// The clause for a rank that cannot hold a roll call (MPI without MPI_THREAD_MULTIPLE).
std::string no_roll_call_clause();

}  // namespace farthing
