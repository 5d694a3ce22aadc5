#include "runtime/cuda/cuda_context.h"

#include "runtime/cuda/cuda_status.h"
#include "runtime/cuda/cuda_storage.h"
#include "runtime/cuda/device_query.h"
#include "runtime/cuda/kernels/cuda_kernels.h"

namespace memplan::cuda {

ScratchBuffer& ScratchBuffer::operator=(ScratchBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    allocator_ = other.allocator_;
    data_ = other.data_;
    other.allocator_ = nullptr;
    other.data_ = nullptr;
  }
  return *this;
}

void ScratchBuffer::Release() {
  // The caching scratch allocator only returns the block to its cache; it cannot fail here.
  if (allocator_ != nullptr && data_ != nullptr) (void)allocator_->Free(data_);
  allocator_ = nullptr;
  data_ = nullptr;
}

Expected<std::unique_ptr<CudaContext>> CudaContext::Create() {
  if (DeviceCount() == 0) return MakeError("no CUDA device available");
  std::unique_ptr<CudaContext> context(new CudaContext());
  MEMPLAN_RETURN_IF_ERROR(CheckCuda(
      cudaStreamCreateWithFlags(&context->stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
  MEMPLAN_TRY(context->blas_, BlasHandle::Create(context->stream_));
  return context;
}

CudaContext::~CudaContext() {
  blas_.reset();
  if (stream_ != nullptr) {
    (void)cudaStreamSynchronize(stream_);
    (void)cudaStreamDestroy(stream_);
  }
}

Expected<ScratchBuffer> CudaContext::Scratch(int64_t bytes) {
  MEMPLAN_TRY(void* data, scratch_.Allocate(static_cast<size_t>(std::max<int64_t>(bytes, 0)),
                                            MemoryCategory::kWorkspace));
  return ScratchBuffer(&scratch_, data);
}

Expected<DeviceTensor> CudaContext::ScratchTensor(const TensorShape& shape, DType dtype) {
  const int64_t bytes = StoredBytes(NumElements(shape), dtype);
  MEMPLAN_TRY(void* data, scratch_.Allocate(static_cast<size_t>(bytes), MemoryCategory::kOther));
  auto storage = std::make_shared<CudaStorage>(scratch_, data, StoredDType(dtype));
  MEMPLAN_RETURN_IF_ERROR(CheckCuda(cudaMemsetAsync(data, 0, static_cast<size_t>(bytes), stream_),
                                    "cudaMemsetAsync(scratch tensor)"));
  return DeviceTensor{storage, shape, dtype};
}

Expected<DeviceTensor> CudaContext::ConstantTensor(const TensorShape& shape, DType dtype,
                                                   const std::vector<float>& values) {
  if (static_cast<int64_t>(values.size()) != NumElements(shape))
    return MakeError("constant of shape " + ShapeToString(shape) + " given " +
                     std::to_string(values.size()) + " values");
  const int64_t n = NumElements(shape);
  MEMPLAN_TRY(void* data, scratch_.Allocate(static_cast<size_t>(StoredBytes(n, dtype)),
                                            MemoryCategory::kOther));
  auto storage = std::make_shared<CudaStorage>(scratch_, data, StoredDType(dtype), values);
  DeviceTensor t{storage, shape, dtype};
  if (n == 0) return t;
  MEMPLAN_TRY(ScratchBuffer staging, ScratchF32(n));
  MEMPLAN_RETURN_IF_ERROR(CheckCuda(
      cudaMemcpyAsync(staging.data(), values.data(), static_cast<size_t>(n) * sizeof(float),
                      cudaMemcpyHostToDevice, stream_),
      "cudaMemcpyAsync(constant)"));
  MEMPLAN_RETURN_IF_ERROR(
      CastBuffer(staging.data(), DType::kFloat32, data, StoredDType(dtype), n, stream_));
  // The host vector is pageable: cudaMemcpyAsync has copied it before returning, but the
  // staging block must outlive the cast, which stream order guarantees.
  return t;
}

Expected<F32Input> CudaContext::ReadF32(const DeviceTensor& tensor) {
  F32Input in;
  if (!tensor.defined()) return in;
  const CudaStorage& s = StorageOf(tensor);
  if (s.stored_dtype() == DType::kFloat32) {
    in.data = static_cast<const float*>(s.data());
    return in;
  }
  MEMPLAN_TRY(in.staging, ScratchF32(tensor.numel()));
  MEMPLAN_RETURN_IF_ERROR(CastBuffer(s.data(), s.stored_dtype(), in.staging.data(), DType::kFloat32,
                                     tensor.numel(), stream_));
  in.data = in.staging.f32();
  return in;
}

Expected<F32Output> CudaContext::WriteF32(const DeviceTensor& destination, bool accumulate,
                                          bool staged) {
  MEMPLAN_CHECK(destination.defined());
  F32Output out;
  out.destination_ = destination;
  out.accumulate_ = accumulate;
  const CudaStorage& s = StorageOf(destination);
  if (s.stored_dtype() == DType::kFloat32 && !accumulate && !staged) {
    out.data_ = static_cast<float*>(s.data());
    return out;
  }
  MEMPLAN_TRY(out.staging_, ScratchF32(destination.numel()));
  out.data_ = out.staging_.f32();
  return out;
}

Status CudaContext::Commit(F32Output& output) {
  if (output.staging_.data() == nullptr) return OkStatus();  // written in place
  return Store(output.staging_.data(), DType::kFloat32, output.destination_, output.accumulate_);
}

Status CudaContext::Store(const void* src, DType src_dtype, const DeviceTensor& dst,
                          bool accumulate) {
  const CudaStorage& d = StorageOf(dst);
  const int64_t n = dst.numel();
  if (!accumulate) {
    if (src == d.data()) return OkStatus();
    return CastBuffer(src, src_dtype, d.data(), d.stored_dtype(), n, stream_);
  }
  // dst += src, in fp32.
  ScratchBuffer src_f32;
  const float* a = static_cast<const float*>(src);
  if (src_dtype != DType::kFloat32) {
    MEMPLAN_TRY(src_f32, ScratchF32(n));
    MEMPLAN_RETURN_IF_ERROR(
        CastBuffer(src, src_dtype, src_f32.data(), DType::kFloat32, n, stream_));
    a = src_f32.f32();
  }
  if (d.stored_dtype() == DType::kFloat32)
    return Axpby(1.0f, a, 1.0f, static_cast<float*>(d.data()), n, stream_);
  MEMPLAN_TRY(ScratchBuffer sum, ScratchF32(n));
  MEMPLAN_RETURN_IF_ERROR(
      CastBuffer(d.data(), d.stored_dtype(), sum.data(), DType::kFloat32, n, stream_));
  MEMPLAN_RETURN_IF_ERROR(Axpby(1.0f, a, 1.0f, sum.f32(), n, stream_));
  return CastBuffer(sum.data(), DType::kFloat32, d.data(), d.stored_dtype(), n, stream_);
}

Status CudaContext::Synchronize(const std::string& why) {
  return CheckCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(" + why + ")");
}

}  // namespace memplan::cuda
