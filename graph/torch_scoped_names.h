#pragma once
// torch.onnx.export's two exporters name nodes differently. The TorchScript exporter names each
// node after the module scopes it ran in, then its op type: "/h.0/attn/MatMul". memplan reads
// module paths from that form (analyzer/recompute/checkpoint_modules.h: checkpoint units, the
// exports' module lists, LoRA targets). The dynamo exporter (torch.export) names nodes after the
// FX graph ("node_linear_3") and records the scopes in the node's metadata instead:
//
//   pkg.torch.onnx.name_scopes = "['', 'h.0', 'h.0.fc1', 'linear_3']"
//
// the root module (""), each enclosing module's qualified path, then the FX node's own name. A node
// that carries it is named at import in the TorchScript form, its own name kept last so names stay
// unique: "/h.0/fc1/node_linear_3". A segment is relative to the enclosing module ("fc1"), except
// an index, which is written qualified from the same base as the enclosing segment ("layer3.1"
// after "layer3"), as the TorchScript exporter writes a Sequential's elements.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memplan {

inline constexpr std::string_view kTorchNameScopesKey = "pkg.torch.onnx.name_scopes";

// The elements of a Python list of string literals as repr() writes it ("['', 'h.0']"); nullopt
// for anything else (escapes included: module names need none).
std::optional<std::vector<std::string>> ParsePythonStringList(std::string_view text);

// "/h.0/fc1/<name>" from the scopes recorded for a node named `name`; nullopt when the node ran in
// no module below the root or the scopes do not nest.
std::optional<std::string> TorchScopedName(const std::vector<std::string>& name_scopes,
                                           const std::string& name);

// TorchScopedName of a node from its metadata; nullopt without it.
std::optional<std::string> TorchScopedName(const onnx::NodeProto& node);

// Renames every node of `graph` that has a TorchScopedName (and whose new name no node has), in
// file order; returns how many. Run at import before anything reads node names (the fusions
// name a fused node after its scope: "/blocks.0/act/Gelu").
int64_t NameNodesByTorchScopes(onnx::GraphProto& graph);

}  // namespace memplan
