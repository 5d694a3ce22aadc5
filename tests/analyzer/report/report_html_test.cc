#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analyzer/alternatives/alternatives_report.h"
#include "analyzer/report/html_report.h"
#include "tests/analyzer/report/report_test_plan.h"

namespace memplan {
namespace {

const std::string kDataOpen = "<script type=\"application/json\" id=\"memplan-data\">";

nlohmann::json EmbeddedData(const std::string& html) {
  size_t begin = html.find(kDataOpen);
  REQUIRE(begin != std::string::npos);
  begin += kDataOpen.size();
  size_t end = html.find("</script>", begin);
  REQUIRE(end != std::string::npos);
  return nlohmann::json::parse(html.substr(begin, end - begin));
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

TEST_CASE("the HTML report embeds the analysis and the timeline", "[report]") {
  testing::ReportFixture fixture;
  const std::string html = RenderHtmlReport(fixture.report);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  nlohmann::json data = EmbeddedData(html);
  CHECK(data["analysis"]["schema"] == "memplan/1");
  CHECK(data["analysis"]["peak_bytes"] == 280);
  CHECK(data["analysis"]["budget_bytes"] == 300);
  CHECK(data["chosen_candidate"] == 1);  // candidates: m=2, then the chosen m=4

  const nlohmann::json& t = data["timeline"];
  CHECK(t["points"] == 6);
  // Totals of the fixture's rows (report_test_plan.h): 100, 120, 170, 180, 280, 260.
  CHECK(t["live"] == nlohmann::json({100, 120, 170, 180, 280, 260}));
  CHECK(t["index"] == nlohmann::json({0, 1, 2, 3, 4, 5}));
  CHECK(t["by_category"]["optimizer_state"] == nlohmann::json({0, 0, 0, 0, 0, 60}));
  CHECK(t["categories"].size() == 6);
  CHECK(t["by_category"].count("workspace") == 0);
  CHECK(t["name"][4] == "backward MatMul_1");
  CHECK(t["bands"][2] == nlohmann::json({4, 5, "backward", 0, 0}));

  // The static timeline is inlined (without its namespace URL), and the frontier chart's canvas
  // is there for the script.
  CHECK(Count(html, "<path class=\"area\"") == 6);
  CHECK(Count(html, "id=\"timeline-svg\"") == 1);
  CHECK(Count(html, "id=\"frontier-svg\"") == 1);
  CHECK(html.find("data-rendered=\"false\"") != std::string::npos);
}

TEST_CASE("the HTML report is self-contained", "[report]") {
  testing::ReportFixture fixture;
  const std::string html = RenderHtmlReport(fixture.report);
  // No URL of any kind: nothing to fetch, nothing that breaks offline.
  CHECK(html.find("http:") == std::string::npos);
  CHECK(html.find("https:") == std::string::npos);
  CHECK(html.find("//cdn") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find(" src=") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(html.find("url(") == std::string::npos);
  // One stylesheet, the data, and one script.
  CHECK(Count(html, "<style>") == 1);
  CHECK(Count(html, "<script") == 2);
}

TEST_CASE("the HTML report is deterministic", "[report]") {
  testing::ReportFixture first;
  testing::ReportFixture second;
  CHECK(RenderHtmlReport(first.report) == RenderHtmlReport(second.report));
}

TEST_CASE("the HTML report escapes names from the model", "[report]") {
  testing::ReportFixture fixture;
  fixture.report.model_name = "<b>&model";
  fixture.plan.program.steps[4].name = "</script><script>alert(1)";
  fixture.plan.simulation.peak_step_name = "backward </script><script>alert(1)";
  fixture.report.advice.push_back({"test-advice", "use m < 8 & k > 2"});
  const std::string html = RenderHtmlReport(fixture.report);
  CHECK(html.find("<b>&model") == std::string::npos);
  CHECK(html.find("&lt;b&gt;&amp;model") != std::string::npos);
  CHECK(html.find("use m &lt; 8 &amp; k &gt; 2") != std::string::npos);
  // Only the two real </script> end tags remain; the name is \u003c-escaped in the JSON.
  CHECK(Count(html, "</script>") == 2);
  CHECK(Count(html, "<script") == 2);
  nlohmann::json data = EmbeddedData(html);
  CHECK(data["timeline"]["name"][4] == "backward </script><script>alert(1)");
  CHECK(data["analysis"]["advice"][0]["id"] == "test-advice");
}

TEST_CASE("the chosen candidate is found by its configuration", "[report]") {
  testing::ReportFixture fixture;
  CHECK(ChosenCandidateIndex(fixture.plan) == 1);
  fixture.plan.candidates[1].recompute = RecomputeLabel::kSqrt;
  CHECK(ChosenCandidateIndex(fixture.plan) == -1);
}

TEST_CASE("the HTML report shows the alternatives analyze prints", "[report]") {
  testing::ReportFixture fixture;
  CHECK(RenderHtmlReport(fixture.report).find("id=\"alternatives\"") == std::string::npos);
  AlternativesReport alternatives;
  alternatives.asked.gpu = "24G";
  Alternative sharded;
  sharded.kinds = {AlternativeKind::kSharding};
  sharded.change.gpus = 8;
  sharded.change.parallel = "zero3";
  sharded.plan.fits = false;
  sharded.plan.gpus = 8;
  sharded.plan.budget_bytes = int64_t{47} << 29;       // 23.5 GiB
  sharded.plan.chosen.peak_bytes = int64_t{50} << 30;  // 50.0 GiB
  alternatives.search.planned = {sharded};
  fixture.report.alternatives = &alternatives;
  const std::string html = RenderHtmlReport(fixture.report);
  // The text analyze prints, HTML-escaped, in its own section.
  CHECK(html.find("<section id=\"alternatives\">\n<h2>What would fit</h2>") != std::string::npos);
  CHECK(html.find("does not fit: --gpus 8 --parallel zero3 (peak 50.0 GiB of 23.5 GiB)") !=
        std::string::npos);
  CHECK(EmbeddedData(html)["analysis"]["alternatives"].size() == 1);
}

}  // namespace
}  // namespace memplan
