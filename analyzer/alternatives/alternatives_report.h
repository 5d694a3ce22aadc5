#pragma once
// The alternatives of a plan that does not fit (alternative_search.h) as the reports write them:
// the JSON arrays `alternatives` and `alternatives_not_planned` (docs/json_schema.md), the text
// block "Alternatives" after the sentence on why nothing fits, and its markdown table.

#include <string>

#include <nlohmann/json.hpp>

#include "analyzer/alternatives/alternative_search.h"
#include "analyzer/baseline/plan_flags.h"

namespace memplan {

struct AlternativesReport {
  PlanFlags asked;  // the flags the alternatives change (AlternativeContext::asked)
  AlternativeSearch search;
};

// One object per planned alternative, in rank order: kinds, flags (the change), replaces (the
// asked flags it replaces, when any), arguments (every plan flag of that request), fits, gpu,
// gpus, budget_bytes and the chosen candidate (micro_batch, ..., samples_per_second).
nlohmann::ordered_json AlternativesJson(const AlternativesReport& report);

// One object per change not planned: kinds, flags, reason.
nlohmann::ordered_json AlternativesNotPlannedJson(const AlternativesReport& report);

// The text block, ending in a newline: the alternatives that fit, ranked, two lines each; then
// one line per planned change that does not fit and per change not planned.
std::string AlternativesText(const AlternativesReport& report);

// The same as a markdown section ("### Alternatives" and a table).
std::string AlternativesMarkdown(const AlternativesReport& report);

}  // namespace memplan
