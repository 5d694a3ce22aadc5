#include "analyzer/cost/generic_gpu_class.h"

#include <cctype>

#include "analyzer/text/memory_size.h"
#include "analyzer/text/number_format.h"

namespace memplan {

const GpuSpec& GenericClassReference(GpuGeneration generation) {
  const GpuSpec* slowest = nullptr;
  for (const GpuSpec& gpu : KnownGpus())
    if (gpu.generation == generation &&
        (slowest == nullptr || gpu.fp16_flops_per_second < slowest->fp16_flops_per_second))
      slowest = &gpu;
  MEMPLAN_CHECK(slowest != nullptr);  // every generation has a GPU in the table
  return *slowest;
}

std::optional<GpuGeneration> ParseGenericClass(std::string_view text) {
  std::string lower;
  for (char c : text)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (const NamedValue<GpuGeneration>& g : kGpuGenerationNames) {
    std::string name(g.name);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == lower) return g.value;
  }
  return std::nullopt;
}

GpuSpec GenericGpuOfClass(int64_t memory_bytes, GpuGeneration generation) {
  GpuSpec spec = GenericClassReference(generation);
  const std::string reference = spec.name;
  spec.name = "generic " + FormatBytes(memory_bytes);
  spec.description = "a GPU with " + FormatBytes(memory_bytes) + " (" +
                     std::string(GpuGenerationName(generation)) +
                     " class, throughput assumed: NVIDIA " + reference + ")";
  spec.memory_bytes = memory_bytes;
  spec.is_generic = true;
  return spec;
}

std::string GenericGpuText(const GpuSpec& gpu) {
  if (!gpu.is_generic) return "";
  const GpuSpec& reference = GenericClassReference(gpu.generation);
  constexpr double kTera = 1e12;
  constexpr double kGiga = 1e9;
  std::string s = "generic " + std::string(GpuGenerationName(gpu.generation)) +
                  " class: throughput of the " + reference.description + " assumed (" +
                  FormatFixed(gpu.fp16_flops_per_second / kTera, 1) + " TFLOP/s fp16, " +
                  FormatFixed(gpu.fp32_flops_per_second / kTera, 1) + " TFLOP/s fp32, " +
                  FormatFixed(gpu.memory_bytes_per_second / kGiga, 0) + " GB/s; " +
                  (gpu.supports_bf16 ? "bf16 on tensor cores" : "no bf16 tensor cores") +
                  "); name the GPU (--gpu RTX4090) or a class (--gpu SIZE:ampere) for others";
  return s;
}

}  // namespace memplan
