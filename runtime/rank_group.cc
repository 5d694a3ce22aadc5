#include "runtime/rank_group.h"

#include <utility>

namespace memplan {

RankGroup::RankGroup(int64_t ranks) : ranks_(ranks), slots_(static_cast<size_t>(ranks)) {
  MEMPLAN_CHECK(ranks >= 1) << "a rank group needs a rank";
}

Error RankGroup::AbortedError() const {
  return MakeError("another rank stopped: " + abort_reason_);
}

// A round has two barriers: every rank hands in (then all read the slots), every rank is done
// (then the slots may be overwritten by the next round). `round_` tells a waiter its round ended
// even when a fast rank has already started the next one.
Expected<const RankGroup::Contributions*> RankGroup::Exchange(int64_t rank, Contribution mine) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_) return AbortedError();
  slots_[static_cast<size_t>(rank)] = std::move(mine);
  if (++handed_in_ == ranks_) changed_.notify_all();
  changed_.wait(lock, [&] { return aborted_ || handed_in_ == ranks_; });
  if (aborted_) return AbortedError();
  return &slots_;
}

Status RankGroup::Done(int64_t rank) {
  (void)rank;
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_) return AbortedError();
  const uint64_t round = round_;
  if (++done_ == ranks_) {
    handed_in_ = 0;
    done_ = 0;
    ++round_;
    changed_.notify_all();
    return OkStatus();
  }
  changed_.wait(lock, [&] { return aborted_ || round_ != round; });
  if (aborted_) return AbortedError();
  return OkStatus();
}

void RankGroup::Abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) return;
    aborted_ = true;
    abort_reason_ = why;
  }
  changed_.notify_all();
}

}  // namespace memplan
