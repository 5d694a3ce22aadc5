#pragma once
// A thin, error-checked CUPTI Activity API collector. It enables the activity kinds attribution
// needs, hands CUPTI buffers, converts every completed record into the plain records of
// profiler/activity_records.h, and lets the executor bracket each program step (and the device
// allocator each of its own cudaMalloc/cudaFree calls) with an external correlation id.
//
// Kinds enabled: MEMORY2, CONCURRENT_KERNEL, MEMCPY, MEMSET, EXTERNAL_CORRELATION, plus RUNTIME
// and DRIVER, without which CUPTI emits no external-correlation records (those are attached to
// API records); the API records themselves are dropped on conversion.
//
// Every CUPTI call is checked; a failure becomes an Error naming the call and CUPTI's message,
// e.g. "cuptiActivityEnable(MEMORY2) failed: CUPTI_ERROR_NOT_INITIALIZED". Errors inside CUPTI's
// buffer callback cannot be returned there; the first is kept and returned by Stop().
//
// CUPTI's activity buffers are process-wide, so at most one collector is active at a time.
//
// Usage:
//   MEMPLAN_TRY(auto collector, CuptiCollector::Start());
//   for each step execution: collector->Push(CorrelationDomain::kStep, id); run; Pop(...)
//   MEMPLAN_TRY(ActivityTrace trace, collector->Stop());

#include <cstddef>
#include <cstdint>
#include <memory>

#include "graph/expected.h"
#include "profiler/activity_records.h"

namespace memplan::profiler {

struct CuptiCollectorOptions {
  // Size of each activity buffer handed to CUPTI; CUPTI drops records (counted in
  // ActivityTrace::dropped_records) when it runs out before a buffer completes.
  size_t buffer_bytes = size_t{8} << 20;
};

class CuptiCollector {
 public:
  // Registers the buffer callbacks and enables the kinds. Errors: another collector is active, or
  // any CUPTI call fails (no CUDA driver, CUPTI already in use by another tool).
  static Expected<std::unique_ptr<CuptiCollector>> Start(const CuptiCollectorOptions& options = {});
  // Stops tracing if Stop() was not called (the records are discarded).
  ~CuptiCollector();
  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

  // Enters / leaves an external-correlation region on the calling thread. Pop checks that the id
  // CUPTI pops is `external_id`, so unbalanced regions are caught where they happen.
  Status Push(CorrelationDomain domain, uint64_t external_id);
  Status Pop(CorrelationDomain domain, uint64_t external_id);

  // CUPTI's clock (nanoseconds), the one every record is stamped with.
  static Expected<uint64_t> Timestamp();

  // Synchronizes the device, flushes every buffer, disables the kinds and returns all records in
  // delivery order. The collector is inactive afterwards.
  Expected<ActivityTrace> Stop();

 private:
  CuptiCollector() = default;
  bool active_ = false;
};

}  // namespace memplan::profiler
