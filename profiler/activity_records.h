#pragma once
// What the profiler knows about one traced run: plain copies of the CUPTI Activity API records
// memplan asks for, so attribution, trace writing and their tests need neither CUDA nor a GPU.
//
//   CUPTI kind                          plain record          CUPTI struct (CUDA 13)
//   CUPTI_ACTIVITY_KIND_MEMORY2         MemoryRecord          CUpti_ActivityMemory4
//   CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL KernelRecord        CUpti_ActivityKernel10
//   CUPTI_ACTIVITY_KIND_MEMCPY          MemcpyRecord          CUpti_ActivityMemcpy6
//   CUPTI_ACTIVITY_KIND_MEMSET          MemsetRecord          CUpti_ActivityMemset4
//   CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION ExternalCorrelationRecord
//                                                             CUpti_ActivityExternalCorrelation
//
// Timestamps are CUPTI's: nanoseconds on one device-wide clock (cuptiGetTimestamp). Intervals are
// half-open [start_ns, end_ns). A correlation id ties a device record to the CUDA API call that
// caused it (cudaMalloc, a kernel launch); an external-correlation record ties that API call to
// the id memplan pushed around it (profiler/cupti/cupti_collector.h):
//
//   executor: push(kStep, 17) ... cudaMalloc (corr 40) ... launch (corr 41) ... pop(kStep)
//   records:  External{kStep, 17, corr 40}  Memory{alloc, corr 40}
//             External{kStep, 17, corr 41}  Kernel{corr 41}

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/vocabulary/name_table.h"

namespace memplan::profiler {

// CUpti_ActivityMemoryKind, same order and values (0..7); DeviceMemoryKindName is the name the
// trace prints.
#define MEMPLAN_DEVICE_MEMORY_KINDS(X) \
  X(kUnknown, "unknown")               \
  X(kPageable, "pageable")             \
  X(kPinned, "pinned")                 \
  X(kDevice, "device")                 \
  X(kArray, "array")                   \
  X(kManaged, "managed")               \
  X(kDeviceStatic, "device_static")    \
  X(kManagedStatic, "managed_static")
MEMPLAN_NAMED_ENUM(DeviceMemoryKind, MEMPLAN_DEVICE_MEMORY_KINDS);
static_assert(static_cast<int>(DeviceMemoryKind::kManagedStatic) == 7);
// Memory that occupies the device's own memory (what a GPU budget counts).
bool CountsAsDeviceMemory(DeviceMemoryKind kind);

// One allocation or release (MEMORY2 delivers the two as separate records).
struct MemoryRecord {
  enum class Operation : uint8_t { kAllocation, kRelease };
  Operation operation = Operation::kAllocation;
  DeviceMemoryKind memory_kind = DeviceMemoryKind::kDevice;
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t timestamp_ns = 0;
  uint32_t correlation_id = 0;
  uint32_t device_id = 0;
  uint32_t stream_id = 0;  // CUPTI_INVALID_STREAM_ID for synchronous cudaMalloc/cudaFree
};

// What kernel, memcpy and memset records all carry: the interval the device spent on the work
// and CUPTI's ids.
struct DeviceActivity {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t correlation_id = 0;
  uint32_t device_id = 0;
  uint32_t stream_id = 0;
};

struct KernelRecord : DeviceActivity {
  std::string name;  // the (mangled) kernel symbol
};

// CUpti_ActivityMemcpyKind values that matter here; the rest map to kOther. MemcpyKindName is
// the name of the copy's slice in the trace.
#define MEMPLAN_MEMCPY_KINDS(X)   \
  X(kOther, "memcpy")             \
  X(kHostToDevice, "memcpy HtoD") \
  X(kDeviceToHost, "memcpy DtoH") \
  X(kDeviceToDevice, "memcpy DtoD")
MEMPLAN_NAMED_ENUM(MemcpyKind, MEMPLAN_MEMCPY_KINDS);

struct MemcpyRecord : DeviceActivity {
  MemcpyKind copy_kind = MemcpyKind::kOther;
  uint64_t bytes = 0;
};

struct MemsetRecord : DeviceActivity {
  uint64_t bytes = 0;
  uint32_t value = 0;
};

// Which region an external id names. The collector pushes kStep ids with CUPTI's
// CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 and kAllocator ids with CUSTOM1; the device allocator
// wraps its own cudaMalloc/cudaFree in a kAllocator region so attribution can tell its memory from
// allocations libraries (cuBLAS workspaces) make behind its back.
enum class CorrelationDomain : uint8_t { kStep, kAllocator, kOther };

struct ExternalCorrelationRecord {
  CorrelationDomain domain = CorrelationDomain::kStep;
  uint64_t external_id = 0;
  uint32_t correlation_id = 0;
};

// Everything collected from one traced run, in the order CUPTI delivered it.
struct ActivityTrace {
  std::vector<MemoryRecord> memory;
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<ExternalCorrelationRecord> correlations;
  // Records CUPTI dropped for lack of buffer space; attribution is incomplete when non-zero.
  uint64_t dropped_records = 0;
};

}  // namespace memplan::profiler
