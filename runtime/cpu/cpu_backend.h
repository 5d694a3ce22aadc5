#pragma once
// The CPU reference backend: program buffers come from a CountingCpuAllocator (live/peak bytes
// per category in device bytes of each dtype), kernels from runtime/cpu/kernel_registry.h, losses
// from runtime/cpu/losses.h, optimizers from runtime/optimizers.h. fp16/bf16 are emulated: every
// result written into a program buffer is rounded to that buffer's dtype.
//
// Kernels return freshly allocated outputs; this backend lets them allocate from a second,
// scratch allocator and copies the results into the program's buffers, so the counted allocator
// sees exactly the program's allocations (a GPU kernel writes its output buffer in place; the copy
// is an artefact of the CPU kernel API, not memory the plan needs). The scratch peak is reported
// separately.
//
// REQUIRES: every DeviceTensor this backend made is released before the backend is destroyed.

#include "runtime/allocator.h"
#include "runtime/backend.h"

namespace memplan {

class CpuBackend final : public Backend {
 public:
  CpuBackend() = default;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  std::string_view name() const override { return "cpu"; }
  Expected<DeviceTensor> Allocate(const TensorShape& shape, DType dtype,
                                  MemoryCategory category) override;
  Expected<DeviceTensor> Constant(const TensorShape& shape, DType dtype,
                                  const std::vector<float>& values) override;
  DeviceMemory Memory() const override;
  void ResetPeaks() override;

  Status Upload(const DeviceTensor& dst, const std::vector<float>& values) override;
  Expected<std::vector<float>> Download(const DeviceTensor& src) override;
  Status Cast(const DeviceTensor& src, const DeviceTensor& dst) override;
  Status Add(const DeviceTensor& src, const DeviceTensor& dst) override;
  Status Fill(const DeviceTensor& dst, float value) override;
  Status Scale(const std::vector<DeviceTensor>& tensors, float factor) override;
  Expected<bool> UnscaleAndCheckOverflow(const std::vector<DeviceTensor>& gradients,
                                         float inv_scale) override;
  Expected<double> GlobalNorm(const std::vector<DeviceTensor>& tensors) override;

  Expected<std::vector<DeviceTensor>> Forward(const ForwardCall& call) override;
  Status Backward(const BackwardCall& call) override;
  Status LossForward(const LossCall& call) override;
  Status LossBackward(const LossBackwardCall& call) override;
  Status OptimizerStep(const OptimizerCall& call) override;

  // The CPU tensor behind a handle (shape and dtype as the handle reads it); undefined for an
  // undefined handle. REQUIRES: the handle came from a CpuBackend.
  static Tensor AsTensor(const DeviceTensor& handle);
  static DeviceTensor Wrap(const Tensor& tensor);

  const CountingCpuAllocator& program_allocator() const { return program_; }

 private:
  // Declared first so they are destroyed last.
  CountingCpuAllocator program_;
  CountingCpuAllocator scratch_;
};

}  // namespace memplan
