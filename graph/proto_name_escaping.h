#pragma once
// Names in a model file that are not UTF-8 (graph/utf8_text.h), rewritten before anything reads
// them: every node, value, initializer, op type and domain, and string attribute, in the graph,
// its subgraphs and the model-local functions, gets each invalid byte as "\xNN". One rewrite at
// import keeps every later reader (matching, reports, JSON, plans written and read back) on the
// same names; the importer warns that it happened. Internal to graph/: it includes libonnx headers.

#include <onnx/onnx_pb.h>

#include <cstdint>

namespace memplan {

// Rewrites the names in place; returns how many strings changed.
int64_t EscapeInvalidUtf8Names(onnx::ModelProto& model);

}  // namespace memplan
