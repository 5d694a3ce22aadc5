// --cuda-context (analyzer/cost/gpu_specs.h SetCudaContext): the context by module loading, or a
// measured size; the cuBLAS workspaces of the generation are added either way. Figures by hand.

#include <catch2/catch.hpp>

#include "analyzer/cost/gpu_specs.h"

namespace memplan {
namespace {

TEST_CASE("the CUDA context follows the module-loading figure", "[gpu_specs]") {
  GpuSpec v100 = ResolveGpu("V100").value();
  // Lazy is the table's default: 512 MiB - 2 x 8519680 = 519831552 B, context 536870912.
  REQUIRE(SetCudaContext(v100, "lazy").ok());
  CHECK(v100.cuda_context_figure == "lazy");
  CHECK(v100.cuda_context_bytes == 519831552);
  CHECK(v100.context_bytes == 536870912);
  // Eager: 1331 MiB = 1395654656 B of context + 2 x 8519680 of workspaces = 1412694016.
  REQUIRE(SetCudaContext(v100, "eager").ok());
  CHECK(v100.cuda_context_figure == "eager");
  CHECK(v100.cuda_context_bytes == 1395654656);
  CHECK(v100.context_bytes == 1412694016);
  // A size: Hopper's two 32 MiB workspaces on top, 2 GiB + 64 MiB = 2214592512.
  GpuSpec h100 = ResolveGpu("H100").value();
  REQUIRE(SetCudaContext(h100, "2G").ok());
  CHECK(h100.cuda_context_figure == "--cuda-context");
  CHECK(h100.cuda_context_bytes == 2147483648);
  CHECK(h100.context_bytes == 2214592512);
}

TEST_CASE("an unknown context figure names the choices", "[gpu_specs]") {
  GpuSpec a100 = ResolveGpu("A100").value();
  const Status bad = SetCudaContext(a100, "lots");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "expected lazy, eager or a size such as 1.3G, got 'lots'");
  // Nothing changed.
  CHECK(a100.cuda_context_figure == "lazy");
  CHECK(a100.context_bytes == 536870912);
}

}  // namespace
}  // namespace memplan
