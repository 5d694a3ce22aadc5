// profile.json: what the writer emits for the tiny recorded trace, that the reader gets the same
// numbers back, and that malformed profiles are rejected with a message naming the problem.

#include "profiler/profile_json.h"

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "tests/profiler/recorded_traces.h"

namespace memplan::profiler {
namespace {

using nlohmann::json;

constexpr double kNs = 1e-9;

std::filesystem::path TempPath(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("memplan_profiler_test_" + name);
}

AttributedProfile TinyProfile() {
  AttributionOptions options;
  options.baseline_device_bytes = 100000;
  auto profile = Attribute(testing::TinyTrace(), testing::TinyStepTable(), options);
  REQUIRE(profile.ok());
  return *profile;
}

TEST_CASE("profile json carries the attributed numbers", "[profiler]") {
  const json document = ProfileToJson(TinyProfile(), {"tiny.onnx", "test GPU"});
  CHECK(document.at("schema") == "memplan-profile/1");
  CHECK(document.at("model") == "tiny.onnx");
  CHECK(document.at("device_peak_bytes") == 109768);  // see attribution_test.cc
  CHECK(document.at("library_bytes_at_peak") == 512);
  CHECK(document.at("activation_bytes") == 4004);
  REQUIRE(document.at("nodes").size() == 2);
  const json& fc1 = document.at("nodes")[0];
  CHECK(fc1.at("name") == "fc1");
  CHECK(fc1.at("forward_seconds").get<double>() == Approx(600 * kNs));
  CHECK(fc1.at("backward_seconds").get<double>() == Approx(1100 * kNs));
  CHECK(fc1.at("workspace_bytes") == 512);
}

TEST_CASE("profile json round-trips through a file", "[profiler]") {
  const std::filesystem::path path = TempPath("roundtrip.json");
  REQUIRE(WriteProfile(path, TinyProfile(), {"tiny.onnx", "test GPU"}).ok());
  auto measured = ReadProfile(path);
  std::filesystem::remove(path);
  REQUIRE(measured.ok());
  CHECK(measured->device == "test GPU");
  CHECK(measured->device_peak_bytes == 109768);
  CHECK(measured->activation_bytes == 4004);
  REQUIRE(measured->nodes.size() == 2);
  const MeasuredNode& relu = measured->nodes.at("relu");
  CHECK(relu.forward_seconds == Approx(100 * kNs));
  CHECK(relu.backward_seconds == Approx(160 * kNs));  // kernel 150 + memset 10
  CHECK(relu.workspace_bytes == 256);
  CHECK(relu.activation_bytes == 4000);
}

json MinimalProfile() {
  return json{{"schema", "memplan-profile/1"},
              {"device_peak_bytes", 10},
              {"nodes",
               {{{"name", "fc1"},
                 {"forward_seconds", 0.5},
                 {"backward_seconds", 1.0},
                 {"workspace_bytes", 0}}}}};
}

TEST_CASE("a minimal profile parses with defaults", "[profiler]") {
  auto measured = ParseProfile(MinimalProfile(), "p.json");
  REQUIRE(measured.ok());
  CHECK(measured->nodes.at("fc1").forward_seconds == 0.5);
  CHECK(measured->nodes.at("fc1").recompute_seconds == 0);
  CHECK(measured->activation_bytes == 0);
}

TEST_CASE("bad profiles are errors that name the problem", "[profiler]") {
  json document = MinimalProfile();
  std::string expected;
  SECTION("not an object") {
    document = json::array();
    expected = "p.json: a profile must be a JSON object";
  }
  SECTION("wrong schema") {
    document["schema"] = "memplan/1";
    expected = "p.json: unsupported schema \"memplan/1\" (expected \"memplan-profile/1\")";
  }
  SECTION("missing peak") {
    document.erase("device_peak_bytes");
    expected = "p.json: missing \"device_peak_bytes\"";
  }
  SECTION("nodes not an array") {
    document["nodes"] = json::object();
    expected = "p.json: \"nodes\" must be an array";
  }
  SECTION("negative seconds") {
    document["nodes"][0]["backward_seconds"] = -1.0;
    expected = "p.json: nodes[0]: \"backward_seconds\" must be a non-negative number of seconds";
  }
  SECTION("fractional bytes") {
    document["nodes"][0]["workspace_bytes"] = 1.5;
    expected =
        "p.json: nodes[0]: \"workspace_bytes\" must be a non-negative integer number of bytes";
  }
  SECTION("seconds as a string") {
    document["nodes"][0]["forward_seconds"] = "fast";
    expected = "p.json: nodes[0]: \"forward_seconds\" must be a non-negative number of seconds";
  }
  SECTION("a node twice") {
    document["nodes"].push_back(document["nodes"][0]);
    expected = "p.json: nodes[1]: node \"fc1\" is listed twice";
  }
  SECTION("a node without a name") {
    document["nodes"][0].erase("name");
    expected = "p.json: nodes[0]: missing \"name\"";
  }
  auto measured = ParseProfile(document, "p.json");
  REQUIRE_FALSE(measured.ok());
  CHECK(measured.error().message == expected);
}

TEST_CASE("unreadable and invalid profile files are errors", "[profiler]") {
  auto missing = ReadProfile(TempPath("does_not_exist.json"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("cannot read") != std::string::npos);

  const std::filesystem::path path = TempPath("garbage.json");
  std::ofstream(path) << "{\"schema\": ";
  auto garbage = ReadProfile(path);
  std::filesystem::remove(path);
  REQUIRE_FALSE(garbage.ok());
  CHECK(garbage.error().message.find("is not valid JSON") != std::string::npos);
}

}  // namespace
}  // namespace memplan::profiler
