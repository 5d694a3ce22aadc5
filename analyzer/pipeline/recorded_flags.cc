#include "analyzer/pipeline/recorded_flags.h"

#include <string>

#include "graph/expected.h"
#include "graph/symbols.h"

namespace memplan {

namespace {

// Where AnalysisFlags keeps the text of an analysis kText/kPositiveInt flag (--batch, --batch-dim).
std::string& AnalysisText(AnalysisFlags& flags, const PlanFlagSpec& spec) {
  if (spec.key == "batch") return flags.batch;
  MEMPLAN_CHECK(spec.key == "batch_dim");
  return flags.batch_dim;
}

std::string& TextOf(PlanArguments& flags, const PlanFlagSpec& spec) {
  return spec.analysis_flag ? AnalysisText(flags.analysis, spec) : flags.Text(spec.key);
}

}  // namespace

PlanArguments PlanArgumentsOf(const PlanFlags& recorded, const std::string& model) {
  PlanArguments flags;
  flags.analysis.model = model;
  // A flag left out keeps the CLI's default, which PlanArguments{} already holds.
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    switch (spec.type) {
      case PlanFlagType::kPositiveInt:
        if (recorded.*spec.integer) TextOf(flags, spec) = std::to_string(*(recorded.*spec.integer));
        break;
      case PlanFlagType::kText:
        if (recorded.*spec.text) TextOf(flags, spec) = *(recorded.*spec.text);
        break;
      case PlanFlagType::kDims:
        for (const auto& [name, size] : recorded.dims)
          flags.analysis.dims.push_back(name + "=" + std::to_string(size));
        break;
      case PlanFlagType::kSwitch:
        flags.Switch(spec.key) = recorded.*spec.flag;
        break;
    }
  }
  return flags;
}

PlanFlags RecordedFlagsOf(const PlanArguments& flags) {
  PlanArguments defaults;
  PlanArguments given = flags;
  PlanFlags recorded;
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    switch (spec.type) {
      case PlanFlagType::kPositiveInt: {
        const std::string& text = TextOf(given, spec);
        if (!text.empty()) recorded.*spec.integer = std::stoll(text);  // validated by Resolve
        break;
      }
      case PlanFlagType::kText: {
        // Only what differs from the CLI's default: a baseline pins no more than its author did.
        const std::string& text = TextOf(given, spec);
        if (text != TextOf(defaults, spec)) recorded.*spec.text = text;
        break;
      }
      case PlanFlagType::kDims:
        for (const std::string& text : flags.analysis.dims) {
          Expected<DimBinding> dim = ParseDimBinding(text);
          MEMPLAN_CHECK(dim.ok());
          recorded.dims[dim->name] = dim->value;
        }
        break;
      case PlanFlagType::kSwitch:
        recorded.*spec.flag = flags.Switch(spec.key);
        break;
    }
  }
  return recorded;
}

}  // namespace memplan
