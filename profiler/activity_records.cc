#include "profiler/activity_records.h"

namespace memplan::profiler {

std::string_view DeviceMemoryKindName(DeviceMemoryKind kind) {
  switch (kind) {
    case DeviceMemoryKind::kUnknown:
      return "unknown";
    case DeviceMemoryKind::kPageable:
      return "pageable";
    case DeviceMemoryKind::kPinned:
      return "pinned";
    case DeviceMemoryKind::kDevice:
      return "device";
    case DeviceMemoryKind::kArray:
      return "array";
    case DeviceMemoryKind::kManaged:
      return "managed";
    case DeviceMemoryKind::kDeviceStatic:
      return "device_static";
    case DeviceMemoryKind::kManagedStatic:
      return "managed_static";
  }
  return "unknown";
}

bool CountsAsDeviceMemory(DeviceMemoryKind kind) {
  // Managed memory migrates on demand and pinned/pageable memory lives on the host, so only these
  // are resident in device memory for their whole lifetime.
  return kind == DeviceMemoryKind::kDevice || kind == DeviceMemoryKind::kArray ||
         kind == DeviceMemoryKind::kDeviceStatic;
}

std::string_view MemcpyKindName(MemcpyKind kind) {
  switch (kind) {
    case MemcpyKind::kOther:
      return "memcpy";
    case MemcpyKind::kHostToDevice:
      return "memcpy HtoD";
    case MemcpyKind::kDeviceToHost:
      return "memcpy DtoH";
    case MemcpyKind::kDeviceToDevice:
      return "memcpy DtoD";
  }
  return "memcpy";
}

}  // namespace memplan::profiler
