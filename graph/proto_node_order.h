#pragma once
// Topological order of an ONNX GraphProto's nodes, by value names. libonnx 1.12's shape inference
// assumes sorted nodes and crashes on an unsorted graph, and the model as written (kept unfused for
// inference, graph/onnx_import.cc) may be unsorted. Internal to graph/.

#include <onnx/onnx_pb.h>

namespace memplan {

// Reorders `graph`'s nodes so every node follows the producers of its inputs; among ready nodes the
// file's order is kept, so a sorted graph is unchanged. Returns false, leaving `graph` unchanged,
// when the nodes form a cycle.
bool SortProtoNodesTopologically(onnx::GraphProto& graph);

}  // namespace memplan
