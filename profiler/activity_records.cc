#include "profiler/activity_records.h"

namespace memplan::profiler {

bool CountsAsDeviceMemory(DeviceMemoryKind kind) {
  // Managed memory migrates on demand and pinned/pageable memory lives on the host, so only these
  // are resident in device memory for their whole lifetime.
  return kind == DeviceMemoryKind::kDevice || kind == DeviceMemoryKind::kArray ||
         kind == DeviceMemoryKind::kDeviceStatic;
}

}  // namespace memplan::profiler
