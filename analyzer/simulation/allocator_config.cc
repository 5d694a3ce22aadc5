#include "analyzer/simulation/allocator_config.h"

#include <bit>
#include <charconv>
#include <cstdint>

namespace memplan {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Expected<int64_t> WholeNumber(std::string_view key, std::string_view value) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < 0)
    return MakeError("PYTORCH_CUDA_ALLOC_CONF " + std::string(key) +
                     ": expected a whole number, got '" + std::string(value) + "'");
  return n;
}

}  // namespace

Expected<AllocatorConfig> ParseAllocatorConfig(std::string_view text) {
  AllocatorConfig config;
  constexpr int64_t kMiB = int64_t{1} << 20;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos)
      return MakeError("PYTORCH_CUDA_ALLOC_CONF: '" + std::string(item) + "' is not key:value");
    const std::string_view key = Trim(item.substr(0, colon));
    const std::string_view value = Trim(item.substr(colon + 1));
    if (key == "max_split_size_mb") {
      MEMPLAN_TRY(const int64_t mb, WholeNumber(key, value));
      // CUDAAllocatorConfig: "max_split_size_mb too small, must be > 20" (kLargeBuffer).
      if (mb <= 20 || mb > (int64_t{1} << 40))
        return MakeError(
            "PYTORCH_CUDA_ALLOC_CONF max_split_size_mb: PyTorch requires more than "
            "20 (MiB), got " +
            std::string(value));
      config.caching.max_split_size = mb * kMiB;
    } else if (key == "roundup_power2_divisions") {
      if (!value.empty() && value.front() == '[')
        return MakeError(
            "PYTORCH_CUDA_ALLOC_CONF roundup_power2_divisions: the per-interval "
            "list form is not modelled; give one power of two");
      MEMPLAN_TRY(const int64_t d, WholeNumber(key, value));
      if (d > 0 && !std::has_single_bit(static_cast<uint64_t>(d)))
        return MakeError(
            "PYTORCH_CUDA_ALLOC_CONF roundup_power2_divisions: PyTorch requires a "
            "power of two, got " +
            std::string(value));
      if (d > (int64_t{1} << 20))
        return MakeError("PYTORCH_CUDA_ALLOC_CONF roundup_power2_divisions: at most 2^20, got " +
                         std::string(value));
      config.caching.roundup_power2_divisions = d;
    } else if (key == "expandable_segments") {
      if (value != "True" && value != "False")
        return MakeError(
            "PYTORCH_CUDA_ALLOC_CONF expandable_segments: expected True or False, "
            "got '" +
            std::string(value) + "'");
      config.expandable_segments = value == "True";
    } else if (key == "garbage_collection_threshold") {
      return MakeError(
          "PYTORCH_CUDA_ALLOC_CONF garbage_collection_threshold is not modelled (PyTorch applies "
          "it only under torch.cuda.set_per_process_memory_fraction)");
    } else {
      return MakeError("PYTORCH_CUDA_ALLOC_CONF: '" + std::string(key) +
                       "' is not an option memplan models (max_split_size_mb, "
                       "roundup_power2_divisions, expandable_segments)");
    }
  }
  return config;
}

std::string AllocatorConfigString(const AllocatorConfig& config) {
  std::string out;
  auto add = [&out](const std::string& item) { out += (out.empty() ? "" : ",") + item; };
  if (config.caching.max_split_size != INT64_MAX)
    add("max_split_size_mb:" + std::to_string(config.caching.max_split_size >> 20));
  if (config.caching.roundup_power2_divisions > 1)
    add("roundup_power2_divisions:" + std::to_string(config.caching.roundup_power2_divisions));
  if (config.expandable_segments) add("expandable_segments:True");
  return out;
}

}  // namespace memplan
