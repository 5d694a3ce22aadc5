#pragma once
// The CPU backend's threads: one small pool that runs a loop split into fixed chunks.
//
// Determinism: ParallelFor cuts [0, count) into chunks of `grain` items whose boundaries depend
// only on count and grain, never on the thread count or on which thread takes which chunk. A body
// that writes only the items of its own chunk (and reduces in a fixed order inside it) therefore
// gives the same bits on every run and with any number of threads. The recompute-equivalence
// check compares gradients bitwise and relies on this.
//
//   count = 10, grain = 4:   [0 1 2 3] [4 5 6 7] [8 9]   three chunks, whatever the threads

#include <cstdint>
#include <functional>

namespace memplan {

// Environment variable that sets the CPU backend's thread count (a positive integer). Without it
// the backend uses the machine's hardware threads, at most kMaxDefaultCpuThreads.
inline constexpr const char* kCpuThreadsEnvironmentVariable = "MEMPLAN_CPU_THREADS";
// Cap on the default so a many-core CI runner does not spawn dozens of threads for the small
// tensors a reference backend runs; MEMPLAN_CPU_THREADS overrides it.
inline constexpr int kMaxDefaultCpuThreads = 8;

// The thread count the pool runs with; read once, on first use.
int CpuThreadCount();

// Runs body(begin, end) for every chunk [begin, end) of [0, count) with end - begin == grain
// (the last chunk may be shorter), on the pool's threads and the caller's. Returns when all
// chunks are done. Nested calls, calls from several threads at once and single-chunk loops run
// inline on the calling thread, chunk by chunk, with the same boundaries.
// REQUIRES: grain > 0; body must not throw.
void ParallelFor(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// A grain for an elementwise loop of `count` items costing about `cost_per_item` simple
// floating-point operations each: large enough that a chunk outweighs handing it to a thread.
// Depends only on its arguments, so the chunking stays fixed.
int64_t ElementwiseGrain(int64_t cost_per_item = 1);

}  // namespace memplan
