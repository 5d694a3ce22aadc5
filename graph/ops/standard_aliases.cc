#include "graph/ops/standard_aliases.h"

namespace memplan {

bool RunsAsStandardOnnxOp(std::string_view domain, std::string_view op_type) {
  if (domain.empty() || domain == "ai.onnx") return true;
  return domain == "com.microsoft" && op_type == "Gelu";
}

}  // namespace memplan
