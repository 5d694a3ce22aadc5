#pragma once
// What every CUDA op implementation works with: the stream, the cuBLAS handle, the scratch
// allocator for temporaries, and the staging helpers that let kernels written for fp32 read and
// write tensors of any stored dtype.
//
// Staging. Kernels compute in fp32. ReadF32 hands a kernel an fp32 pointer to a tensor's data
// (the buffer itself when it is stored in fp32, else a converted scratch copy). WriteF32 gives a
// kernel an fp32 destination for a result: the program buffer itself when it is fp32 and is
// overwritten, else scratch that Commit() rounds into the buffer's dtype or adds to it (a
// gradient with several consumers). So fp16 ops cost a conversion each way: correct first; the
// GEMMs, which matter most, read fp16/bf16 directly (see ops_matmul.cc).

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "graph/expected.h"
#include "runtime/backend.h"
#include "runtime/cuda/device_allocator.h"
#include "runtime/cuda/gemm.h"

namespace memplan::cuda {

// A scratch buffer returned to its allocator when it goes out of scope. Stream order makes the
// reuse safe: a later kernel on the same stream cannot start before the earlier reader finished.
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(DeviceAllocator* allocator, void* data) : allocator_(allocator), data_(data) {}
  ~ScratchBuffer() { Release(); }
  ScratchBuffer(ScratchBuffer&& other) noexcept { *this = std::move(other); }
  ScratchBuffer& operator=(ScratchBuffer&& other) noexcept;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  float* f32() const { return static_cast<float*>(data_); }
  void* data() const { return data_; }

 private:
  void Release();
  DeviceAllocator* allocator_ = nullptr;
  void* data_ = nullptr;
};

// An fp32 view of a tensor for reading; keeps its staging copy alive.
struct F32Input {
  const float* data = nullptr;  // null for an undefined tensor
  ScratchBuffer staging;
};

// An fp32 destination; Commit() makes the destination hold the result.
class F32Output {
 public:
  F32Output() = default;
  float* data() const { return data_; }
  bool defined() const { return data_ != nullptr; }

 private:
  friend class CudaContext;
  float* data_ = nullptr;
  DeviceTensor destination_;
  ScratchBuffer staging_;
  bool accumulate_ = false;
};

class CudaContext {
 public:
  static Expected<std::unique_ptr<CudaContext>> Create();
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  cudaStream_t stream() const { return stream_; }
  const BlasHandle& blas() const { return *blas_; }
  DeviceAllocator& scratch_allocator() { return scratch_; }
  DeviceAllocator& program_allocator() { return program_; }

  // `bytes` of uncounted scratch.
  Expected<ScratchBuffer> Scratch(int64_t bytes);
  Expected<ScratchBuffer> ScratchF32(int64_t elements) { return Scratch(elements * 4); }
  // A tensor of scratch storage (zero-filled): a view op's result the backend cannot express as
  // a view, or a forward output the program gives no buffer of its own.
  Expected<DeviceTensor> ScratchTensor(const TensorShape& shape, DType dtype);

  // A constant (not a program buffer): device copy plus host values (see CudaStorage).
  Expected<DeviceTensor> ConstantTensor(const TensorShape& shape, DType dtype,
                                        const std::vector<float>& values);

  Expected<F32Input> ReadF32(const DeviceTensor& tensor);
  // REQUIRES: destination defined. `staged`: write to scratch even where the destination could
  // be written in place (the kernel still reads the destination's memory as an input).
  Expected<F32Output> WriteF32(const DeviceTensor& destination, bool accumulate,
                               bool staged = false);
  Status Commit(F32Output& output);

  // dst (overwritten or added to) = src of `src_dtype` (stored), `numel` elements, rounded to
  // dst's stored dtype.
  Status Store(const void* src, DType src_dtype, const DeviceTensor& dst, bool accumulate);

  // Blocks until the stream is idle (downloads, host-side decisions).
  Status Synchronize(const std::string& why);

 private:
  CudaContext() : scratch_(DeviceAllocatorOptions{/*caching=*/true, /*round_bytes=*/512}) {}
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<BlasHandle> blas_;
  // Declared before anything that may hold their blocks.
  DeviceAllocator program_;
  DeviceAllocator scratch_;
};

}  // namespace memplan::cuda
