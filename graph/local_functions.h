#pragma once
// Model-local functions (ModelProto.functions, ONNX IR 8+). Exporters write a module as a function
// and each use of it as one node calling it: torch.onnx.export(export_modules_as_functions=...),
// PyTorch 2's dynamo exporter before its optimizer inlines them, and converters that keep a
// framework's layers. Training runs the function's body, so memplan analyses the body: every call
// is replaced by a copy of it before anything else reads the graph, which then looks as if the
// exporter had written the layers out. Internal to graph/: it includes libonnx headers.
//
// In the copy the function's formal inputs and outputs are the call's actual values, every
// other value and every node gets the calling node's name as a prefix ("/b1/Block" calling a body
// node "Gemm_0" gives "/b1/Block/Gemm_0", so module scopes stay readable), and an attribute that
// refers to one of the function's attributes (ref_attr_name) takes the call's value of it.
// Functions calling functions are expanded the same way, nested to a bounded depth.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

#include "graph/expected.h"

namespace memplan {

struct InlinedFunctions {
  int64_t calls = 0;      // call nodes replaced, nested calls included
  int64_t functions = 0;  // distinct functions that were called
  std::string names;      // the called functions' names, comma-separated, for the import note
};

// Replaces every call of a model-local function in the main graph by the function's body and
// clears the model's function list. Errors on a function that calls itself (directly or through
// others), nesting deeper than 64 calls, or an expansion past 10 million nodes.
Expected<InlinedFunctions> InlineLocalFunctions(onnx::ModelProto& model);

}  // namespace memplan
