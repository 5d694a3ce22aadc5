#include "graph/upsample_scales.h"

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace memplan {

Status CheckUpsampleScales(const Graph& graph) {
  for (const Node& node : graph.nodes()) {
    if (node.op_type != "Upsample" || !(node.domain.empty() || node.domain == "ai.onnx")) continue;
    std::vector<double> scales = node.attributes.GetFloats("scales");
    if (scales.empty() && node.inputs.size() > 1 && node.inputs[1].valid()) {
      const Value& input = graph.value(node.inputs[1]);
      if (input.float_values) scales = *input.float_values;
    }
    for (size_t i = 0; i < scales.size(); ++i) {
      if (scales[i] >= 1.0 && std::isfinite(scales[i])) continue;
      std::ostringstream value;
      value << scales[i];
      return MakeError("node '" + node.name + "' (Upsample): scales[" + std::to_string(i) +
                       "] is " + value.str() + "; an Upsample scale must be at least 1");
    }
  }
  return OkStatus();
}

}  // namespace memplan
