#pragma once
// CUPTI activity records -> the plain records of profiler/activity_records.h. The struct versions
// are the ones the CUDA 13 toolkit's cupti_activity.h defines for each kind (older versions are
// gone from it): MEMORY2 -> CUpti_ActivityMemory4, CONCURRENT_KERNEL -> CUpti_ActivityKernel10,
// MEMCPY -> CUpti_ActivityMemcpy6, MEMSET -> CUpti_ActivityMemset4.
//
// Pure functions of the record, so they are tested on machines without a GPU.

#include <cupti.h>

#include "profiler/activity_records.h"

namespace memplan::profiler {

MemoryRecord ConvertMemory(const CUpti_ActivityMemory4& record);
KernelRecord ConvertKernel(const CUpti_ActivityKernel10& record);
MemcpyRecord ConvertMemcpy(const CUpti_ActivityMemcpy6& record);
MemsetRecord ConvertMemset(const CUpti_ActivityMemset4& record);
ExternalCorrelationRecord ConvertExternalCorrelation(
    const CUpti_ActivityExternalCorrelation& record);

// The CUPTI external-correlation kind memplan pushes for each domain (kStep: CUSTOM0,
// kAllocator: CUSTOM1).
CUpti_ExternalCorrelationKind ExternalKindOf(CorrelationDomain domain);

// Appends the record at `record` (as cuptiActivityGetNextRecord hands it out) to `trace` when it
// is one of the kinds above; returns false (and leaves the trace alone) for every other kind,
// e.g. the RUNTIME/DRIVER API records external correlation needs enabled. The record is read
// by copying its bytes into the struct its kind names, so no type punning is involved.
bool AppendRecord(const void* record, ActivityTrace& trace);

}  // namespace memplan::profiler
