#pragma once
// How a profiled run tells CUPTI which program step and which allocator made each record.
//
//  * StepCorrelation observes the backend the executor runs on (Backend::set_step_observer). The
//    executor announces every step execution (Backend::EnterStep, before the step's
//    allocations); the observer closes the previous kStep external-correlation region, opens a
//    new one with a fresh id, and records the StepTable entry (profiler/step_table.h) that
//    attribution and the trace writer read. The backend itself is untouched, so the executor's
//    measurements are its own.
//  * AllocatorCorrelation brackets each cudaMalloc/cudaFree of the device allocator with a
//    kAllocator region, so attribution can tell program buffers from library memory.
//
// CUPTI errors inside these callbacks cannot be returned where they happen; the first is kept
// and returned by Finish() / status().

#include <cstdint>

#include "analyzer/program/training_program.h"
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

class StepCorrelation final : public StepObserver {
 public:
  // REQUIRES: collector and program outlive the observer.
  StepCorrelation(CuptiCollector& collector, const TrainingProgram& program)
      : collector_(collector), program_(program) {}

  // Closes the open step region. Returns the first CUPTI error of the run.
  Status Finish();
  const StepTable& steps() const { return steps_; }

  void OnEnterStep(const StepSite& site) override;

 private:
  void CloseOpenStep();
  void Keep(const Status& s) {
    if (status_.ok() && !s.ok()) status_ = s;
  }

  CuptiCollector& collector_;
  const TrainingProgram& program_;
  StepTable steps_;
  bool open_ = false;
  uint64_t next_id_ = 0;
  Status status_ = OkStatus();
};

}  // namespace memplan::profiler
