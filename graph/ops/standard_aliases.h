#pragma once
// Ops outside the default ONNX domain that compute exactly a default-domain op of the same type,
// so the op registry gives them the same schema and a backend runs them with the same kernel.
// Today: com.microsoft Gelu, which the importer fuses exported erf-GELU chains into
// (graph/fusion/erf_gelu.cc) and ONNX Runtime's exporters emit.

#include <string_view>

namespace memplan {

// True for the default domain ("" or "ai.onnx") and for the aliases above.
bool RunsAsStandardOnnxOp(std::string_view domain, std::string_view op_type);

}  // namespace memplan
