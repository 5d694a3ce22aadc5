#include <catch2/catch.hpp>

#include "analyzer/cost/generic_gpu_class.h"
#include "analyzer/cost/gpu_specs.h"
#include "analyzer/text/memory_size.h"
#include "tests/require_value.h"

namespace memplan {
namespace {

GpuSpec Resolved(const char* text) { return testing::RequireValue(ResolveGpu(text), text); }

TEST_CASE("GPU names resolve case-insensitively, with aliases", "[gpu_specs]") {
  CHECK(Resolved("A100").name == "A100-80GB");
  CHECK(Resolved("a100-80gb").name == "A100-80GB");
  CHECK(Resolved("A100_40GB").name == "A100-40GB");
  CHECK(Resolved("h100").name == "H100");
  CHECK(Resolved("H100-80GB").name == "H100");
  CHECK(Resolved("rtx 3090").name == "RTX3090");
  CHECK(Resolved("RTX-4090").name == "RTX4090");
  CHECK(Resolved("V100").name == "V100-16GB");
  CHECK(Resolved("v100-32gb").name == "V100-32GB");
  for (const char* name : {"L4", "T4", "A10", "A6000", "H200"}) CHECK(Resolved(name).name == name);
}

TEST_CASE("GPU table figures are the datasheets' dense peaks", "[gpu_specs]") {
  // A100 SXM4 80GB datasheet: 19.5 TFLOPS FP32, 156 TF32, 312 FP16/BF16 dense, 2039 GB/s;
  // nvidia-smi total 81920 MiB = 80 GiB.
  GpuSpec a100 = Resolved("A100-80GB");
  CHECK(a100.memory_bytes == int64_t{80} << 30);
  CHECK(a100.fp32_flops_per_second == Approx(19.5e12));
  CHECK(a100.tf32_flops_per_second == Approx(156e12));
  CHECK(a100.fp16_flops_per_second == Approx(312e12));
  CHECK(a100.memory_bytes_per_second == Approx(2039e9));
  CHECK(a100.supports_bf16);
  CHECK_FALSE(a100.is_generic);
  // H100 SXM: 1979 TFLOPS FP16 "with sparsity" -> 989.5 dense; 3.35 TB/s.
  GpuSpec h100 = Resolved("H100");
  CHECK(h100.fp16_flops_per_second == Approx(989.5e12));
  CHECK(h100.memory_bytes_per_second == Approx(3.35e12));
  // Volta and Turing: no BF16, no TF32 (TF32 falls back to the FP32 rate).
  GpuSpec v100 = Resolved("V100");
  CHECK_FALSE(v100.supports_bf16);
  CHECK(v100.tf32_flops_per_second == v100.fp32_flops_per_second);
  CHECK_FALSE(Resolved("T4").supports_bf16);
  // Every entry is complete and carries the fixed context overhead.
  for (const GpuSpec& gpu : KnownGpus()) {
    INFO(gpu.name);
    CHECK(gpu.memory_bytes >= (int64_t{15} << 30));
    CHECK(gpu.context_bytes == kDefaultContextBytes);
    CHECK(gpu.fp32_flops_per_second > 0);
    CHECK(gpu.tf32_flops_per_second >= gpu.fp32_flops_per_second);
    CHECK(gpu.fp16_flops_per_second > gpu.tf32_flops_per_second);
    CHECK(gpu.memory_bytes_per_second > 0);
    CHECK_FALSE(gpu.description.empty());
  }
}

TEST_CASE("a memory size resolves to a generic GPU with T4 throughput", "[gpu_specs]") {
  GpuSpec gpu = Resolved("24G");
  CHECK(gpu.is_generic);
  CHECK(gpu.memory_bytes == int64_t{24} << 30);  // 24 GiB
  CHECK(gpu.context_bytes == kDefaultContextBytes);
  CHECK(gpu.fp16_flops_per_second == Approx(65e12));  // T4 datasheet: 65 TFLOPS mixed precision
  CHECK(gpu.memory_bytes_per_second == Approx(320e9));
  CHECK(Resolved("80GB").memory_bytes == 80000000000);  // decimal GB
  CHECK(Resolved("24GiB").name == "generic 24.0 GiB");
}

TEST_CASE("a size with a class takes the slowest GPU of that generation", "[gpu_specs]") {
  // Datasheet fp16 tensor-core peaks: Ampere RTX 3090 71 < A10 125 < A6000 154.8 < A100 312;
  // Ada L4 121 < RTX 4090 165.2; Volta V100 125 (16 and 32 GB alike, the first listed).
  CHECK(GenericClassReference(GpuGeneration::kAmpere).name == "RTX3090");
  CHECK(GenericClassReference(GpuGeneration::kAda).name == "L4");
  CHECK(GenericClassReference(GpuGeneration::kTuring).name == "T4");
  CHECK(GenericClassReference(GpuGeneration::kHopper).name == "H100");
  const GpuSpec ampere = Resolved("24G:ampere");
  CHECK(ampere.is_generic);
  CHECK(ampere.memory_bytes == int64_t{24} << 30);
  CHECK(ampere.generation == GpuGeneration::kAmpere);
  CHECK(ampere.supports_bf16);
  CHECK(ampere.fp16_flops_per_second == Approx(71e12));
  CHECK(Resolved("24G:Ada").generation == GpuGeneration::kAda);
  // The bare size stays the Turing class (T4).
  CHECK(Resolved("24G").generation == GpuGeneration::kTuring);
  CHECK_FALSE(Resolved("24G").supports_bf16);
  CHECK(ResolveGpu("24G:blackwell").error().message.find("unknown GPU class 'blackwell'") == 0);
  CHECK(GenericGpuText(Resolved("A100")).empty());
  CHECK(GenericGpuText(Resolved("24G")).find("generic Turing class: throughput of the NVIDIA T4") ==
        0);
}

TEST_CASE("unknown GPU names list the known ones, bad sizes say why", "[gpu_specs]") {
  Expected<GpuSpec> unknown = ResolveGpu("B200X");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message.find("unknown GPU 'B200X'") == 0);
  CHECK(unknown.error().message.find("A100-80GB") != std::string::npos);
  CHECK(unknown.error().message.find("RTX3090") != std::string::npos);
  Expected<GpuSpec> bad_size = ResolveGpu("24Q");
  REQUIRE_FALSE(bad_size.ok());
  CHECK(bad_size.error().message.find("invalid memory size '24Q'") == 0);
  CHECK_FALSE(ResolveGpu("0G").ok());
  CHECK_FALSE(ResolveGpu("-24G").ok());
  CHECK_FALSE(ResolveGpu("").ok());
}

}  // namespace
}  // namespace memplan
