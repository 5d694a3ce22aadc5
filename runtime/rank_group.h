#pragma once
// N data-parallel ranks simulated in one process (`memplan verify --gpus N`). Each rank is an
// Executor of the same per-rank program on its own backend and its own thread; the ranks meet at
// every kCollective step, where each hands in its tensors and reads everyone's. The group is the
// meeting place only: what a collective computes from the contributions is
// runtime/collective_steps.h.
//
// This validates the per-rank program (what each rank holds, when it gathers and reduces, that
// the shards add up to the unsharded step), not a distributed engine: there is no network, no
// NCCL, no overlap, and every rank runs every collective in program order.
//
// Usage (one thread per rank):
//   RankGroup group(4);
//   Expected<const RankGroup::Contributions*> all = group.Exchange(rank, mine);
//   ... read (*all)[other_rank] ...
//   group.Done(rank);  // before the next Exchange; lets the group reuse its slots
// A rank that fails calls Abort(), which wakes every waiting rank with an error.

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "graph/expected.h"

namespace memplan {

class RankGroup {
 public:
  // One rank's tensors for one collective (host floats, in the step's buffer order).
  using Contribution = std::vector<std::vector<float>>;
  using Contributions = std::vector<Contribution>;  // by rank

  // REQUIRES: ranks >= 1.
  explicit RankGroup(int64_t ranks);
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  int64_t ranks() const { return ranks_; }

  // Hands in `mine` and blocks until every rank has handed in its own for this round. The result
  // stays valid until this rank calls Done. Errors: the group was aborted.
  Expected<const Contributions*> Exchange(int64_t rank, Contribution mine);
  // This rank has read the round's contributions; blocks until every rank has.
  Status Done(int64_t rank);
  // Stops the group: every rank waiting, now or later, gets an error naming `why`.
  void Abort(const std::string& why);

 private:
  Error AbortedError() const;

  const int64_t ranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  Contributions slots_;
  int64_t handed_in_ = 0;
  int64_t done_ = 0;
  uint64_t round_ = 0;  // counts completed rounds (after every rank's Done)
  bool aborted_ = false;
  std::string abort_reason_;
};

}  // namespace memplan
