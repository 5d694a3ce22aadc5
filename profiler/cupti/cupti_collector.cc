#include "profiler/cupti/cupti_collector.h"

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "profiler/cupti/cupti_records.h"

namespace memplan::profiler {
namespace {

// CUPTI requires activity buffers aligned to 8 bytes.
constexpr size_t kBufferAlignment = 8;

struct EnabledKind {
  CUpti_ActivityKind kind;
  const char* name;
};

// The order they are enabled in (and disabled in reverse).
constexpr EnabledKind kKinds[] = {
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME"},
    {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER"},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION"},
    {CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2"},
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
};

std::string CuptiMessage(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  }
  return text;
}

Status CheckCupti(CUptiResult result, const std::string& call) {
  if (result == CUPTI_SUCCESS) return OkStatus();
  return MakeError(call + " failed: " + CuptiMessage(result));
}

// Where CUPTI's buffer callbacks (plain C functions without a user pointer) deliver records.
struct Sink {
  std::mutex mutex;
  bool active = false;
  size_t buffer_bytes = 0;
  ActivityTrace trace;
  std::optional<Error> first_error;
};

Sink& GlobalSink() {
  static Sink sink;
  return sink;
}

void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_num_records) {
  Sink& sink = GlobalSink();
  size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(sink.mutex);
    bytes = sink.buffer_bytes;
  }
  // Returning a null buffer makes CUPTI drop records, which it counts; nothing else to do here.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, bytes));
  *size = *buffer != nullptr ? bytes : 0;
  *max_num_records = 0;  // as many as fit
}

void CUPTIAPI OnBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                size_t /*size*/, size_t valid_size) {
  Sink& sink = GlobalSink();
  std::lock_guard<std::mutex> lock(sink.mutex);
  CUpti_Activity* record = nullptr;
  while (valid_size > 0) {
    const CUptiResult result = cuptiActivityGetNextRecord(buffer, valid_size, &record);
    if (result == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // the end of the buffer
    if (result != CUPTI_SUCCESS) {
      if (!sink.first_error) {
        sink.first_error = CheckCupti(result, "cuptiActivityGetNextRecord").error();
      }
      break;
    }
    AppendRecord(record, sink.trace);
  }
  size_t dropped = 0;
  const CUptiResult result = cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped);
  if (result == CUPTI_SUCCESS) {
    sink.trace.dropped_records += dropped;
  } else if (!sink.first_error) {
    sink.first_error = CheckCupti(result, "cuptiActivityGetNumDroppedRecords").error();
  }
  std::free(buffer);
}

// Disables the first `count` kinds of kKinds; returns the first failure.
Status DisableKinds(size_t count) {
  Status status = OkStatus();
  for (size_t i = count; i-- > 0;) {
    Status disabled = CheckCupti(cuptiActivityDisable(kKinds[i].kind),
                                 std::string("cuptiActivityDisable(") + kKinds[i].name + ")");
    if (status.ok() && !disabled.ok()) status = disabled;
  }
  return status;
}

}  // namespace

Expected<std::unique_ptr<CuptiCollector>> CuptiCollector::Start(
    const CuptiCollectorOptions& options) {
  Sink& sink = GlobalSink();
  {
    std::lock_guard<std::mutex> lock(sink.mutex);
    if (sink.active) return MakeError("a CUPTI collector is already active in this process");
    sink.active = true;
    sink.buffer_bytes = options.buffer_bytes;
    sink.trace = ActivityTrace{};
    sink.first_error.reset();
  }
  auto fail = [&](Error error) -> Expected<std::unique_ptr<CuptiCollector>> {
    std::lock_guard<std::mutex> lock(sink.mutex);
    sink.active = false;
    return error;
  };
  Status registered =
      CheckCupti(cuptiActivityRegisterCallbacks(OnBufferRequested, OnBufferCompleted),
                 "cuptiActivityRegisterCallbacks");
  if (!registered.ok()) return fail(registered.error());
  for (size_t i = 0; i < std::size(kKinds); ++i) {
    Status enabled = CheckCupti(cuptiActivityEnable(kKinds[i].kind),
                                std::string("cuptiActivityEnable(") + kKinds[i].name + ")");
    if (!enabled.ok()) {
      (void)DisableKinds(i);  // best effort; the enable failure is the error to report
      return fail(enabled.error());
    }
  }
  std::unique_ptr<CuptiCollector> collector(new CuptiCollector());
  collector->active_ = true;
  return collector;
}

CuptiCollector::~CuptiCollector() {
  if (!active_) return;
  (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  (void)DisableKinds(std::size(kKinds));
  Sink& sink = GlobalSink();
  std::lock_guard<std::mutex> lock(sink.mutex);
  sink.trace = ActivityTrace{};
  sink.active = false;
}

Status CuptiCollector::Push(CorrelationDomain domain, uint64_t external_id) {
  return CheckCupti(cuptiActivityPushExternalCorrelationId(ExternalKindOf(domain), external_id),
                    "cuptiActivityPushExternalCorrelationId(" + std::to_string(external_id) + ")");
}

Status CuptiCollector::Pop(CorrelationDomain domain, uint64_t external_id) {
  uint64_t popped = 0;
  MEMPLAN_RETURN_IF_ERROR(
      CheckCupti(cuptiActivityPopExternalCorrelationId(ExternalKindOf(domain), &popped),
                 "cuptiActivityPopExternalCorrelationId(" + std::to_string(external_id) + ")"));
  if (popped != external_id) {
    return MakeError("cuptiActivityPopExternalCorrelationId: popped external id " +
                     std::to_string(popped) + " where " + std::to_string(external_id) +
                     " was expected (unbalanced push/pop)");
  }
  return OkStatus();
}

Expected<uint64_t> CuptiCollector::Timestamp() {
  uint64_t now = 0;
  MEMPLAN_RETURN_IF_ERROR(CheckCupti(cuptiGetTimestamp(&now), "cuptiGetTimestamp"));
  return now;
}

Expected<ActivityTrace> CuptiCollector::Stop() {
  if (!active_) return MakeError("the CUPTI collector was already stopped");
  active_ = false;
  // Kernel records complete only when the kernels have; make sure they have.
  const cudaError_t synced = cudaDeviceSynchronize();
  Status flushed =
      CheckCupti(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  Status disabled = DisableKinds(std::size(kKinds));
  Sink& sink = GlobalSink();
  std::lock_guard<std::mutex> lock(sink.mutex);
  sink.active = false;
  ActivityTrace trace = std::move(sink.trace);
  sink.trace = ActivityTrace{};
  if (synced != cudaSuccess) {
    return MakeError(std::string("cudaDeviceSynchronize failed: ") + cudaGetErrorString(synced));
  }
  if (!flushed.ok()) return flushed.error();
  if (!disabled.ok()) return disabled.error();
  if (sink.first_error) return *sink.first_error;
  return trace;
}

}  // namespace memplan::profiler
