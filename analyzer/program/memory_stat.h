#pragma once
// One memory counter (PyTorch's c10 `Stat {current, peak, allocated, freed}`): the accounting
// primitive of the program walker (analyzer/program/program_walker.h) and of the runtime's counting
// allocators, so "live", "peak" and "allocated" mean the same thing wherever they are counted.

#include <algorithm>
#include <cstdint>

#include "graph/expected.h"

namespace memplan {

struct MemoryStat {
  int64_t current = 0;    // live bytes now
  int64_t peak = 0;       // the maximum of `current` since construction or ResetPeak
  int64_t allocated = 0;  // bytes ever allocated (cumulative)
  int64_t freed = 0;      // bytes ever freed (cumulative)

  // REQUIRES: bytes >= 0.
  void Allocate(int64_t bytes) {
    MEMPLAN_CHECK(bytes >= 0);
    current += bytes;
    allocated += bytes;
    peak = std::max(peak, current);
  }
  // Live bytes never go negative: a free of more than is live is a bug in the caller.
  void Free(int64_t bytes) {
    MEMPLAN_CHECK(bytes >= 0 && bytes <= current);
    current -= bytes;
    freed += bytes;
  }
  // Starts a new measurement window: the peak drops to what is live now.
  void ResetPeak() { peak = current; }
};

}  // namespace memplan
