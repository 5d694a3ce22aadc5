#include "analyzer/memory_category.h"

namespace memplan {

std::string_view MemoryCategoryName(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kParameters:
      return "parameters";
    case MemoryCategory::kGradients:
      return "gradients";
    case MemoryCategory::kOptimizerState:
      return "optimizer_state";
    case MemoryCategory::kActivations:
      return "activations";
    case MemoryCategory::kTransients:
      return "transients";
    case MemoryCategory::kWorkspace:
      return "workspace";
    case MemoryCategory::kOther:
      return "other";
  }
  return "other";
}

}  // namespace memplan
