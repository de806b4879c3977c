// roll_call.cpp — see roll_call.h.
#include "framework/dist/roll_call.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>

#include "framework/core/error.h"
#include "framework/dist/mpi_check.h"

namespace farthing {

namespace {

constexpr int kQueryTag = 1;
constexpr int kAnswerTag = 2;
constexpr auto kPollInterval = std::chrono::milliseconds(5);
// The responder's poll slows from kPollInterval to this while no query comes: a roll call is
// rare (a wait ran out), and its 2 s grace leaves room for a 100 ms answer, while a poll every
// 5 ms for the whole run would wake every rank 200 times a second, taking MPI's progress lock
// beside the communicator's transfers each time.
constexpr auto kIdlePollInterval = std::chrono::milliseconds(100);

std::string rank_list(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

}  // namespace

RollCall::RollCall(MPI_Comm parent, std::function<int64_t()> progress) : progress_(std::move(progress)) {
  FARTHING_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
  FARTHING_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  FARTHING_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  FARTHING_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  responder_ = std::thread([this] { respond(); });
}

RollCall::~RollCall() {
  stopping_ = true;
  responder_.join();
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Not freed while an error unwinds: a roll call may have left requests on it.
  if (!finalized && std::uncaught_exceptions() == 0) MPI_Comm_free(&comm_);
}

void RollCall::respond() {
  int64_t query = 0;
  MPI_Request pending = MPI_REQUEST_NULL;
  // Answers stay alive until their sends complete; an asker that went silent leaves its answer
  // here (freed with the object).
  std::deque<int64_t> answers;
  std::vector<MPI_Request> sends;
  auto interval = kPollInterval;
  while (!stopping_) {
    if (pending == MPI_REQUEST_NULL &&
        MPI_Irecv(&query, 1, MPI_INT64_T, MPI_ANY_SOURCE, kQueryTag, comm_, &pending) != MPI_SUCCESS) {
      return;  // MPI refuses (finalising): nothing left to answer
    }
    int done = 0;
    MPI_Status status;
    if (MPI_Test(&pending, &done, &status) != MPI_SUCCESS) return;
    if (done) {
      answers.push_back(progress_());
      MPI_Request send = MPI_REQUEST_NULL;
      if (MPI_Isend(&answers.back(), 1, MPI_INT64_T, status.MPI_SOURCE, kAnswerTag, comm_, &send) == MPI_SUCCESS) {
        sends.push_back(send);
      }
      interval = kPollInterval;  // more queries follow one (every waiting rank asks)
      continue;
    }
    bool sending = false;
    for (MPI_Request& send : sends) {
      int sent = 0;
      if (send != MPI_REQUEST_NULL) MPI_Test(&send, &sent, MPI_STATUS_IGNORE);
      sending = sending || send != MPI_REQUEST_NULL;
    }
    std::this_thread::sleep_for(interval);
    // An answer in flight keeps the fast poll (its send progresses here); otherwise slow down.
    interval = sending ? kPollInterval : std::min(interval * 2, kIdlePollInterval);
  }
  if (pending != MPI_REQUEST_NULL) {
    MPI_Cancel(&pending);
    MPI_Wait(&pending, MPI_STATUS_IGNORE);  // a cancelled receive completes locally
  }
}

std::vector<RollCallAnswer> RollCall::ask(double grace_s) {
  std::lock_guard lock(ask_mutex_);
  std::vector<RollCallAnswer> answers(size_t(size_), RollCallAnswer{});
  // On the heap: a silent rank's receive still points into it when the roll call gives up.
  auto values = std::make_unique<std::vector<int64_t>>(size_t(size_), 0);
  std::vector<MPI_Request> receives(size_t(size_), MPI_REQUEST_NULL);
  static const int64_t kQuery = 0;
  for (int r = 0; r < size_; ++r) {
    answers[size_t(r)].rank = r;
    if (r == rank_) {
      answers[size_t(r)] = {r, true, progress_()};
      continue;
    }
    MPI_Request query = MPI_REQUEST_NULL;
    if (MPI_Irecv(&(*values)[size_t(r)], 1, MPI_INT64_T, r, kAnswerTag, comm_, &receives[size_t(r)]) != MPI_SUCCESS ||
        MPI_Isend(&kQuery, 1, MPI_INT64_T, r, kQueryTag, comm_, &query) != MPI_SUCCESS) {
      receives[size_t(r)] = MPI_REQUEST_NULL;
      continue;  // counted as not answering
    }
    MPI_Request_free(&query);  // its buffer is static; a silent rank never takes it
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  for (;;) {
    bool waiting = false;
    for (int r = 0; r < size_; ++r) {
      MPI_Request& receive = receives[size_t(r)];
      if (receive == MPI_REQUEST_NULL) continue;
      int done = 0;
      if (MPI_Test(&receive, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        receive = MPI_REQUEST_NULL;
        continue;
      }
      if (done) {
        answers[size_t(r)] = {r, true, (*values)[size_t(r)]};
      } else {
        waiting = true;
      }
    }
    if (!waiting || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  // A receive still pending may yet be written into: its buffer is left behind, not freed (the
  // caller is about to end the job).
  for (const MPI_Request& receive : receives) {
    if (receive != MPI_REQUEST_NULL) {
      static_cast<void>(values.release());
      break;
    }
  }
  return answers;
}

std::string describe_absent_ranks(const std::vector<RollCallAnswer>& answers, int64_t needed, double grace_s) {
  std::vector<int> silent, behind, present;
  std::string behind_detail;
  for (const RollCallAnswer& a : answers) {
    if (!a.answered) {
      silent.push_back(a.rank);
    } else if (a.progress < needed) {
      behind.push_back(a.rank);
      behind_detail += error_detail::concat(behind_detail.empty() ? "" : ", ", a.rank, ": ", a.progress);
    } else {
      present.push_back(a.rank);
    }
  }
  std::string text;
  if (!silent.empty()) {
    text = error_detail::concat(rank_list(silent), " did not arrive and did not answer a roll call within ", grace_s,
                                " s (lost, hung or cut off)");
  }
  if (!behind.empty()) {
    text += error_detail::concat(text.empty() ? "" : "; ", rank_list(behind),
                                 " did not arrive but answered (collectives issued, of the ", needed,
                                 " needed: ", behind_detail, ")");
  }
  if (text.empty()) return "every rank answered a roll call as arrived (the wait is in MPI itself)";
  return text;
}

std::string no_roll_call_clause() {
  return "MPI cannot say which ranks did not arrive (no roll call without MPI_THREAD_MULTIPLE)";
}

}  // namespace farthing
