#pragma once
// How a profiled run tells CUPTI which program step and which allocator made each record.
//
//  * StepCorrelatingBackend wraps the backend the executor runs on. The executor announces every
//    step execution (Backend::EnterStep, before the step's allocations); the wrapper closes the
//    previous kStep external-correlation region, opens a new one with a fresh id, and records the
//    StepTable entry (profiler/step_table.h) that attribution and the trace writer read. Every
//    other call is forwarded unchanged, so the executor's measurements are those of the wrapped
//    backend.
//  * AllocatorCorrelation brackets each cudaMalloc/cudaFree of the device allocator with a
//    kAllocator region, so attribution can tell program buffers from library memory.
//
// CUPTI errors inside these callbacks cannot be returned where they happen; the first is kept
// and returned by Finish() / status().

#include <cstdint>

#include "analyzer/training_program.h"
#include "profiler/cupti/cupti_collector.h"
#include "profiler/step_table.h"
#include "runtime/backend.h"
#include "runtime/cuda/device_allocator.h"

namespace memplan::profiler {

class AllocatorCorrelation final : public cuda::DeviceCallObserver {
 public:
  explicit AllocatorCorrelation(CuptiCollector& collector) : collector_(collector) {}
  void BeforeDeviceCall() override;
  void AfterDeviceCall() override;
  const Status& status() const { return status_; }

 private:
  CuptiCollector& collector_;
  uint64_t next_id_ = 0;
  Status status_ = OkStatus();
};

class StepCorrelatingBackend final : public Backend {
 public:
  // REQUIRES: inner, collector and program outlive the wrapper.
  StepCorrelatingBackend(Backend& inner, CuptiCollector& collector, const TrainingProgram& program)
      : inner_(inner), collector_(collector), program_(program) {}

  // Closes the open step region. Returns the first CUPTI error of the run.
  Status Finish();
  const StepTable& steps() const { return steps_; }

  std::string_view name() const override { return inner_.name(); }
  void EnterStep(const StepSite& site) override;
  Expected<DeviceTensor> Allocate(const TensorShape& shape, DType dtype,
                                  MemoryCategory category) override {
    return inner_.Allocate(shape, dtype, category);
  }
  Expected<DeviceTensor> Constant(const TensorShape& shape, DType dtype,
                                  const std::vector<float>& values) override {
    return inner_.Constant(shape, dtype, values);
  }
  DeviceMemory Memory() const override { return inner_.Memory(); }
  void ResetPeaks() override { inner_.ResetPeaks(); }
  Status Upload(const DeviceTensor& dst, const std::vector<float>& values) override {
    return inner_.Upload(dst, values);
  }
  Expected<std::vector<float>> Download(const DeviceTensor& src) override {
    return inner_.Download(src);
  }
  Status Cast(const DeviceTensor& src, const DeviceTensor& dst) override {
    return inner_.Cast(src, dst);
  }
  Status Add(const DeviceTensor& src, const DeviceTensor& dst) override {
    return inner_.Add(src, dst);
  }
  Status Fill(const DeviceTensor& dst, float value) override { return inner_.Fill(dst, value); }
  Status Scale(const std::vector<DeviceTensor>& tensors, float factor) override {
    return inner_.Scale(tensors, factor);
  }
  Expected<bool> UnscaleAndCheckOverflow(const std::vector<DeviceTensor>& gradients,
                                         float inv_scale) override {
    return inner_.UnscaleAndCheckOverflow(gradients, inv_scale);
  }
  Expected<double> GlobalNorm(const std::vector<DeviceTensor>& tensors) override {
    return inner_.GlobalNorm(tensors);
  }
  Expected<std::vector<DeviceTensor>> Forward(const ForwardCall& call) override {
    return inner_.Forward(call);
  }
  Status Backward(const BackwardCall& call) override { return inner_.Backward(call); }
  Status LossForward(const LossCall& call) override { return inner_.LossForward(call); }
  Status LossBackward(const LossBackwardCall& call) override { return inner_.LossBackward(call); }
  Status OptimizerStep(const OptimizerCall& call) override { return inner_.OptimizerStep(call); }

 private:
  void CloseOpenStep();
  void Keep(const Status& s) {
    if (status_.ok() && !s.ok()) status_ = s;
  }

  Backend& inner_;
  CuptiCollector& collector_;
  const TrainingProgram& program_;
  StepTable steps_;
  bool open_ = false;
  uint64_t next_id_ = 0;
  Status status_ = OkStatus();
};

}  // namespace memplan::profiler
