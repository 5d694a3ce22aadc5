#include "runtime/cuda/cuda_storage.h"

namespace memplan::cuda {

DType StoredDType(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
    case DType::kBFloat16:
      return dtype;
    default:
      return DType::kFloat32;
  }
}

int64_t StoredBytes(int64_t numel, DType dtype) { return numel * ByteSize(StoredDType(dtype)); }

CudaStorage::~CudaStorage() {
  // A failed cudaFree cannot be reported from a destructor; the allocator's counters are
  // updated either way and the device reclaims the memory at exit.
  (void)allocator_.Free(data_);
}

const CudaStorage& StorageOf(const DeviceTensor& handle) {
  MEMPLAN_CHECK(handle.defined());
  const auto* storage = dynamic_cast<const CudaStorage*>(handle.storage.get());
  MEMPLAN_CHECK(storage != nullptr);
  return *storage;
}

}  // namespace memplan::cuda
