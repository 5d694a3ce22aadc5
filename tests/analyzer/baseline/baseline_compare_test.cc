// CompareToBaseline on hand-derived MLP results (baseline_test_models.h): an added layer and a
// widened tensor are caught, with the nodes whose saved activations grew named.

#include <catch2/catch.hpp>

#include <utility>

#include "analyzer/baseline/check_report.h"
#include "tests/analyzer/baseline/baseline_test_models.h"

namespace memplan {
namespace {

using baseline_test::BaselineOf;
using baseline_test::Entry;

Tolerance TwoPercent() { return *ParseTolerance("2%"); }

// The MLP's recorded result against `edited`, the current one, within 2%.
CheckReport CompareMlpTo(MemoryResult edited) {
  return CompareToBaseline(BaselineOf({Entry("mlp", baseline_test::MlpResult())}),
                           BaselineOf({Entry("mlp", std::move(edited))}), TwoPercent());
}

TEST_CASE("An unchanged model passes", "[baseline]") {
  Baseline recorded = BaselineOf({Entry("mlp", baseline_test::MlpResult())});
  CheckReport report = CompareToBaseline(recorded, recorded, TwoPercent());
  REQUIRE(report.configurations.size() == 1);
  const ConfigurationCheck& check = report.configurations[0];
  CHECK(check.status == CheckStatus::kPass);
  CHECK(check.PeakChange() == 0);
  CHECK(check.grown_nodes.empty());
  CHECK_FALSE(check.flags_changed);
  CHECK_FALSE(report.Failed());
  CHECK(report.ExitCode() == 0);
}

TEST_CASE("A model edited to add a layer regresses and names the new node", "[baseline]") {
  CheckReport report = CompareMlpTo(baseline_test::MlpWithAddedLayerResult());
  REQUIRE(report.configurations.size() == 1);
  const ConfigurationCheck& check = report.configurations[0];
  CHECK(check.status == CheckStatus::kRegression);
  CHECK(check.PeakChange() == 2187744 - 1126880);  // 1,060,864 B
  CHECK(check.allowed_bytes == 22537);             // floor(1,126,880 * 2 / 100)
  // Only relu2's output is newly saved; fc2 and fc3 save nothing of their own.
  REQUIRE(check.grown_nodes.size() == 1);
  CHECK(check.grown_node_count == 1);
  CHECK(check.grown_nodes[0].node == "/relu2/Relu");
  CHECK(check.grown_nodes[0].recorded_bytes == 0);
  CHECK(check.grown_nodes[0].current_bytes == 8192);  // 8 * 256 * 4
  CHECK(check.grown_nodes[0].IsNew());
  CHECK(report.Failed());
  CHECK(report.ExitCode() == 1);
}

TEST_CASE("A widened tensor regresses and names the node that saves it", "[baseline]") {
  CheckReport report = CompareMlpTo(baseline_test::MlpWidenedResult());
  const ConfigurationCheck& check = report.configurations.at(0);
  CHECK(check.status == CheckStatus::kRegression);
  CHECK(check.PeakChange() == 1404384 - 1126880);  // 277,504 B
  REQUIRE(check.grown_nodes.size() == 1);
  CHECK(check.grown_nodes[0].node == "/relu1/Relu");
  CHECK(check.grown_nodes[0].Growth() == 2048);  // 8 * (320 - 256) * 4
  CHECK_FALSE(check.grown_nodes[0].IsNew());
}

TEST_CASE("Grown nodes are ordered by growth, then name, and capped", "[baseline]") {
  MemoryResult before;
  before.peak_bytes = 100;
  before.saved_bytes_by_node = {{"a", 10}, {"b", 10}, {"c", 10}, {"shrinks", 50}};
  MemoryResult after = before;
  after.saved_bytes_by_node = {{"a", 30}, {"b", 50}, {"c", 30}, {"shrinks", 1}, {"d", 5}};
  CompareOptions options;
  options.top_nodes = 2;
  CheckReport report = CompareToBaseline(BaselineOf({Entry("x", before)}),
                                         BaselineOf({Entry("x", after)}), TwoPercent(), options);
  const ConfigurationCheck& check = report.configurations.at(0);
  // Growths: b +40, a +20, c +20, d +5 (new); "shrinks" is not a growth.
  CHECK(check.grown_node_count == 4);
  REQUIRE(check.grown_nodes.size() == 2);
  CHECK(check.grown_nodes[0].node == "b");
  CHECK(check.grown_nodes[1].node == "a");  // ties broken by name: a before c
}

TEST_CASE("Missing and new configurations, and changed flags", "[baseline]") {
  Baseline recorded = BaselineOf(
      {Entry("kept", baseline_test::MlpResult()), Entry("dropped", baseline_test::MlpResult())});
  BaselineEntry changed = Entry("kept", baseline_test::MlpResult());
  changed.config.flags.precision = "fp16";
  Baseline current = BaselineOf({Entry("added", baseline_test::MlpResult()), changed});
  CheckReport report = CompareToBaseline(recorded, current, TwoPercent());
  REQUIRE(report.configurations.size() == 3);
  // Baseline order first, then configurations only the current run has.
  CHECK(report.configurations[0].name == "kept");
  CHECK(report.configurations[0].status == CheckStatus::kPass);
  CHECK(report.configurations[0].flags_changed);
  CHECK(report.configurations[1].name == "dropped");
  CHECK(report.configurations[1].status == CheckStatus::kMissing);
  CHECK(report.configurations[2].name == "added");
  CHECK(report.configurations[2].status == CheckStatus::kNew);
  CHECK(report.Failed());  // a missing configuration fails the check
  CHECK(report.Count(CheckStatus::kNew) == 1);

  CheckReport only_new = CompareToBaseline(BaselineOf({}), current, TwoPercent());
  CHECK_FALSE(only_new.Failed());  // new configurations alone pass
}

}  // namespace
}  // namespace memplan
