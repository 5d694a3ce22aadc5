#include "runtime/cuda/device_query.h"

#include <cuda_runtime_api.h>

namespace memplan::cuda {

int DeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error for later calls
    return 0;
  }
  return count;
}

std::string CurrentDeviceName() {
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "cuda";
  }
  return prop.name;
}

int64_t DeviceBytesInUse() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return static_cast<int64_t>(total_bytes - free_bytes);
}

}  // namespace memplan::cuda
