// The per-generation parts of a GPU's fixed overhead (analyzer/cost/gpu_specs.h): the cuBLAS
// workspace per handle and the CUDA context beside it. Figures derived by hand from the cuBLAS
// reference and PyTorch's CUBLAS_WORKSPACE_CONFIG default.

#include <catch2/catch.hpp>

#include "analyzer/cost/gpu_specs.h"

namespace memplan {
namespace {

TEST_CASE("cuBLAS workspace per handle: 32 MiB on Hopper, 8 MiB + 128 KiB before", "[gpu_specs]") {
  // 32 MiB = 33554432 B.
  CHECK(CublasWorkspaceBytes(GpuGeneration::kHopper) == 33554432);
  // ":4096:2:16:8" = 2 x 4096 KiB + 8 x 16 KiB = 8192 KiB + 128 KiB = 8320 KiB = 8519680 B.
  for (GpuGeneration g :
       {GpuGeneration::kVolta, GpuGeneration::kTuring, GpuGeneration::kAmpere, GpuGeneration::kAda})
    CHECK(CublasWorkspaceBytes(g) == 8519680);
}

TEST_CASE("the GPU table splits the context into CUDA context and two cuBLAS workspaces",
          "[gpu_specs]") {
  const GpuSpec h100 = ResolveGpu("H100").value();
  CHECK(h100.generation == GpuGeneration::kHopper);
  CHECK(h100.cublas_workspace_bytes == 33554432);
  // 512 MiB - 2 x 32 MiB = 448 MiB = 469762048 B.
  CHECK(h100.cuda_context_bytes == 469762048);
  CHECK(ResolveGpu("H200").value().cublas_workspace_bytes == 33554432);

  const GpuSpec a100 = ResolveGpu("A100").value();
  CHECK(a100.generation == GpuGeneration::kAmpere);
  CHECK(a100.cublas_workspace_bytes == 8519680);
  // 536870912 - 2 x 8519680 = 519831552 B (495.75 MiB).
  CHECK(a100.cuda_context_bytes == 519831552);
  CHECK(ResolveGpu("V100").value().generation == GpuGeneration::kVolta);
  CHECK(ResolveGpu("RTX4090").value().generation == GpuGeneration::kAda);
  // A GPU given by size is a T4 (Turing) in every figure but memory.
  CHECK(ResolveGpu("24G").value().generation == GpuGeneration::kTuring);
  CHECK(ResolveGpu("24G").value().cublas_workspace_bytes == 8519680);

  for (const GpuSpec& gpu : KnownGpus()) {
    INFO(gpu.name);
    CHECK(gpu.context_bytes ==
          gpu.cuda_context_bytes + kCublasHandlesPerTraining * gpu.cublas_workspace_bytes);
  }
}

}  // namespace
}  // namespace memplan
