// JUnit XML (the de-facto schema Jenkins, GitLab and GitHub test reporters read): one <testsuite>
// with one <testcase> per configuration; a regression or a missing configuration is a <failure>,
// a configuration new to the baseline is <skipped>. Exact bytes everywhere: this is for machines.
// The document is built and escaped by pugixml.

#include <sstream>
#include <string>

#include <pugixml.hpp>

#include "analyzer/baseline/check_format_internal.h"
#include "analyzer/text/markup.h"

namespace memplan::check_format {
namespace {

std::string PeakLine(const ConfigurationCheck& check) {
  int64_t change = check.PeakChange();
  return "peak " + std::to_string(check.recorded.peak_bytes) + " B -> " +
         std::to_string(check.current.peak_bytes) + " B (" + (change > 0 ? "+" : "") +
         std::to_string(change) + " B, " + SignedPercent(change, check.recorded.peak_bytes) +
         "), tolerance " + std::to_string(check.allowed_bytes) + " B";
}

// The plan sentence as a line of its own, or nothing.
std::string PlanLine(const ConfigurationCheck& check) {
  std::string plan = PlanSentence(check);
  return plan.empty() ? std::string() : plan + "\n";
}

void AddTestCase(pugi::xml_node suite, const ConfigurationCheck& check) {
  pugi::xml_node testcase = suite.append_child("testcase");
  testcase.append_attribute("classname") = "memplan.check";
  testcase.append_attribute("name") = XmlAllowedText(check.name).c_str();
  switch (check.status) {
    case CheckStatus::kRegression: {
      std::string body = "model " + check.model + "\n" + PlanLine(check);
      for (const NodeGrowth& node : check.grown_nodes)
        body += "saved activations of " + node.node + ": " + std::to_string(node.recorded_bytes) +
                " B -> " + std::to_string(node.current_bytes) + " B\n";
      if (check.grown_node_count > check.grown_nodes.size())
        body += std::to_string(check.grown_node_count - check.grown_nodes.size()) +
                " more nodes grew\n";
      pugi::xml_node failure = testcase.append_child("failure");
      failure.append_attribute("type") = "regression";
      failure.append_attribute("message") = XmlAllowedText(PeakLine(check)).c_str();
      failure.text() = XmlAllowedText(body).c_str();
      return;
    }
    case CheckStatus::kMissing: {
      pugi::xml_node failure = testcase.append_child("failure");
      failure.append_attribute("type") = "missing";
      failure.append_attribute("message") = "in the baseline but not analysed in this run";
      return;
    }
    case CheckStatus::kNew:
      testcase.append_child("skipped").append_attribute("message") = "not in the baseline";
      return;
    case CheckStatus::kPass:
    case CheckStatus::kImprovement: {
      const std::string out = std::string(CheckStatusName(check.status)) + ": " + PeakLine(check) +
                              "\n" + PlanLine(check);
      testcase.append_child("system-out").text() = XmlAllowedText(out).c_str();
      return;
    }
  }
}

// The document's root: <testsuites> holding one <testsuite>, both with the same counts.
pugi::xml_node SuiteWithCounts(pugi::xml_document& doc, size_t tests, size_t failures,
                               size_t errors, size_t skipped) {
  pugi::xml_node declaration = doc.append_child(pugi::node_declaration);
  declaration.append_attribute("version") = "1.0";
  declaration.append_attribute("encoding") = "UTF-8";
  pugi::xml_node suites = doc.append_child("testsuites");
  pugi::xml_node suite = suites.append_child("testsuite");
  for (pugi::xml_node node : {suites, suite}) {
    node.append_attribute("name") = "memplan check";
    node.append_attribute("tests") = std::to_string(tests).c_str();
    node.append_attribute("failures") = std::to_string(failures).c_str();
    node.append_attribute("errors") = std::to_string(errors).c_str();
    node.append_attribute("skipped") = std::to_string(skipped).c_str();
  }
  return suite;
}

void AddProperty(pugi::xml_node properties, const char* name, const std::string& value) {
  pugi::xml_node property = properties.append_child("property");
  property.append_attribute("name") = name;
  property.append_attribute("value") = XmlAllowedText(value).c_str();
}

// pugixml escapes what XML needs (&, <, > in text; quotes and line breaks in attributes).
std::string Serialized(const pugi::xml_document& doc) {
  std::ostringstream out;
  doc.save(out, "  ", pugi::format_indent, pugi::encoding_utf8);
  return out.str();
}

}  // namespace

std::string FormatJunit(const CheckReport& report) {
  pugi::xml_document doc;
  const size_t failures =
      report.Count(CheckStatus::kRegression) + report.Count(CheckStatus::kMissing);
  pugi::xml_node suite = SuiteWithCounts(doc, report.configurations.size(), failures, 0,
                                         report.Count(CheckStatus::kNew));
  pugi::xml_node properties = suite.append_child("properties");
  AddProperty(properties, "tolerance", report.tolerance.text);
  if (!report.baseline_path.empty()) AddProperty(properties, "baseline", report.baseline_path);
  for (const ConfigurationCheck& check : report.configurations) AddTestCase(suite, check);
  return Serialized(doc);
}

std::string FormatJunitError(std::string_view message, std::string_view baseline_path) {
  pugi::xml_document doc;
  pugi::xml_node suite = SuiteWithCounts(doc, 1, 0, 1, 0);
  if (!baseline_path.empty())
    AddProperty(suite.append_child("properties"), "baseline", std::string(baseline_path));
  pugi::xml_node testcase = suite.append_child("testcase");
  testcase.append_attribute("classname") = "memplan.check";
  testcase.append_attribute("name") = "memplan check";
  pugi::xml_node error = testcase.append_child("error");
  error.append_attribute("type") = "error";
  const std::string text = XmlAllowedText(message);
  error.append_attribute("message") = text.c_str();
  error.text() = text.c_str();
  return Serialized(doc);
}

}  // namespace memplan::check_format
