#include "analyzer/cost/gpu_specs.h"

#include <cctype>

#include "analyzer/cost/generic_gpu_class.h"
#include "analyzer/text/memory_size.h"

namespace memplan {

int64_t CublasWorkspaceBytes(GpuGeneration generation) {
  if (generation == GpuGeneration::kHopper) return int64_t{32} << 20;  // 32 MiB
  return (int64_t{8} << 20) + (int64_t{128} << 10);                    // 8 MiB + 128 KiB
}

int64_t CudaContextBytes(GpuGeneration generation) {
  return kDefaultContextBytes - kCublasHandlesPerTraining * CublasWorkspaceBytes(generation);
}

Status SetCudaContext(GpuSpec& spec, std::string_view figure) {
  int64_t bytes = 0;
  std::string name;
  if (figure == "lazy") {
    bytes = CudaContextBytes(spec.generation);
    name = "lazy";
  } else if (figure == "eager") {
    bytes = kEagerCudaContextBytes;
    name = "eager";
  } else {
    auto size = ParseMemorySize(figure);
    if (!size.ok())
      return MakeError("expected lazy, eager or a size such as 1.3G, got '" + std::string(figure) +
                       "'");
    bytes = *size;
    name = "--cuda-context";
  }
  spec.cuda_context_bytes = bytes;
  spec.cuda_context_figure = name;
  spec.context_bytes = bytes + kCublasHandlesPerTraining * spec.cublas_workspace_bytes;
  return OkStatus();
}

namespace {

constexpr double kTera = 1e12;
constexpr double kGigabytesPerSecond = 1e9;

// memory_bytes: the total CUDA reports (cudaMemGetInfo, nvidia-smi "Total"), which is what a
// process can ever allocate. It is below the datasheet capacity where the driver reserves memory
// (ECC on GDDR6 parts such as the T4: 16 GB datasheet, 15360 MiB usable; the H100's 80 GB shows
// as 81559 MiB). Throughput: the datasheet's dense peaks (sparsity figures halved).
GpuSpec Entry(std::string name, std::string description, GpuGeneration generation,
              int64_t memory_mib, double fp32_tflops, double tf32_tflops, double fp16_tflops,
              double bandwidth_gb_per_s, bool bf16) {
  GpuSpec spec;
  spec.name = std::move(name);
  spec.description = std::move(description);
  spec.memory_bytes = memory_mib * kMiB;
  spec.generation = generation;
  spec.cuda_context_bytes = CudaContextBytes(generation);
  spec.cublas_workspace_bytes = CublasWorkspaceBytes(generation);
  spec.context_bytes =
      spec.cuda_context_bytes + kCublasHandlesPerTraining * spec.cublas_workspace_bytes;
  spec.fp32_flops_per_second = fp32_tflops * kTera;
  spec.tf32_flops_per_second = tf32_tflops * kTera;
  spec.fp16_flops_per_second = fp16_tflops * kTera;
  spec.memory_bytes_per_second = bandwidth_gb_per_s * kGigabytesPerSecond;
  spec.supports_bf16 = bf16;
  return spec;
}

std::vector<GpuSpec> MakeTable() {
  std::vector<GpuSpec> gpus;
  // NVIDIA Ampere GA102 GPU Architecture whitepaper, Table 9 (GeForce RTX 3090): FP32 35.6
  // TFLOPS, TF32 tensor 35.6 dense, FP16 tensor with FP32 accumulate 71 dense (GeForce runs
  // FP32-accumulate at half rate), 936 GB/s GDDR6X, 24 GB.
  gpus.push_back(Entry("RTX3090", "NVIDIA GeForce RTX 3090 24GB", GpuGeneration::kAmpere, 24576,
                       35.6, 35.6, 71.0, 936,
                       /*bf16=*/true));
  // NVIDIA Ada Lovelace GPU Architecture whitepaper, Appendix A (GeForce RTX 4090): FP32 82.6,
  // TF32 82.6 dense, FP16 tensor with FP32 accumulate 165.2 dense, 1008 GB/s GDDR6X, 24 GB.
  gpus.push_back(Entry("RTX4090", "NVIDIA GeForce RTX 4090 24GB", GpuGeneration::kAda, 24564, 82.6,
                       82.6, 165.2, 1008,
                       /*bf16=*/true));
  // NVIDIA A100 Tensor Core GPU datasheet (SXM4): FP32 19.5, TF32 156, FP16/BF16 312 dense;
  // 1555 GB/s HBM2 (40GB), 2039 GB/s HBM2e (80GB).
  gpus.push_back(Entry("A100-40GB", "NVIDIA A100 40GB SXM4", GpuGeneration::kAmpere, 40960, 19.5,
                       156, 312, 1555, true));
  gpus.push_back(Entry("A100-80GB", "NVIDIA A100 80GB SXM4", GpuGeneration::kAmpere, 81920, 19.5,
                       156, 312, 2039, true));
  // NVIDIA H100 Tensor Core GPU datasheet (H100 SXM): FP32 67, TF32 989 and FP16/BF16 1979 "with
  // sparsity" (dense: half), 3.35 TB/s HBM3, 80 GB.
  gpus.push_back(Entry("H100", "NVIDIA H100 80GB SXM5", GpuGeneration::kHopper, 81559, 67, 494.5,
                       989.5, 3350, true));
  // NVIDIA H200 Tensor Core GPU datasheet (H200 SXM): the H100 SXM's compute; 141 GB HBM3e
  // (143771 MiB usable) at 4.8 TB/s.
  gpus.push_back(Entry("H200", "NVIDIA H200 141GB SXM", GpuGeneration::kHopper, 143771, 67, 494.5,
                       989.5, 4800, true));
  // NVIDIA Tesla V100 datasheet (SXM2): FP32 15.7, tensor (FP16) 125 TFLOPS, 900 GB/s HBM2.
  // Volta has neither TF32 nor BF16.
  gpus.push_back(Entry("V100-16GB", "NVIDIA Tesla V100 16GB SXM2", GpuGeneration::kVolta, 16160,
                       15.7, 15.7, 125, 900,
                       /*bf16=*/false));
  gpus.push_back(Entry("V100-32GB", "NVIDIA Tesla V100 32GB SXM2", GpuGeneration::kVolta, 32768,
                       15.7, 15.7, 125, 900,
                       /*bf16=*/false));
  // NVIDIA L4 Tensor Core GPU datasheet: FP32 30.3, TF32 120 and FP16/BF16 242 with sparsity
  // (dense: 60, 121), 300 GB/s GDDR6, 24 GB.
  gpus.push_back(
      Entry("L4", "NVIDIA L4 24GB", GpuGeneration::kAda, 23034, 30.3, 60, 121, 300, true));
  // NVIDIA T4 Tensor Core GPU datasheet: FP32 8.1, mixed-precision (FP16/FP32) 65 TFLOPS,
  // 320 GB/s GDDR6, 16 GB (15 GiB usable with ECC on). Turing has neither TF32 nor BF16.
  gpus.push_back(Entry("T4", "NVIDIA T4 16GB", GpuGeneration::kTuring, 15360, 8.1, 8.1, 65, 320,
                       /*bf16=*/false));
  // NVIDIA A10 Tensor Core GPU datasheet: FP32 31.2, TF32 62.5, BF16/FP16 125 dense (250 with
  // sparsity), 600 GB/s GDDR6, 24 GB.
  gpus.push_back(
      Entry("A10", "NVIDIA A10 24GB", GpuGeneration::kAmpere, 23028, 31.2, 62.5, 125, 600, true));
  // NVIDIA RTX A6000 datasheet: FP32 38.7, tensor 309.7 TFLOPS with sparsity (FP16 dense 154.8,
  // TF32 dense 77.4 per the GA102 whitepaper), 768 GB/s GDDR6, 48 GB.
  gpus.push_back(Entry("A6000", "NVIDIA RTX A6000 48GB", GpuGeneration::kAmpere, 49140, 38.7, 77.4,
                       154.8, 768, true));
  return gpus;
}

struct Alias {
  const char* alias;
  const char* canonical;
};
// Short names people type. "A100" is the 80GB part (the common one in clouds now); "V100" the
// 16GB part (the original).
constexpr Alias kAliases[] = {
    {"A100", "A100-80GB"}, {"H100-80GB", "H100"},  {"H100-SXM", "H100"},    {"H200-141GB", "H200"},
    {"V100", "V100-16GB"}, {"RTX-A6000", "A6000"}, {"RTX-3090", "RTX3090"}, {"RTX-4090", "RTX4090"},
};

// Case-insensitive, ignoring '-', '_' and spaces: "rtx 3090", "RTX-3090" and "a100_80gb" match.
std::string NormalizeName(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

const GpuSpec* FindByName(std::string_view name) {
  std::string wanted = NormalizeName(name);
  for (const Alias& a : kAliases)
    if (NormalizeName(a.alias) == wanted) wanted = NormalizeName(a.canonical);
  for (const GpuSpec& gpu : KnownGpus())
    if (NormalizeName(gpu.name) == wanted) return &gpu;
  return nullptr;
}

}  // namespace

const std::vector<GpuSpec>& KnownGpus() {
  static const std::vector<GpuSpec> table = MakeTable();
  return table;
}

std::vector<std::string> KnownGpuNames() {
  std::vector<std::string> names;
  for (const GpuSpec& gpu : KnownGpus()) names.push_back(gpu.name);
  for (const Alias& a : kAliases) names.emplace_back(a.alias);
  return names;
}

Expected<GpuSpec> ResolveGpu(std::string_view size_or_name) {
  if (const GpuSpec* gpu = FindByName(size_or_name)) return *gpu;
  bool looks_like_size =
      !size_or_name.empty() && (std::isdigit(static_cast<unsigned char>(size_or_name[0])) ||
                                size_or_name[0] == '.' || size_or_name[0] == '-');
  if (looks_like_size) {
    // "24G" or "24G:ampere": a generic GPU of a class (analyzer/cost/generic_gpu_class.h).
    const size_t colon = size_or_name.find(':');
    GpuGeneration generation = kDefaultGenericClass;
    if (colon != std::string_view::npos) {
      const std::string_view class_name = size_or_name.substr(colon + 1);
      std::optional<GpuGeneration> parsed = ParseGenericClass(class_name);
      if (!parsed) {
        std::string classes;
        for (const NamedValue<GpuGeneration>& g : kGpuGenerationNames)
          classes += (classes.empty() ? "" : ", ") + std::string(g.name);
        return MakeError("unknown GPU class '" + std::string(class_name) + "' in '" +
                         std::string(size_or_name) + "': one of " + classes +
                         " (the throughput a GPU of that size is assumed to have)");
      }
      generation = *parsed;
      size_or_name = size_or_name.substr(0, colon);
    }
    MEMPLAN_TRY(int64_t bytes, ParseMemorySize(size_or_name));
    return GenericGpuOfClass(bytes, generation);
  }
  std::string known;
  for (const std::string& name : KnownGpuNames()) known += (known.empty() ? "" : ", ") + name;
  return MakeError(
      "unknown GPU '" + std::string(size_or_name) +
      "': give a memory size (24G = 24 GiB, 80GB = 80*10^9 bytes) or one of: " + known);
}

}  // namespace memplan
