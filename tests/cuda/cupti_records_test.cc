// CUPTI record conversion (pure functions of the structs: runs without a GPU) and the collector
// end to end on a device ([gpu]).

#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "profiler/attribution.h"
#include "profiler/cupti/cupti_collector.h"
#include "profiler/cupti/cupti_records.h"
#include "runtime/cuda/kernels/cuda_kernels.h"
#include "tests/cuda/gpu_test_util.h"

namespace memplan::profiler {
namespace {

template <class Record>
Record Zeroed() {
  Record record;
  std::memset(&record, 0, sizeof record);
  return record;
}

TEST_CASE("MEMORY2 records convert to memory records", "[cupti]") {
  auto record = Zeroed<CUpti_ActivityMemory4>();
  record.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  record.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  record.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  record.address = 0x7f0000001000;
  record.bytes = 4096;
  record.timestamp = 123456789;
  record.correlationId = 42;
  record.deviceId = 1;
  record.streamId = 7;
  ActivityTrace trace;
  REQUIRE(AppendRecord(&record, trace));
  REQUIRE(trace.memory.size() == 1);
  const MemoryRecord& m = trace.memory[0];
  CHECK(m.operation == MemoryRecord::Operation::kRelease);
  CHECK(m.memory_kind == DeviceMemoryKind::kDevice);
  CHECK(m.address == 0x7f0000001000);
  CHECK(m.bytes == 4096);
  CHECK(m.timestamp_ns == 123456789);
  CHECK(m.correlation_id == 42);
  CHECK(m.device_id == 1);
  CHECK(m.stream_id == 7);
}

TEST_CASE("kernel, memcpy and memset records convert", "[cupti]") {
  auto kernel = Zeroed<CUpti_ActivityKernel10>();
  kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel.name = "_Z10gemmKernelv";
  kernel.start = 100;
  kernel.end = 250;
  kernel.correlationId = 9;
  kernel.streamId = 13;
  auto copy = Zeroed<CUpti_ActivityMemcpy6>();
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.bytes = 64;
  copy.start = 10;
  copy.end = 20;
  copy.correlationId = 3;
  auto set = Zeroed<CUpti_ActivityMemset4>();
  set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  set.bytes = 32;
  set.value = 0;
  set.start = 30;
  set.end = 31;
  set.correlationId = 4;
  auto api = Zeroed<CUpti_ActivityAPI>();
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;

  ActivityTrace trace;
  CHECK(AppendRecord(&kernel, trace));
  CHECK(AppendRecord(&copy, trace));
  CHECK(AppendRecord(&set, trace));
  CHECK_FALSE(AppendRecord(&api, trace));  // dropped
  REQUIRE(trace.kernels.size() == 1);
  CHECK(trace.kernels[0].name == "_Z10gemmKernelv");
  CHECK(trace.kernels[0].start_ns == 100);
  CHECK(trace.kernels[0].end_ns == 250);
  CHECK(trace.kernels[0].correlation_id == 9);
  CHECK(trace.kernels[0].stream_id == 13);
  REQUIRE(trace.memcpys.size() == 1);
  CHECK(trace.memcpys[0].copy_kind == MemcpyKind::kHostToDevice);
  CHECK(trace.memcpys[0].bytes == 64);
  REQUIRE(trace.memsets.size() == 1);
  CHECK(trace.memsets[0].correlation_id == 4);
}

TEST_CASE("external correlation kinds map to memplan's domains", "[cupti]") {
  auto record = Zeroed<CUpti_ActivityExternalCorrelation>();
  record.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  record.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
  record.externalId = 77;
  record.correlationId = 5;
  const ExternalCorrelationRecord converted = ConvertExternalCorrelation(record);
  CHECK(converted.domain == CorrelationDomain::kAllocator);
  CHECK(converted.external_id == 77);
  CHECK(converted.correlation_id == 5);
  CHECK(ExternalKindOf(CorrelationDomain::kStep) == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
  CHECK(ExternalKindOf(CorrelationDomain::kAllocator) == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1);
}

// On a device: a cudaMalloc, a kernel and a cudaFree inside step 5 come back attributed to it.
TEST_CASE("the CUPTI collector attributes a step's memory and kernel", "[cupti][gpu]") {
  MEMPLAN_REQUIRE_GPU();
  auto collector = CuptiCollector::Start();
  REQUIRE(collector.ok());
  REQUIRE((*collector)->Push(CorrelationDomain::kStep, 5).ok());
  void* buffer = nullptr;
  REQUIRE(cuda::CheckCuda(cudaMalloc(&buffer, 1 << 20), "cudaMalloc").ok());
  REQUIRE(cuda::Fill(static_cast<float*>(buffer), 1.0f, (1 << 20) / 4, nullptr).ok());
  REQUIRE(cuda::CheckCuda(cudaFree(buffer), "cudaFree").ok());
  REQUIRE((*collector)->Pop(CorrelationDomain::kStep, 5).ok());
  auto trace = (*collector)->Stop();
  REQUIRE(trace.ok());

  ProfiledStep step;
  step.external_id = 5;
  step.name = "fill";
  step.node = "fill";
  auto profile = Attribute(*trace, {step});
  REQUIRE(profile.ok());
  CHECK(profile->steps[0].kernels == 1);
  CHECK(profile->steps[0].allocated_bytes == 1 << 20);
  CHECK(profile->steps[0].freed_bytes == 1 << 20);
  CHECK(profile->steps[0].device_seconds > 0);
  // No allocator region was pushed, so the buffer counts as library scratch of the step.
  CHECK(profile->steps[0].workspace_bytes == 1 << 20);
}

TEST_CASE("unbalanced external-correlation pops are errors", "[cupti][gpu]") {
  MEMPLAN_REQUIRE_GPU();
  auto collector = CuptiCollector::Start();
  REQUIRE(collector.ok());
  REQUIRE((*collector)->Push(CorrelationDomain::kStep, 1).ok());
  Status popped = (*collector)->Pop(CorrelationDomain::kStep, 2);
  REQUIRE_FALSE(popped.ok());
  CHECK(popped.error().message ==
        "cuptiActivityPopExternalCorrelationId: popped external id 1 where 2 was expected "
        "(unbalanced push/pop)");
  CHECK(CuptiCollector::Start().ok() == false);  // one collector per process
  REQUIRE((*collector)->Stop().ok());
}

}  // namespace
}  // namespace memplan::profiler
