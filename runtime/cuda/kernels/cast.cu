// fp32 <-> fp16 / bf16 conversions (round to nearest even, like torch's .half()/.bfloat16()).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>
#include <type_traits>

#include "runtime/cuda/cuda_status.h"
#include "runtime/cuda/kernels/launch_config.cuh"

namespace memplan::cuda {
namespace {

// float, __half or __nv_bfloat16 to float: exact.
__device__ float ToFloat(float v) { return v; }
__device__ float ToFloat(__half v) { return __half2float(v); }
__device__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }

// float to T (float, __half or __nv_bfloat16), rounding to nearest even.
template <class T>
__device__ T FromFloat(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    static_assert(std::is_same_v<T, float>);
    return v;
  }
}

template <class From, class To>
__global__ void CastKernel(const From* src, To* dst, int64_t n) {
  for (const int64_t i : GridStride(n)) {
    dst[i] = FromFloat<To>(ToFloat(src[i]));
  }
}

template <class From>
Status LaunchTo(const From* src, void* dst, DType to, int64_t n, cudaStream_t stream) {
  switch (to) {
    case DType::kFloat32:
      CastKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(src, static_cast<float*>(dst), n);
      break;
    case DType::kFloat16:
      CastKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(src, static_cast<__half*>(dst), n);
      break;
    case DType::kBFloat16:
      CastKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
          src, static_cast<__nv_bfloat16*>(dst), n);
      break;
    default:
      return MakeError("CastBuffer: unsupported target dtype " + std::string(DTypeName(to)));
  }
  return CheckLaunch("CastKernel");
}

}  // namespace

Status CastBuffer(const void* src, DType from, void* dst, DType to, int64_t n,
                  cudaStream_t stream) {
  if (n == 0) return OkStatus();
  switch (from) {
    case DType::kFloat32:
      return LaunchTo(static_cast<const float*>(src), dst, to, n, stream);
    case DType::kFloat16:
      return LaunchTo(static_cast<const __half*>(src), dst, to, n, stream);
    case DType::kBFloat16:
      return LaunchTo(static_cast<const __nv_bfloat16*>(src), dst, to, n, stream);
    default:
      return MakeError("CastBuffer: unsupported source dtype " + std::string(DTypeName(from)));
  }
}

}  // namespace memplan::cuda
