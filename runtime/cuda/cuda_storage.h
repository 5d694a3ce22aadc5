#pragma once
// How the CUDA backend lays a tensor out in device memory, and the buffers behind its handles.
//
// Float tensors are stored in their own dtype (fp32, fp16, bf16: what cuBLAS and the simulator
// expect). Integer and bool tensors (indices, labels, masks, shapes) are stored as fp32 holding
// the integer value, exactly as the CPU reference stores them (exact up to 2^24): the kernels
// read them without a conversion, and the allocator still *accounts* them in their ONNX dtype's
// bytes, so measurements speak the simulator's units.

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/dtype.h"
#include "runtime/backend.h"
#include "runtime/cuda/device_allocator.h"

namespace memplan::cuda {

// The dtype a tensor of `dtype` is stored in on the device.
DType StoredDType(DType dtype);
// Device bytes of `numel` elements stored for `dtype`.
int64_t StoredBytes(int64_t numel, DType dtype);

// One device buffer, returned to the allocator it came from when the last handle goes.
class CudaStorage final : public DeviceStorage {
 public:
  // REQUIRES: `allocator` outlives the storage; `data` came from it.
  CudaStorage(DeviceAllocator& allocator, void* data, DType stored,
              std::optional<std::vector<float>> host_values = std::nullopt)
      : allocator_(allocator), data_(data), stored_(stored), host_(std::move(host_values)) {}
  ~CudaStorage() override;
  CudaStorage(const CudaStorage&) = delete;
  CudaStorage& operator=(const CudaStorage&) = delete;

  void* data() const { return data_; }
  DType stored_dtype() const { return stored_; }
  void Recategorize(MemoryCategory category) override { allocator_.Recategorize(data_, category); }
  // Constants keep their values on the host too, so shape arithmetic over them (Concat of
  // dims, Gather of a Shape) folds on the host instead of launching kernels.
  const std::optional<std::vector<float>>& host_values() const { return host_; }

 private:
  DeviceAllocator& allocator_;
  void* data_;
  DType stored_;
  std::optional<std::vector<float>> host_;
};

// The storage behind a CUDA handle. REQUIRES: the handle is defined and came from a CudaBackend.
const CudaStorage& StorageOf(const DeviceTensor& handle);

}  // namespace memplan::cuda
