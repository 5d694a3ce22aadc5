// The Chrome trace of the tiny recorded trace (tests/profiler/recorded_traces.h): it parses, has
// one slice per kernel/memcpy/memset on the GPU tracks, step slices, and the memory counter.

#include "profiler/chrome_trace.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/profiler/recorded_traces.h"

namespace memplan::profiler {
namespace {

using nlohmann::json;

std::vector<json> EventsWhere(const json& trace, const std::string& key, const std::string& value) {
  std::vector<json> found;
  for (const json& event : trace.at("traceEvents")) {
    if (event.contains(key) && event.at(key) == value) found.push_back(event);
  }
  return found;
}

json TinyChromeTrace(int64_t baseline = 0) {
  AttributionOptions options;
  options.baseline_device_bytes = baseline;
  const ActivityTrace trace = testing::TinyTrace();
  const StepTable steps = testing::TinyStepTable();
  auto profile = Attribute(trace, steps, options);
  REQUIRE(profile.ok());
  return json::parse(ChromeTraceJson(trace, steps, *profile));
}

TEST_CASE("chrome trace has one slice per kernel with step names", "[profiler][trace]") {
  const json trace = TinyChromeTrace();
  const std::vector<json> kernels = EventsWhere(trace, "cat", "kernel");
  REQUIRE(kernels.size() == 7);
  // The first kernel, fc1's GEMM: 1000-1600 ns, the origin is the earliest record (t=50), so it
  // starts at (1000 - 50) / 1000 = 0.95 us and lasts 0.6 us.
  const json& gemm = kernels[0];
  CHECK(gemm.at("name") == "fc1_gemm");
  CHECK(gemm.at("ph") == "X");
  CHECK(gemm.at("pid") == 1);  // GPU 0
  CHECK(gemm.at("tid") == 7);  // stream 7
  CHECK(gemm.at("ts").get<double>() == Approx(0.95));
  CHECK(gemm.at("dur").get<double>() == Approx(0.6));
  CHECK(gemm.at("args").at("node") == "fc1");
  CHECK(gemm.at("args").at("phase") == "forward");
  CHECK(gemm.at("args").at("correlation_id") == 22);
  // The stray kernel no step pushed has no step args.
  CHECK(kernels[6].at("name") == "stray");
  CHECK_FALSE(kernels[6].at("args").contains("step"));

  CHECK(EventsWhere(trace, "cat", "memcpy").size() == 1);
  CHECK(EventsWhere(trace, "cat", "memset").size() == 1);
  // Streams 7 and 8 get named tracks.
  CHECK(EventsWhere(trace, "name", "thread_name").size() == 3);  // steps, stream 7, stream 8
}

TEST_CASE("chrome trace step slices span their device activity", "[profiler][trace]") {
  const json trace = TinyChromeTrace();
  const std::vector<json> steps = EventsWhere(trace, "cat", "step");
  // Steps with device activity: load (memcpy), fc1, relu, relu bwd, fc1 bwd, optimizer; the
  // loss step launched nothing and has no host interval, so it has no slice.
  REQUIRE(steps.size() == 6);
  const json& fc1_backward = steps[4];
  CHECK(fc1_backward.at("name") == "fc1");
  CHECK(fc1_backward.at("args").at("phase") == "backward");
  // fc1_dgrad starts at 2200 and fc1_wgrad ends at 3300: (2200 - 50) / 1000 = 2.15 us, 1.1 us.
  CHECK(fc1_backward.at("ts").get<double>() == Approx(2.15));
  CHECK(fc1_backward.at("dur").get<double>() == Approx(1.1));
}

TEST_CASE("chrome trace memory counter follows every allocation and release", "[profiler][trace]") {
  const json trace = TinyChromeTrace(/*baseline=*/1000000);
  const std::vector<json> samples = EventsWhere(trace, "name", "device memory");
  // The live column of recorded_traces.h, plus the baseline; the pre-trace release and the
  // pinned host buffer give no sample.
  const std::vector<int64_t> expected = {1000, 5000, 5512, 9512, 9768, 9512, 5512,
                                         5516, 9516, 5516, 5512, 1512, 512};
  REQUIRE(samples.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(samples[i].at("ph") == "C");
    CHECK(samples[i].at("args").at("bytes").get<int64_t>() == 1000000 + expected[i]);
  }
  CHECK(samples[4].at("ts").get<double>() == Approx(0.26));  // t=310: (310 - 50) / 1000
}

TEST_CASE("chrome trace output is deterministic", "[profiler][trace]") {
  const ActivityTrace trace = testing::TinyTrace();
  const StepTable steps = testing::TinyStepTable();
  auto first = Attribute(trace, steps);
  auto second = Attribute(trace, steps);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(ChromeTraceJson(trace, steps, *first) == ChromeTraceJson(trace, steps, *second));
}

}  // namespace
}  // namespace memplan::profiler
