#pragma once
// PYTORCH_CUDA_ALLOC_CONF as the caching-allocator model reads it: comma-separated `key:value`
// options (c10/cuda/CUDAAllocatorConfig.cpp's parseArgs):
//   max_split_size_mb:N          N MiB, more than 20 (kLargeBuffer); CachingAllocatorOptions
//   roundup_power2_divisions:N   one power of two for every size (the per-interval list form
//                                `[256:1,...]` is refused: not modelled)
//   expandable_segments:True|False
//   garbage_collection_threshold:F  accepted by PyTorch but acting only with
//                                set_per_process_memory_fraction: refused here, not modelled
// Anything else (backend:cudaMallocAsync, pinned_* options, unknown keys) is an Error naming it.

#include <string>
#include <string_view>

#include "analyzer/simulation/caching_allocator.h"
#include "graph/expected.h"

namespace memplan {

struct AllocatorConfig {
  CachingAllocatorOptions caching;  // max_split_size and roundup_power2_divisions set
  bool expandable_segments = false;
};

Expected<AllocatorConfig> ParseAllocatorConfig(std::string_view text);

// The config as PYTORCH_CUDA_ALLOC_CONF's value, options in the order above, only those that
// differ from PyTorch's defaults ("" when none).
std::string AllocatorConfigString(const AllocatorConfig& config);

}  // namespace memplan
