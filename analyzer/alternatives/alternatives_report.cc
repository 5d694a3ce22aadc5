#include "analyzer/alternatives/alternatives_report.h"

#include <sstream>

#include "analyzer/baseline/pinned_plan.h"
#include "analyzer/text/json_fields.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/text/number_format.h"

namespace memplan {
namespace {

nlohmann::ordered_json KindsJson(const std::vector<AlternativeKind>& kinds) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (AlternativeKind k : kinds) j.push_back(std::string(AlternativeKindName(k)));
  return j;
}

// The change as flags, or the kinds when it sets none ("gpu").
std::string ChangeText(const std::vector<AlternativeKind>& kinds, const PlanFlags& change) {
  std::string text = PlanFlagsAsArguments(change);
  if (!text.empty()) return text;
  for (AlternativeKind k : kinds)
    text += (text.empty() ? "" : "+") + std::string(AlternativeKindName(k));
  return text;
}

// "--recompute auto (in place of --recompute none)"; `code` quotes the flags (markdown: "`").
std::string ChangeWithReplaced(const AlternativesReport& report, const Alternative& a,
                               std::string_view code = "") {
  const std::string quote(code);
  std::string text = quote + ChangeText(a.kinds, a.change) + quote;
  const std::string replaced = PlanFlagsAsArguments(ReplacedFlags(report.asked, a.change));
  if (!replaced.empty()) text += " (in place of " + quote + replaced + quote + ")";
  return text;
}

// "m=2 x 4 accumulation steps on each of 8 GPUs".
std::string BatchText(const AlternativePlan& plan) {
  std::ostringstream s;
  s << "m=" << plan.chosen.micro_batch;
  if (plan.chosen.accumulation_steps > 1)
    s << " x " << plan.chosen.accumulation_steps << " accumulation steps";
  if (plan.gpus > 1) s << " on each of " << plan.gpus << " GPUs";
  return s.str();
}

}  // namespace

nlohmann::ordered_json AlternativesJson(const AlternativesReport& report) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Alternative& a : report.search.planned) {
    const PlanCandidate& c = a.plan.chosen;
    nlohmann::ordered_json j;
    j["kinds"] = KindsJson(a.kinds);
    j["flags"] = PlanFlagsAsArguments(a.change);
    const std::string replaced = PlanFlagsAsArguments(ReplacedFlags(report.asked, a.change));
    if (!replaced.empty()) j["replaces"] = replaced;
    j["arguments"] = PlanFlagsAsArguments(OverlayPlanFlags(report.asked, a.change));
    MEMPLAN_JSON_FIELDS(j, a.plan, fits, gpu, gpus, budget_bytes);
    MEMPLAN_JSON_FIELDS(j, c, micro_batch, accumulation_steps, global_batch);
    j["precision"] = std::string(PrecisionName(c.precision));
    j["recompute"] = std::string(RecomputeLabelName(c.recompute));
    j["peak_bytes"] = c.peak_bytes;
    j["estimated_step_seconds"] = c.step_seconds;
    j["samples_per_second"] = c.samples_per_second;
    list.push_back(std::move(j));
  }
  return list;
}

nlohmann::ordered_json AlternativesNotPlannedJson(const AlternativesReport& report) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const SkippedAlternative& s : report.search.skipped) {
    nlohmann::ordered_json j;
    j["kinds"] = KindsJson(s.kinds);
    j["flags"] = PlanFlagsAsArguments(s.change);
    j["reason"] = s.reason;
    list.push_back(std::move(j));
  }
  return list;
}

std::string AlternativesText(const AlternativesReport& report) {
  std::ostringstream s;
  int rank = 0;
  for (const Alternative& a : report.search.planned) {
    if (!a.plan.fits) continue;
    if (rank == 0)
      s << "Alternatives that fit (ranked: on this GPU by samples/s, then a shorter sequence, more "
           "GPUs, a larger GPU)\n";
    const PlanCandidate& c = a.plan.chosen;
    s << "  " << ++rank << ". " << ChangeWithReplaced(report, a) << "\n";
    s << "     " << BatchText(a.plan) << ", peak " << FormatBytes(c.peak_bytes) << " of "
      << FormatBytes(a.plan.budget_bytes) << (a.plan.gpus > 1 ? " per GPU" : "") << ", "
      << FormatFixed(c.step_seconds, 4) << " s/step, " << FormatFixed(c.samples_per_second, 2)
      << " samples/s, " << PrecisionName(c.precision) << ", recompute "
      << RecomputeLabelName(c.recompute) << "\n";
  }
  if (rank == 0) s << "Alternatives: none of the changes memplan tries fits\n";
  for (const Alternative& a : report.search.planned) {
    if (a.plan.fits) continue;
    s << "  does not fit: " << ChangeWithReplaced(report, a) << " (peak "
      << FormatBytes(a.plan.chosen.peak_bytes) << " of " << FormatBytes(a.plan.budget_bytes)
      << ")\n";
  }
  for (const SkippedAlternative& k : report.search.skipped)
    s << "  not planned: " << ChangeText(k.kinds, k.change) << ": " << k.reason << "\n";
  return s.str();
}

std::string AlternativesMarkdown(const AlternativesReport& report) {
  std::ostringstream s;
  s << "### Alternatives\n\n| # | flags | fits | micro-batch | peak | budget | samples/s |\n"
       "|---:|---|---|---|---:|---:|---:|\n";
  int rank = 0;
  for (const Alternative& a : report.search.planned) {
    s << "| " << ++rank << " | " << ChangeWithReplaced(report, a, "`") << " | "
      << (a.plan.fits ? "yes" : "no") << " | " << BatchText(a.plan) << " | "
      << FormatBytes(a.plan.chosen.peak_bytes) << " | " << FormatBytes(a.plan.budget_bytes) << " | "
      << FormatFixed(a.plan.chosen.samples_per_second, 1) << " |\n";
  }
  if (!report.search.skipped.empty()) {
    s << "\nNot planned:\n\n";
    for (const SkippedAlternative& k : report.search.skipped)
      s << "- `" << ChangeText(k.kinds, k.change) << "`: " << k.reason << "\n";
  }
  return s.str();
}

}  // namespace memplan
