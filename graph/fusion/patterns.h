#pragma once
// The matchers of the import-fusion table (graph/fusion/fusion_table.h), one file each. Internal
// to graph/fusion. Each takes the index of the graph and one node index, the pattern's anchor
// (named below), and returns the occurrence anchored there, if it is exact.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/fusion/fusion_table.h"
#include "graph/fusion/proto_index.h"

namespace memplan {

std::optional<FusionMatch> MatchLayerNorm(const ProtoIndex& index, int node);  // first ReduceMean
std::optional<FusionMatch> MatchRmsNorm(const ProtoIndex& index, int node);    // ReduceMean
std::optional<FusionMatch> MatchErfGelu(const ProtoIndex& index, int node);    // Erf
std::optional<FusionMatch> MatchErfGeluFormula(const ProtoIndex& index, int node);    // Erf
std::optional<FusionMatch> MatchTanhGelu(const ProtoIndex& index, int node);          // Tanh
std::optional<FusionMatch> MatchTanhGeluFormula(const ProtoIndex& index, int node);   // Tanh
std::optional<FusionMatch> MatchTanhGeluTorchLib(const ProtoIndex& index, int node);  // Tanh
std::optional<FusionMatch> MatchSilu(const ProtoIndex& index, int node);              // Sigmoid
std::optional<FusionMatch> MatchHardSwish(const ProtoIndex& index, int node);         // HardSigmoid
std::optional<FusionMatch> MatchZeroDropout(const ProtoIndex& index, int node);       // Dropout
std::optional<FusionMatch> MatchPadAvgPool(const ProtoIndex& index, int node);        // Pad
std::optional<FusionMatch> MatchRsqrt(const ProtoIndex& index, int node);             // Sqrt
std::optional<FusionMatch> MatchVariance(const ProtoIndex& index, int node);  // first ReduceMean
std::optional<FusionMatch> MatchVarianceFormula(const ProtoIndex& index, int node);  // the same
std::optional<FusionMatch> MatchMaxDim(const ProtoIndex& index, int node);           // ReduceMax
std::optional<FusionMatch> MatchGlu(const ProtoIndex& index, int node);              // Split
std::optional<FusionMatch> MatchSwiGlu(const ProtoIndex& index, int node);           // Swish
std::optional<FusionMatch> MatchGeGlu(const ProtoIndex& index, int node);            // Gelu
// InstanceNormalization
std::optional<FusionMatch> MatchGroupNorm(const ProtoIndex& index, int node);

// The end both GELU forms share, from `gate` (1 + erf(.) or 1 + tanh(.)) on: x times the gate,
// halved, as (x * gate) * 0.5, (x * 0.5) * gate or x * (0.5 * gate), each Mul feeding only the
// next. Its nodes in chain order, the one whose output the fused Gelu writes, and where the half
// was applied.
enum class GeluHalf { kLast, kOnX, kOnGate };
struct GeluTail {
  std::vector<int> nodes;
  int last = -1;
  GeluHalf half = GeluHalf::kLast;
};
std::optional<GeluTail> MatchGeluTail(const ProtoIndex& index, const std::string& gate,
                                      const std::string& x);

// x * gate(x) from the one-input `gate` node (checked by the caller): the gate's output feeds only
// a Mul whose other operand is the gate's input x. The match is the gate and the Mul, fused into
// `fused_op_type` (default domain) reading x and writing the Mul's output.
std::optional<FusionMatch> MatchSelfGatedProduct(const ProtoIndex& index, int gate,
                                                 const std::string& fused_op_type);

// A fused node: `op_type` in `domain` reading `inputs`, writing `output`.
onnx::NodeProto FusedNode(const std::string& op_type, const std::string& domain,
                          std::initializer_list<std::string> inputs, const std::string& output);
void SetFloatAttribute(onnx::NodeProto& node, const std::string& name, float value);
void SetIntAttribute(onnx::NodeProto& node, const std::string& name, int64_t value);
void SetStringAttribute(onnx::NodeProto& node, const std::string& name, const std::string& value);
void SetIntsAttribute(onnx::NodeProto& node, const std::string& name,
                      const std::vector<int64_t>& values);

}  // namespace memplan
