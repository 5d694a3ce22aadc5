#pragma once
// A read-only index of an ONNX GraphProto for the import fusions (graph/fusion/fusion_table.h):
// which node produces and which nodes read each value, which values are graph outputs, and the
// values of one-element constants (initializers and Constant nodes) and small integer constants
// (ReduceMean's axes input at opset 18). Internal to graph/.
//
// Node references are indices into the GraphProto's node list at the time the index was built.

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace memplan {

class ProtoIndex {
 public:
  explicit ProtoIndex(const onnx::GraphProto& graph);

  const onnx::GraphProto& graph() const { return graph_; }
  const onnx::NodeProto& node(int index) const { return graph_.node(index); }

  // The value of a one-element floating or integer constant named `name`.
  std::optional<double> Scalar(const std::string& name) const;
  // The rank of a constant named `name` (a Constant's value_float / value_int is rank 0);
  // nullopt when it is not a constant.
  std::optional<int> ConstantRank(const std::string& name) const;
  // The values of a small integer constant (axes, shapes), or of a Reshape of one.
  std::optional<std::vector<int64_t>> Integers(const std::string& name) const;
  // The same for a floating constant (GroupNorm's per-group ones and zeros).
  std::optional<std::vector<double>> Reals(const std::string& name) const;
  // The initializer named `name` (nullptr when it is not one).
  const onnx::TensorProto* Initializer(const std::string& name) const;

  std::optional<int> Producer(const std::string& name) const;
  const std::vector<int>& Consumers(const std::string& name) const;
  // The one node reading `name`, when exactly one does and it is not a graph output: the test
  // every intermediate of a pattern must pass.
  std::optional<int> SoleConsumer(const std::string& name) const;
  bool IsGraphOutput(const std::string& name) const { return graph_outputs_.count(name) > 0; }
  bool IsGraphInput(const std::string& name) const { return graph_inputs_.count(name) > 0; }

 private:
  const onnx::GraphProto& graph_;
  std::unordered_map<std::string, const onnx::TensorProto*> constants_;  // initializers + Constant
  std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
  std::unordered_map<std::string, double> attribute_scalars_;  // Constant value_float/value_int
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> consumers_;
  std::unordered_set<std::string> graph_outputs_;
  std::unordered_set<std::string> graph_inputs_;
};

// ---------------------------------------------------------------- matching helpers

// True when `n` is the default-domain op `op_type` with `inputs` inputs and one output.
bool IsOp(const onnx::NodeProto& n, const char* op_type, int inputs);

// |v - expected| within a relative 1e-5 (constants are stored as float32 or float16 by exporters;
// float16 needs the wider tolerance of NearHalf).
bool Near(std::optional<double> v, double expected);
// Within float16's precision (relative 1e-3), for constants an fp16 export stores.
bool NearHalf(std::optional<double> v, double expected);

// For a binary node, the operand that is not the scalar constant `value` (input 1 only, or either
// operand when `commutative`); nullopt when no operand is that constant.
std::optional<std::string> OtherThanScalar(const onnx::NodeProto& n, const ProtoIndex& index,
                                           double value, bool commutative);
// For a binary node, the operand that is not `known` (nullopt when neither is).
std::optional<std::string> OtherOperand(const onnx::NodeProto& n, const std::string& known);

// The node that is the sole consumer of `value` when it is `op_type` with `inputs` inputs.
std::optional<int> SoleConsumerOp(const ProtoIndex& index, const std::string& value,
                                  const char* op_type, int inputs);

// An initializer of rank at most `max_rank` that is not also fed as a graph input (a weight
// an affine normalisation may own). Scalars count as rank 0.
bool IsSmallRankWeight(const ProtoIndex& index, const std::string& name, int max_rank);

// The trailing axes a ReduceMean reduces over with keepdims=1, as a count k for axes
// [-k, ..., -1] in any order; nullopt for any other reduction (positive axes, gaps, keepdims=0,
// axes not constant). Reads the `axes` attribute (opset < 18) or the constant input 1.
std::optional<int> TrailingReduceMeanAxes(const ProtoIndex& index, const onnx::NodeProto& n);

// What a default-domain Reduce<op_type> node reduces: its axes as written (empty: every axis,
// unless noop_with_empty_axes, which is never matched) and keepdims (default 1). Reads the `axes`
// attribute or the constant input 1; nullopt for axes computed at run time, any other node, or a
// noop_with_empty_axes reduction.
struct Reduction {
  std::vector<int64_t> axes;
  bool keepdims = true;
};
std::optional<Reduction> ReductionOf(const ProtoIndex& index, const onnx::NodeProto& n,
                                     const char* op_type);

}  // namespace memplan
