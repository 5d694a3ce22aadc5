#pragma once
// Hand-written activity traces, shaped like what the CUPTI collector delivers for a tiny
// fc1 -> relu -> loss training step, with timestamps chosen so every attributed number can be
// derived by hand (the tests show the derivations).
//
// Step table (external id: step, phase):
//   1 load (load)   2 fc1 (forward)   3 relu (forward)   4 loss (forward, no node)
//   5 relu (backward)   6 fc1 (backward)   7 optimizer (optimizer)
//
// Device memory records, in time order (A..L allocator blocks, W a library workspace):
//   t=50   release 0x7777            corr 5   (memory older than the trace: ignored)
//   t=100  +A 0x1000  1000 B          corr 10  step 1        live  1000
//   t=150  +pinned host 1 MiB         corr 12  step 1        (not device memory: ignored)
//   t=200  +B 0x2000  4000 B          corr 20  step 2        live  5000
//   t=210  +W 0x9000   512 B library  corr 21  step 2        live  5512
//   t=300  +C 0x3000  4000 B          corr 30  step 3        live  9512
//   t=310  +S 0x4000   256 B          corr 31  step 3        live  9768  <- peak
//   t=320  -S                         corr 32  step 3        live  9512
//   t=330  -B                         corr 33  step 3        live  5512
//   t=400  +L 0x5000     4 B          corr 40  step 4        live  5516
//   t=500  +G 0x6000  4000 B          corr 50  step 5        live  9516  (backward boundary)
//   t=510  -C                         corr 51  step 5        live  5516
//   t=520  -L                         corr 52  step 5        live  5512
//   t=600  -G                         corr 60  step 6        live  1512
//   t=610  -A                         corr 61  step 6        live   512
//
// Device activity (ns): memcpy HtoD 900-950 (step 1); kernels fc1 1000-1600 (step 2),
// relu 1600-1700 (step 3), relu_bwd 2000-2150 (step 5), memset 1950-1960 (step 5),
// fc1_dgrad 2200-3100 and fc1_wgrad 3100-3300 (step 6), adam 3400-3500 (step 7), and an
// unattributed kernel 5000-5050 (corr 99, pushed by nobody).

#include <cstdint>
#include <string>

#include "profiler/activity_records.h"
#include "profiler/step_table.h"

namespace memplan::profiler::testing {

inline ProfiledStep TableEntry(uint64_t external_id, std::string name, std::string node,
                               StepPhase phase, int64_t micro_batch = 0) {
  ProfiledStep step;
  step.external_id = external_id;
  step.step = static_cast<LogicalTime>(external_id);
  step.name = std::move(name);
  step.node = std::move(node);
  step.phase = phase;
  step.micro_batch = micro_batch;
  return step;
}

inline StepTable TinyStepTable() {
  return {TableEntry(1, "load", "", StepPhase::kLoad),
          TableEntry(2, "fc1", "fc1", StepPhase::kForward),
          TableEntry(3, "relu", "relu", StepPhase::kForward),
          TableEntry(4, "loss", "", StepPhase::kForward),
          TableEntry(5, "relu", "relu", StepPhase::kBackward),
          TableEntry(6, "fc1", "fc1", StepPhase::kBackward),
          TableEntry(7, "optimizer", "", StepPhase::kOptimizer)};
}

inline MemoryRecord Alloc(uint64_t address, uint64_t bytes, uint64_t t, uint32_t corr,
                          DeviceMemoryKind kind = DeviceMemoryKind::kDevice) {
  MemoryRecord r;
  r.operation = MemoryRecord::Operation::kAllocation;
  r.memory_kind = kind;
  r.address = address;
  r.bytes = bytes;
  r.timestamp_ns = t;
  r.correlation_id = corr;
  return r;
}

inline MemoryRecord Release(uint64_t address, uint64_t bytes, uint64_t t, uint32_t corr) {
  MemoryRecord r = Alloc(address, bytes, t, corr);
  r.operation = MemoryRecord::Operation::kRelease;
  return r;
}

// A kernel, memcpy or memset record with its DeviceActivity part (the interval on the device, the
// launching call's correlation id, the stream) filled in; the caller sets what is its own.
template <typename Record>
Record Activity(uint64_t start, uint64_t end, uint32_t corr, uint32_t stream = 7) {
  Record r;
  r.start_ns = start;
  r.end_ns = end;
  r.correlation_id = corr;
  r.stream_id = stream;
  return r;
}

inline KernelRecord Kernel(std::string name, uint64_t start, uint64_t end, uint32_t corr,
                           uint32_t stream = 7) {
  auto k = Activity<KernelRecord>(start, end, corr, stream);
  k.name = std::move(name);
  return k;
}

inline MemcpyRecord Memcpy(MemcpyKind kind, uint64_t bytes, uint64_t start, uint64_t end,
                           uint32_t corr) {
  auto copy = Activity<MemcpyRecord>(start, end, corr);
  copy.copy_kind = kind;
  copy.bytes = bytes;
  return copy;
}

inline MemsetRecord Memset(uint64_t bytes, uint64_t start, uint64_t end, uint32_t corr) {
  auto set = Activity<MemsetRecord>(start, end, corr);
  set.bytes = bytes;
  return set;
}

inline ExternalCorrelationRecord StepCorrelation(uint64_t external_id, uint32_t corr) {
  return {CorrelationDomain::kStep, external_id, corr};
}
inline ExternalCorrelationRecord AllocatorCorrelation(uint32_t corr) {
  return {CorrelationDomain::kAllocator, 1, corr};
}

inline ActivityTrace TinyTrace() {
  ActivityTrace trace;
  // Records arrive per buffer, not in time order: the release at t=50 comes late on purpose.
  trace.memory = {
      Alloc(0x1000, 1000, 100, 10),   Alloc(0xAAAA, 1 << 20, 150, 12, DeviceMemoryKind::kPinned),
      Alloc(0x2000, 4000, 200, 20),   Alloc(0x9000, 512, 210, 21),
      Alloc(0x3000, 4000, 300, 30),   Alloc(0x4000, 256, 310, 31),
      Release(0x4000, 256, 320, 32),  Release(0x2000, 4000, 330, 33),
      Alloc(0x5000, 4, 400, 40),      Alloc(0x6000, 4000, 500, 50),
      Release(0x3000, 4000, 510, 51), Release(0x5000, 4, 520, 52),
      Release(0x6000, 4000, 600, 60), Release(0x1000, 1000, 610, 61),
      Release(0x7777, 64, 50, 5)};
  trace.kernels = {Kernel("fc1_gemm", 1000, 1600, 22),     Kernel("relu", 1600, 1700, 34),
                   Kernel("relu_bwd", 2000, 2150, 53),     Kernel("fc1_dgrad", 2200, 3100, 62),
                   Kernel("fc1_wgrad", 3100, 3300, 63, 8), Kernel("adam", 3400, 3500, 70),
                   Kernel("stray", 5000, 5050, 99)};
  trace.memcpys = {Memcpy(MemcpyKind::kHostToDevice, 1000, 900, 950, 11)};
  trace.memsets = {Memset(4000, 1950, 1960, 54)};

  const std::pair<uint64_t, uint32_t> step_of_corr[] = {
      {1, 10}, {1, 11}, {1, 12}, {2, 20}, {2, 21}, {2, 22}, {3, 30}, {3, 31},
      {3, 32}, {3, 33}, {3, 34}, {4, 40}, {5, 50}, {5, 51}, {5, 52}, {5, 53},
      {5, 54}, {6, 60}, {6, 61}, {6, 62}, {6, 63}, {7, 70}};
  for (auto [external_id, corr] : step_of_corr) {
    trace.correlations.push_back(StepCorrelation(external_id, corr));
  }
  for (uint32_t corr : {10, 20, 30, 31, 32, 33, 40, 50, 51, 52, 60, 61}) {
    trace.correlations.push_back(AllocatorCorrelation(corr));
  }
  return trace;
}

}  // namespace memplan::profiler::testing
