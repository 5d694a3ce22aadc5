#include "profiler/cupti/cupti_records.h"

#include <cstring>

namespace memplan::profiler {
namespace {

DeviceMemoryKind ConvertMemoryKind(uint32_t kind) {
  // CUpti_ActivityMemoryKind and DeviceMemoryKind share values 0..7; anything newer is unknown.
  return kind <= static_cast<uint32_t>(DeviceMemoryKind::kManagedStatic)
             ? static_cast<DeviceMemoryKind>(kind)
             : DeviceMemoryKind::kUnknown;
}

template <class Record>
Record CopyRecord(const void* bytes) {
  Record record;
  std::memcpy(&record, bytes, sizeof record);
  return record;
}

// An `Out` record with the CUDA ids every record memplan keeps carries (correlation, device,
// stream) copied from `record`: the same CUPTI field names in the memory, kernel, memcpy and
// memset structs. The caller copies the fields particular to its kind.
template <class Out, class Record>
Out WithCudaIds(const Record& record) {
  Out out;
  out.correlation_id = record.correlationId;
  out.device_id = record.deviceId;
  out.stream_id = record.streamId;
  return out;
}

// The same with the rest of the DeviceActivity part (the kernel, memcpy and memset structs).
template <class Out, class Record>
Out WithDeviceActivity(const Record& record) {
  auto out = WithCudaIds<Out>(record);
  out.start_ns = record.start;
  out.end_ns = record.end;
  return out;
}

MemcpyKind ConvertMemcpyKind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return MemcpyKind::kHostToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return MemcpyKind::kDeviceToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return MemcpyKind::kDeviceToDevice;
    default:
      return MemcpyKind::kOther;
  }
}

}  // namespace

MemoryRecord ConvertMemory(const CUpti_ActivityMemory4& record) {
  auto out = WithCudaIds<MemoryRecord>(record);
  out.operation = record.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
                      ? MemoryRecord::Operation::kRelease
                      : MemoryRecord::Operation::kAllocation;
  out.memory_kind = ConvertMemoryKind(static_cast<uint32_t>(record.memoryKind));
  out.address = record.address;
  out.bytes = record.bytes;
  out.timestamp_ns = record.timestamp;
  return out;
}

KernelRecord ConvertKernel(const CUpti_ActivityKernel10& record) {
  auto out = WithDeviceActivity<KernelRecord>(record);
  // The name belongs to CUPTI and may be reused after the buffer is returned: copy it.
  out.name = record.name != nullptr ? record.name : "<unnamed kernel>";
  return out;
}

MemcpyRecord ConvertMemcpy(const CUpti_ActivityMemcpy6& record) {
  auto out = WithDeviceActivity<MemcpyRecord>(record);
  out.copy_kind = ConvertMemcpyKind(record.copyKind);
  out.bytes = record.bytes;
  return out;
}

MemsetRecord ConvertMemset(const CUpti_ActivityMemset4& record) {
  auto out = WithDeviceActivity<MemsetRecord>(record);
  out.bytes = record.bytes;
  out.value = record.value;
  return out;
}

ExternalCorrelationRecord ConvertExternalCorrelation(
    const CUpti_ActivityExternalCorrelation& record) {
  ExternalCorrelationRecord out;
  switch (record.externalKind) {
    case CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0:
      out.domain = CorrelationDomain::kStep;
      break;
    case CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1:
      out.domain = CorrelationDomain::kAllocator;
      break;
    default:
      out.domain = CorrelationDomain::kOther;
      break;
  }
  out.external_id = record.externalId;
  out.correlation_id = record.correlationId;
  return out;
}

CUpti_ExternalCorrelationKind ExternalKindOf(CorrelationDomain domain) {
  switch (domain) {
    case CorrelationDomain::kStep:
      return CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    case CorrelationDomain::kAllocator:
      return CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
    case CorrelationDomain::kOther:
      return CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
  }
  return CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
}

bool AppendRecord(const void* record, ActivityTrace& trace) {
  // Every record starts with its CUpti_ActivityKind, which says which struct it really is.
  CUpti_ActivityKind kind;
  std::memcpy(&kind, record, sizeof kind);
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      trace.memory.push_back(ConvertMemory(CopyRecord<CUpti_ActivityMemory4>(record)));
      return true;
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
      trace.kernels.push_back(ConvertKernel(CopyRecord<CUpti_ActivityKernel10>(record)));
      return true;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      trace.memcpys.push_back(ConvertMemcpy(CopyRecord<CUpti_ActivityMemcpy6>(record)));
      return true;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      trace.memsets.push_back(ConvertMemset(CopyRecord<CUpti_ActivityMemset4>(record)));
      return true;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      trace.correlations.push_back(
          ConvertExternalCorrelation(CopyRecord<CUpti_ActivityExternalCorrelation>(record)));
      return true;
    default:
      return false;
  }
}

}  // namespace memplan::profiler
