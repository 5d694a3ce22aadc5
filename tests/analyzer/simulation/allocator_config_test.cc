// PYTORCH_CUDA_ALLOC_CONF as the model reads it (analyzer/simulation/allocator_config.h): the
// limits are CUDAAllocatorConfig's (max_split_size_mb > 20, divisions a power of two).

#include <catch2/catch.hpp>
#include <string>

#include "analyzer/simulation/allocator_config.h"

namespace memplan {
namespace {

TEST_CASE("allocator config: the modelled options and their round trip", "[allocator]") {
  Expected<AllocatorConfig> c =
      ParseAllocatorConfig(" max_split_size_mb:128, roundup_power2_divisions:4 ,");
  REQUIRE(c.ok());
  CHECK(c->caching.max_split_size == 128 * (int64_t{1} << 20));
  CHECK(c->caching.roundup_power2_divisions == 4);
  CHECK_FALSE(c->expandable_segments);
  CHECK(AllocatorConfigString(*c) == "max_split_size_mb:128,roundup_power2_divisions:4");
  Expected<AllocatorConfig> e = ParseAllocatorConfig("expandable_segments:True");
  REQUIRE(e.ok());
  CHECK(e->expandable_segments);
  CHECK(AllocatorConfigString(*e) == "expandable_segments:True");
  Expected<AllocatorConfig> none = ParseAllocatorConfig("");
  REQUIRE(none.ok());
  CHECK(none->caching.max_split_size == INT64_MAX);
  CHECK(AllocatorConfigString(*none).empty());
}

TEST_CASE("allocator config: what PyTorch refuses or memplan does not model", "[allocator]") {
  auto error_of = [](const char* text) {
    Expected<AllocatorConfig> c = ParseAllocatorConfig(text);
    REQUIRE_FALSE(c.ok());
    return c.error().message;
  };
  CHECK(error_of("max_split_size_mb:20").find("more than 20") != std::string::npos);
  CHECK(error_of("max_split_size_mb:-5").find("whole number") != std::string::npos);
  CHECK(error_of("roundup_power2_divisions:3").find("power of two") != std::string::npos);
  CHECK(error_of("roundup_power2_divisions:[256:1,>:4]").find("per-interval") != std::string::npos);
  CHECK(error_of("expandable_segments:yes").find("True or False") != std::string::npos);
  CHECK(error_of("garbage_collection_threshold:0.6").find("not modelled") != std::string::npos);
  CHECK(error_of("backend:cudaMallocAsync").find("'backend'") != std::string::npos);
  CHECK(error_of("max_split_size_mb").find("not key:value") != std::string::npos);
}

}  // namespace
}  // namespace memplan
