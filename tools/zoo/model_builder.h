#pragma once
// ModelBuilder: writes an ONNX training graph the way the PyTorch exporter writes one.
//
// What "the way the exporter writes it" means here:
//  * node names carry the module path ("/layer1/layer1.0/conv1/Conv", "/h.4/attn/MatMul_1"),
//    a repeated op type in one scope gets "_1", "_2", ... and every output is named
//    "<node name>_output_<k>", as torch.onnx does;
//  * parameters are initializers named by their state_dict key ("h.0.attn.c_attn.weight");
//  * small integer and scalar constants (Reshape targets, axes, Slice bounds, 0.5, sqrt(2)) are
//    Constant nodes inside the scope that uses them, never initializers, so the only floating
//    initializers are parameters and BatchNorm running statistics;
//  * Reshape/Expand targets that depend on the batch or sequence length are computed from the
//    tensor itself by Shape -> Gather -> Unsqueeze -> Concat, so the model stays symbolic.
//
// Every initializer is stored as external data in "<model>.onnx.data" (data_location EXTERNAL,
// with location/offset/length entries). The data file itself is written only on request: the
// planner never needs weight bytes, so the default zoo is a set of small .onnx files.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

#include "graph/expected.h"

namespace memplan::zoo {

// How an initializer's values are drawn when the data file is written (--with-weights).
struct Init {
  enum class Kind {
    kUniformFanIn,  // uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's default for Linear/Conv
    kConstant,      // every element `value` (LayerNorm/BatchNorm weight 1, bias 0, running stats)
    kCausalMask,    // bool lower-triangular mask over the last two dims (GPT-2's attn.bias)
  };
  Kind kind = Kind::kConstant;
  int64_t fan_in = 1;
  float value = 0.0f;

  static Init UniformFanIn(int64_t fan_in) { return {Kind::kUniformFanIn, fan_in, 0.0f}; }
  static Init Ones() { return {Kind::kConstant, 1, 1.0f}; }
  static Init Zeros() { return {Kind::kConstant, 1, 0.0f}; }
  static Init CausalMask() { return {Kind::kCausalMask, 1, 0.0f}; }
};

// A graph input/output dimension: a fixed size or a symbol name ("batch", "seq").
using DimSpec = std::variant<int64_t, std::string>;

// One attribute of a node; build them with the helpers below.
using Attribute = onnx::AttributeProto;
Attribute IntAttr(const std::string& name, int64_t value);
Attribute FloatAttr(const std::string& name, float value);
Attribute IntsAttr(const std::string& name, const std::vector<int64_t>& values);

// One piece of a shape target: a literal size or a scalar int64 tensor computed from a Shape.
using ShapePart = std::variant<int64_t, std::string>;

class ModelBuilder {
 public:
  // `model_name` names the graph and the data file "<model_name>.onnx.data".
  explicit ModelBuilder(std::string model_name);

  const std::string& model_name() const { return model_name_; }

  // Graph inputs and outputs.
  std::string AddInput(const std::string& name, onnx::TensorProto::DataType type,
                       const std::vector<DimSpec>& dims);
  void AddOutput(const std::string& tensor, onnx::TensorProto::DataType type,
                 const std::vector<DimSpec>& dims);

  // A trained float32 initializer. Returns its name. REQUIRES: the name is new.
  std::string AddParameter(const std::string& name, const std::vector<int64_t>& dims, Init init);
  // A float32 initializer that is not trained: a BatchNorm running statistic, named
  // "<module>.running_mean" / "<module>.running_var" as in the state_dict.
  std::string AddFloatBuffer(const std::string& name, const std::vector<int64_t>& dims, Init init);
  // A bool constant buffer (GPT-2's causal mask "h.<i>.attn.bias").
  std::string AddBoolBuffer(const std::string& name, const std::vector<int64_t>& dims, Init init);

  // Adds node `op_type` in `scope` ("/h.0/attn"; "" for the top level) and returns its outputs.
  std::vector<std::string> AddNode(const std::string& scope, const std::string& op_type,
                                   const std::vector<std::string>& inputs, int num_outputs = 1,
                                   const std::vector<Attribute>& attributes = {});
  // AddNode with a single output.
  std::string Op(const std::string& scope, const std::string& op_type,
                 const std::vector<std::string>& inputs,
                 const std::vector<Attribute>& attributes = {});

  // Constant nodes, as the exporter writes for literals.
  std::string ConstantInts(const std::string& scope, const std::vector<int64_t>& values);
  std::string ConstantIntScalar(const std::string& scope, int64_t value);
  std::string ConstantFloatScalar(const std::string& scope, float value);
  std::string ConstantBoolScalar(const std::string& scope, bool value);
  std::string ConstantFloats(const std::string& scope, const std::vector<float>& values);
  // ConstantOfShape(shape) filled with `value` (torch.full with a computed size).
  std::string ConstantOfShapeFloat(const std::string& scope, const std::string& shape, float value);

  // Shape(tensor) -> Gather(axis): a scalar int64 holding one (possibly symbolic) dimension.
  std::string DimOf(const std::string& scope, const std::string& tensor, int64_t axis);
  // Unsqueeze each computed dim and Concat it with the literal parts: a 1-D shape target.
  std::string ShapeTarget(const std::string& scope, const std::vector<ShapePart>& parts);

  // Common exporter patterns.
  // Linear layer on a rank-3 input: MatMul(x, weight[in,out]) + Add(bias) in scope.
  std::string Linear(const std::string& scope, const std::string& param_prefix,
                     const std::string& x, int64_t in, int64_t out);
  // nn.Linear(bias=False) on a rank-3 input: MatMul(x, weight[in,out]) in scope.
  std::string LinearNoBias(const std::string& scope, const std::string& param_prefix,
                           const std::string& x, int64_t in, int64_t out);
  // Linear layer on a rank-2 input: Gemm(x, weight[out,in], bias, transB=1).
  std::string Gemm(const std::string& scope, const std::string& param_prefix, const std::string& x,
                   int64_t in, int64_t out);
  std::string LayerNorm(const std::string& scope, const std::string& param_prefix,
                        const std::string& x, int64_t width, float epsilon);
  // nn.GELU() (exact): x * 0.5 * (1 + erf(x / sqrt(2))), five nodes as torch writes them.
  std::string GeluErf(const std::string& scope, const std::string& x);
  // Attention heads from x[batch, seq, heads * head_dim]: Reshape to [batch, seq, heads,
  // head_dim] with the target from Shape sub-graphs, then Transpose to [batch, heads, seq,
  // head_dim], or to [batch, heads, head_dim, seq] for a key (the exporter fuses the permute with
  // the later key.transpose(-1, -2)).
  std::string SplitHeads(const std::string& scope, const std::string& x, int64_t heads,
                         int64_t head_dim, bool is_key);
  // The inverse for the attention context [batch, heads, seq, head_dim]: Transpose to [batch,
  // seq, heads, head_dim], then Reshape to [batch, seq, width].
  std::string MergeHeads(const std::string& scope, const std::string& context, int64_t width);
  // Self-attention from a fused projection qkv[batch, seq, 3 * width], as GPT-2 and torchvision's
  // ViT export it: Split into q, k, v, SplitHeads each, then scores = q k / sqrt(head_dim).
  struct AttentionHeads {
    std::string q, k, v, scores;
  };
  AttentionHeads SplitFusedQkvAndScore(const std::string& scope, const std::string& qkv,
                                       int64_t width, int64_t heads);
  // A pre-norm transformer block as GPT-2 and torchvision's ViT write it:
  //   residual = attention(ln_1(x)) + x;  out = residual + mlp(ln_2(residual)),
  // with the LayerNorms in "<scope>/ln_1", "<scope>/ln_2" (parameters "<prefix>.ln_1", ...). The
  // sub-layers receive their input and return their output; nodes appear in that order.
  using SubLayer = std::function<std::string(const std::string&)>;
  std::string PreNormBlock(const std::string& scope, const std::string& prefix,
                           const std::string& x, int64_t width, float epsilon,
                           const SubLayer& attention, const SubLayer& mlp);
  // nn.Dropout in training mode: Dropout(x, ratio, training_mode=true) -> (output, mask).
  std::string Dropout(const std::string& scope, const std::string& x, float ratio);

  // Elements in AddParameter initializers, each counted once however often it is used.
  int64_t num_parameter_elements() const { return num_parameter_elements_; }

  // Lays out the external data and serialises the model to "<dir>/<model_name>.onnx"; with
  // `write_weights`, also writes "<dir>/<model_name>.onnx.data" with seeded random values.
  Status Write(const std::string& dir, bool write_weights);

 private:
  // An initializer's generator; its TensorProto in model_ is at the same index.
  struct InitializerSource {
    int64_t num_elements = 0;
    Init init;
  };

  std::string UniqueNodeName(const std::string& scope, const std::string& op_type);
  std::string AddInitializer(const std::string& name, onnx::TensorProto::DataType type,
                             const std::vector<int64_t>& dims, Init init);
  Status WriteDataFile(const std::string& path) const;

  std::string model_name_;
  onnx::ModelProto model_;
  std::vector<InitializerSource> sources_;
  std::set<std::string> initializer_names_;      // for the uniqueness check
  std::map<std::string, int> node_name_counts_;  // "<scope>/<op_type>" -> nodes so far
  int64_t num_parameter_elements_ = 0;
};

}  // namespace memplan::zoo
