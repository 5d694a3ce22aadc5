#pragma once
// Questions about the CUDA device itself (is there one, what is it, how much memory is in use),
// asked by the [gpu] tests and the profiler. Plain C++ signatures: no CUDA header leaks to the
// caller.

#include <cstdint>
#include <string>

namespace memplan::cuda {

// Number of CUDA devices, 0 when there is no driver or no device (the [gpu] tests skip then).
int DeviceCount();

// The current device's name ("NVIDIA H100 80GB HBM3"); "cuda" when the driver does not say.
std::string CurrentDeviceName();

// Bytes of the current device in use right now (context, modules, every allocation); 0 when the
// driver does not say.
int64_t DeviceBytesInUse();

}  // namespace memplan::cuda
