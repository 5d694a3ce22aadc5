// Check-report formatters: exact output for a small case (the MLP with an added layer against
// its baseline, plus an unchanged configuration), and JUnit XML that parses.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/baseline/check_format.h"
#include "analyzer/baseline/check_report.h"
#include "tests/analyzer/baseline/baseline_test_models.h"

namespace memplan {
namespace {

using baseline_test::BaselineOf;
using baseline_test::Entry;

// mlp-added-layer: 1,126,880 B -> 2,187,744 B (+1,060,864 B = +94.14%), 2% allows 22,537 B.
// mlp: unchanged. FormatBytes: 1,126,880 B = 1.07 MiB -> "1.1 MiB"; 2,187,744 B = 2.09 MiB ->
// "2.1 MiB"; 1,060,864 B = 1.01 MiB -> "1.0 MiB"; 22,537 B = 22.01 KiB -> "22.0 KiB".
// The baseline records no plan (an old baseline), so every format says the configurations were
// re-planned and how to pin a plan (kNoPlanSentence).
const char* const kNoPlanSentence =
    "re-planned (the baseline records no plan: record it again to pin one)";

CheckReport SmallReport() {
  Baseline recorded = BaselineOf({Entry("mlp-added-layer", baseline_test::MlpResult()),
                                  Entry("mlp", baseline_test::MlpResult())});
  Baseline current = BaselineOf({Entry("mlp-added-layer", baseline_test::MlpWithAddedLayerResult()),
                                 Entry("mlp", baseline_test::MlpResult())});
  CompareOptions options;
  options.baseline_path = "memplan.baseline.json";
  return CompareToBaseline(recorded, current, *ParseTolerance("2%"), options);
}

TEST_CASE("Markdown report for a pull-request comment", "[baseline]") {
  // Breakdown (KiB = 1024 B): parameters 273,448 -> 536,616 (+263,168) = 267.0 -> 524.0
  // (+257.0); optimizer state 546,896 -> 1,073,232 = 534.1 KiB -> 1.0 MiB (+514.0 KiB);
  // activations 16 -> 24 KiB; transients 8 KiB both; other 8,512 B = 8.3 KiB both.
  const std::string expected =
      "## memplan memory check\n"
      "\n"
      ":x: **Memory regression** — 1 regression, 1 passed; tolerance 2%, baseline "
      "`memplan.baseline.json`.\n"
      "\n"
      "| status | configuration | baseline peak | current peak | change | saved activations grew "
      "at |\n"
      "|---|---|--:|--:|--:|---|\n"
      "| :x: regression | `mlp-added-layer` | 1.1 MiB | 2.1 MiB | +1.0 MiB (+94.14%) | "
      "`/relu2/Relu` +8.0 KiB (new) |\n"
      "| :white_check_mark: pass | `mlp` | 1.1 MiB | 1.1 MiB | 0 B (+0.00%) |  |\n"
      "\n"
      "<details><summary>Breakdown of `mlp-added-layer`</summary>\n"
      "\n" +
      std::string(kNoPlanSentence) +
      ".\n"
      "\n"
      "| category | baseline | current | change |\n"
      "|---|--:|--:|--:|\n"
      "| parameters | 267.0 KiB | 524.0 KiB | +257.0 KiB |\n"
      "| gradients | 267.0 KiB | 524.0 KiB | +257.0 KiB |\n"
      "| optimizer_state | 534.1 KiB | 1.0 MiB | +514.0 KiB |\n"
      "| activations | 16.0 KiB | 24.0 KiB | +8.0 KiB |\n"
      "| transients | 8.0 KiB | 8.0 KiB | 0 B |\n"
      "| workspace | 0 B | 0 B | 0 B |\n"
      "| other | 8.3 KiB | 8.3 KiB | 0 B |\n"
      "| saved for backward | 16.0 KiB | 24.0 KiB | +8.0 KiB |\n"
      "| **peak** | 1126880 B | 2187744 B | 1060864 B (tolerance 22537 B) |\n"
      "\n"
      "</details>\n";
  CHECK(FormatCheckReport(SmallReport(), CheckFormat::kMarkdown) == expected);
}

TEST_CASE("GitHub annotations, escaped per the workflow-command rules", "[baseline]") {
  // '%' in a message is written %25; the runner turns it back into '%'. The regression is
  // annotated on the configuration's model (models/mlp.onnx beside the baseline, what a pull
  // request changes), the summary on the baseline.
  const std::string expected =
      "::error file=models/mlp.onnx,title=memplan memory regression in "
      "mlp-added-layer::Predicted peak of mlp-added-layer grew from 1.1 MiB to 2.1 MiB "
      "(+1.0 MiB, +94.14%25), beyond the tolerance of 2%25 (22.0 KiB). Saved activations grew "
      "at: /relu2/Relu +8.0 KiB (new). Plan: " +
      std::string(kNoPlanSentence) +
      ".\n"
      "::error file=memplan.baseline.json,title=memplan check::2 configurations: 1 regression, 1 "
      "passed (tolerance 2%25).\n";
  CHECK(FormatCheckReport(SmallReport(), CheckFormat::kGithub) == expected);

  // Property values escape ':' and ','; messages escape newlines.
  Baseline recorded = BaselineOf({Entry("a,b:c", baseline_test::MlpResult())});
  CheckReport missing = CompareToBaseline(recorded, BaselineOf({}), *ParseTolerance("1%"));
  CHECK(FormatCheckReport(missing, CheckFormat::kGithub) ==
        "::error title=memplan configuration missing%3A a%2Cb%3Ac::a,b:c is in the baseline but "
        "was not analysed in this run.\n"
        "::error title=memplan check::1 configuration: 1 missing (tolerance 1%25).\n");
}

TEST_CASE("JUnit XML: one testcase per configuration, failure on regression", "[baseline]") {
  const std::string expected =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"memplan check\" tests=\"2\" failures=\"1\" errors=\"0\" "
      "skipped=\"0\">\n"
      "  <testsuite name=\"memplan check\" tests=\"2\" failures=\"1\" errors=\"0\" "
      "skipped=\"0\">\n"
      "    <properties>\n"
      "      <property name=\"tolerance\" value=\"2%\" />\n"
      "      <property name=\"baseline\" value=\"memplan.baseline.json\" />\n"
      "    </properties>\n"
      "    <testcase classname=\"memplan.check\" name=\"mlp-added-layer\">\n"
      // pugixml escapes '>' in text, not in attribute values (where XML allows it).
      "      <failure type=\"regression\" message=\"peak 1126880 B -> 2187744 B (+1060864 B, "
      "+94.14%), tolerance 22537 B\">model models/mlp.onnx\n" +
      std::string(kNoPlanSentence) +
      "\n"
      "saved activations of /relu2/Relu: 0 B -&gt; 8192 B\n"
      "</failure>\n"
      "    </testcase>\n"
      "    <testcase classname=\"memplan.check\" name=\"mlp\">\n"
      "      <system-out>pass: peak 1126880 B -&gt; 1126880 B (0 B, +0.00%), tolerance 22537 "
      "B\n" +
      std::string(kNoPlanSentence) +
      "\n</system-out>\n"
      "    </testcase>\n"
      "  </testsuite>\n"
      "</testsuites>\n";
  CHECK(FormatCheckReport(SmallReport(), CheckFormat::kJunit) == expected);
}

// A small well-formedness check independent of any XML library: every tag closes in order,
// attribute values are quoted, and '&' only starts a known entity or a character reference.
bool WellFormedXml(const std::string& xml, std::string& why) {
  std::vector<std::string> open;
  size_t i = 0;
  if (xml.rfind("<?xml ", 0) == 0) i = xml.find("?>") + 2;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      size_t end = xml.find(';', i);
      std::string entity = xml.substr(i, end == std::string::npos ? 1 : end - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" &&
          entity != "&apos;" && entity.rfind("&#", 0) != 0) {
        why = "bad entity " + entity;
        return false;
      }
      i = end + 1;
      continue;
    }
    if (xml[i] != '<') {
      if (xml[i] == '>') {
        why = "stray '>'";
        return false;
      }
      ++i;
      continue;
    }
    size_t end = i + 1;
    char quote = 0;
    for (; end < xml.size(); ++end) {
      if (quote != 0) {
        if (xml[end] == quote)
          quote = 0;
        else if (xml[end] == '<') {
          why = "'<' inside an attribute";
          return false;
        }
      } else if (xml[end] == '"' || xml[end] == '\'') {
        quote = xml[end];
      } else if (xml[end] == '>') {
        break;
      }
    }
    if (end >= xml.size()) {
      why = "unterminated tag";
      return false;
    }
    std::string tag = xml.substr(i + 1, end - i - 1);
    if (tag.empty()) {
      why = "empty tag";
      return false;
    }
    if (tag[0] == '/') {
      std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) {
        why = "closing " + name + " does not match";
        return false;
      }
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n\t")));
    }
    i = end + 1;
  }
  if (!open.empty()) why = "unclosed " + open.back();
  return open.empty();
}

TEST_CASE("JUnit XML is well formed, also with hostile names", "[baseline]") {
  MemoryResult grown = baseline_test::MlpWithAddedLayerResult();
  grown.saved_bytes_by_node["/a<b>&\"c'\x01"] = 99999;
  Baseline recorded = BaselineOf(
      {Entry("x<&>\"'", baseline_test::MlpResult()), Entry("gone", baseline_test::MlpResult())});
  Baseline current = BaselineOf({Entry("x<&>\"'", grown), Entry("new]]>", grown)});
  CompareOptions options;
  options.baseline_path = "a&b.json";
  CheckReport report = CompareToBaseline(recorded, current, *ParseTolerance("2%"), options);
  std::string xml = FormatCheckReport(report, CheckFormat::kJunit);
  std::string why;
  INFO(xml);
  CHECK(WellFormedXml(xml, why));
  INFO(why);
  CHECK(xml.find("failures=\"2\"") != std::string::npos);  // regression + missing
  CHECK(xml.find("skipped=\"1\"") != std::string::npos);   // the new configuration

  // The checker rejects what it should.
  std::string ignored;
  CHECK_FALSE(WellFormedXml("<a><b></a></b>", ignored));
  CHECK_FALSE(WellFormedXml("<a>x & y</a>", ignored));
  CHECK_FALSE(WellFormedXml("<a>", ignored));

  // And a real XML parser agrees, where Python's standard library is available.
  if (std::filesystem::exists("/usr/bin/python3")) {
    std::filesystem::path file = std::filesystem::temp_directory_path() /
                                 ("memplan_junit_" + std::to_string(::getpid()) + ".xml");
    {
      std::ofstream out(file, std::ios::binary);
      out << xml;
    }
    std::string command =
        "/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1])"
        ".getroot(); assert len(r.findall('./testsuite/testcase')) == 3\" " +
        file.string() + " >/dev/null 2>&1";
    CHECK(std::system(command.c_str()) == 0);
    std::filesystem::remove(file);
  }
}

TEST_CASE("Text report names the regression and the exact bytes", "[baseline]") {
  std::string text = FormatCheckReport(SmallReport(), CheckFormat::kText);
  CHECK(text.rfind("memplan check: 2 configurations against memplan.baseline.json, tolerance 2%\n"
                   "  1 regression, 1 passed\n\n"
                   "REGRESSION  mlp-added-layer (models/mlp.onnx)\n"
                   "  peak 1.1 MiB -> 2.1 MiB (+1.0 MiB, +94.14%); exact 1126880 -> 2187744 B, "
                   "tolerance 22537 B\n"
                   "  " +
                       std::string(kNoPlanSentence) +
                       "\n"
                       "  parameters          267.0 KiB -> 524.0 KiB (+257.0 KiB)\n",
                   0) == 0);
  CHECK(text.find("  saved activations grew at: /relu2/Relu +8.0 KiB (new)\n") !=
        std::string::npos);
  CHECK(text.find("\nPASS        mlp (models/mlp.onnx)\n") != std::string::npos);
  CHECK(text.substr(text.size() - 43) == "FAILED: memory regression beyond tolerance\n");
}

TEST_CASE("Check formats parse by name", "[baseline]") {
  CHECK(*ParseCheckFormat("github") == CheckFormat::kGithub);
  CHECK(*ParseCheckFormat("junit") == CheckFormat::kJunit);
  CHECK(*ParseCheckFormat("json") == CheckFormat::kJson);
  Expected<CheckFormat> bad = ParseCheckFormat("html");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "unknown check format 'html' (expected one of: text, markdown, github, junit, json)");
}

TEST_CASE("GitHub annotations sit on the model, joined to the baseline's folder", "[baseline]") {
  Baseline recorded = BaselineOf({Entry("mlp-added-layer", baseline_test::MlpResult())});
  Baseline current =
      BaselineOf({Entry("mlp-added-layer", baseline_test::MlpWithAddedLayerResult())});
  CompareOptions options;
  options.baseline_path = "ci/memplan.baseline.json";
  options.baseline_lines = {{"mlp-added-layer", 5}};
  const std::string out = FormatCheckReport(
      CompareToBaseline(recorded, current, *ParseTolerance("2%"), options), CheckFormat::kGithub);
  // ci/ + models/mlp.onnx; no baseline line on the model's annotation.
  CHECK(out.rfind("::error file=ci/models/mlp.onnx,title=memplan memory regression in ", 0) == 0);
  CHECK(out.find("::error file=ci/memplan.baseline.json,title=memplan check::") !=
        std::string::npos);
}

TEST_CASE("JSON check report: the numbers, the status, the exit code", "[baseline]") {
  const nlohmann::json j =
      nlohmann::json::parse(FormatCheckReport(SmallReport(), CheckFormat::kJson));
  CHECK(j["schema"] == "memplan-check/1");
  CHECK(j["failed"] == true);
  CHECK(j["exit_code"] == 1);
  CHECK(j["counts"]["regression"] == 1);
  CHECK(j["counts"]["pass"] == 1);
  const nlohmann::json& added = j["configurations"][0];
  CHECK(added["name"] == "mlp-added-layer");
  CHECK(added["status"] == "regression");
  // 1,126,880 -> 2,187,744 B: +1,060,864 B, 2% of 1,126,880 allows 22,537 B (see the top).
  CHECK(added["recorded_peak_bytes"] == 1126880);
  CHECK(added["current_peak_bytes"] == 2187744);
  CHECK(added["change_bytes"] == 1060864);
  CHECK(added["allowed_bytes"] == 22537);
  CHECK(added["grown_nodes"][0]["node"] == "/relu2/Relu");
}

TEST_CASE("An error is written in markdown and JSON too (exit 2)", "[baseline]") {
  CHECK(FormatCheckError("cannot read x.json", "x.json", CheckFormat::kMarkdown) ==
        "## memplan memory check\n\n:warning: **Could not run** — cannot read x.json (baseline "
        "`x.json`).\n");
  const nlohmann::json j =
      nlohmann::json::parse(FormatCheckError("cannot read x.json", "x.json", CheckFormat::kJson));
  CHECK(j["error"] == "cannot read x.json");
  CHECK(j["exit_code"] == 2);
  CHECK(FormatCheckError("cannot read x.json", "x.json", CheckFormat::kText).empty());
}

}  // namespace
}  // namespace memplan
