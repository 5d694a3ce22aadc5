#pragma once
// A GPU given only by its memory size (`--gpu 24G`) is a generic GPU of a named class: an
// architecture generation whose throughput the cost model assumes. `--gpu 24G` alone is the
// Turing class; `--gpu 24G:ampere` (or :volta, :turing, :ada, :hopper) names another. A class's
// throughput is that of the slowest GPU of its generation in the table (analyzer/cost/
// gpu_specs.cc), so times for an unnamed GPU err on the slow side within the class, and bf16 runs
// on tensor cores exactly where the class has them (Ampere and later). Reports say which class
// and which GPU's figures were assumed (GenericGpuText), never silently.

#include <optional>
#include <string>
#include <string_view>

#include "analyzer/cost/gpu_specs.h"

namespace memplan {

// The class a bare size gets: Turing, the slowest tensor-core generation in the table (the T4),
// so an unnamed GPU is never assumed faster than it is.
inline constexpr GpuGeneration kDefaultGenericClass = GpuGeneration::kTuring;

// The GPU of the table whose throughput a class assumes: the one with the lowest fp16 tensor-core
// peak of that generation (Volta: V100-16GB, Turing: T4, Ampere: RTX3090, Ada: L4, Hopper: H100).
const GpuSpec& GenericClassReference(GpuGeneration generation);

// "ampere" -> kAmpere (case-insensitive); nullopt for anything else.
std::optional<GpuGeneration> ParseGenericClass(std::string_view text);

// A generic GPU with `memory_bytes` of memory and the throughput, bf16 support and per-process
// figures (CUDA context, cuBLAS workspaces) of the class's reference GPU. Its name is
// "generic 24.0 GiB" (the class is in `generation`).
GpuSpec GenericGpuOfClass(int64_t memory_bytes, GpuGeneration generation);

// One line for reports, empty for a named GPU: "generic Turing class: throughput of the NVIDIA
// T4 16GB assumed (65.0 TFLOP/s fp16, 8.1 TFLOP/s fp32, 320 GB/s; no bf16 tensor cores); name
// the GPU (--gpu RTX4090) or a class (--gpu 24G:ampere) for others".
std::string GenericGpuText(const GpuSpec& gpu);

}  // namespace memplan
