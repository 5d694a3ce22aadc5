#include <catch2/catch.hpp>

#include <algorithm>

#include "graph/bind_symbols.h"
#include "graph/model_summary.h"
#include "tests/graph/hand_built_graph.h"

namespace memplan {
namespace {

// A tiny builder for hand-made graphs.
class Builder {
 public:
  Builder() { batch_ = graph_.symbols().Intern("batch"); }

  Dim batch() const { return Dim::Symbol(batch_); }
  void SetBatchSymbol() { graph_.set_batch_symbol(batch_); }

  ValueId Tensor(const std::string& name, Shape shape, ValueKind kind,
                 DType dtype = DType::kFloat32) {
    return testing::NewValue(graph_, name, std::move(shape), kind, dtype);
  }
  ValueId Input(const std::string& name, Shape shape) {
    ValueId id = Tensor(name, std::move(shape), ValueKind::kInput);
    graph_.MarkInput(id);
    return id;
  }
  ValueId Param(const std::string& name, Shape shape, DType dtype = DType::kFloat32) {
    return Tensor(name, std::move(shape), ValueKind::kParameter, dtype);
  }
  // A node with one fresh intermediate output (shape unknown unless given).
  ValueId Op(const std::string& op_type, std::vector<ValueId> inputs, Attributes attrs = {},
             const std::string& domain = "", Shape out_shape = Shape::Unknown()) {
    ValueId out = Tensor(op_type + "_out_" + std::to_string(graph_.num_nodes()),
                         std::move(out_shape), ValueKind::kIntermediate);
    testing::NewNode(graph_, op_type + "_" + std::to_string(graph_.num_nodes()), op_type,
                     std::move(inputs), {out}, std::move(attrs), domain);
    return out;
  }
  Graph& graph() { return graph_; }

 private:
  Graph graph_;
  SymbolId batch_;
};

bool HasWarning(const ModelSummary& s, const std::string& fragment) {
  return std::any_of(s.warnings.begin(), s.warnings.end(),
                     [&](const std::string& w) { return w.find(fragment) != std::string::npos; });
}

Attributes TrainingMode(int64_t mode) {
  Attributes a;
  a.Set("training_mode", mode);
  return a;
}

TEST_CASE("model summary: histogram, parameters by dtype, tensors and symbols", "[summary]") {
  Builder b;
  b.SetBatchSymbol();
  ValueId x = b.Input("x", Shape{{b.batch(), 3, 8, 8}});
  ValueId w1 = b.Param("conv.weight", Shape{{4, 3, 3, 3}});  // 108 elements
  ValueId b1 = b.Param("conv.bias", Shape{{4}});             // 4
  ValueId y = b.Op("Conv", {x, w1, b1});
  ValueId scale = b.Param("bn.weight", Shape{{4}});  // 4
  ValueId shift = b.Param("bn.bias", Shape{{4}});    // 4
  // Running statistics are buffers (constants), not parameters: not counted.
  ValueId mean = b.Tensor("bn.running_mean", Shape{{4}}, ValueKind::kConstant);
  ValueId var = b.Tensor("bn.running_var", Shape{{4}}, ValueKind::kConstant);
  y = b.Op("BatchNormalization", {y, scale, shift, mean, var}, TrainingMode(1));
  y = b.Op("Relu", {y});
  y = b.Op("Flatten", {y});
  ValueId w2 = b.Param("fc.weight", Shape{{144, 10}}, DType::kFloat16);  // 1440 elements
  y = b.Op("MatMul", {y, w2}, {}, "", Shape{{b.batch(), 10}});
  y = b.Op("Mystery", {y}, {}, "com.example", Shape{{b.batch(), 10}});
  b.graph().MarkOutput(y);
  b.graph().warnings.push_back("importer says hello");

  auto bindings = BindSymbols(b.graph(), 2, {});
  REQUIRE(bindings.ok());
  ModelSummary s = SummarizeModel(b.graph(), *bindings);

  CHECK(s.node_count == 6);
  CHECK(s.ops == std::map<std::string, int64_t>{{"BatchNormalization", 1},
                                                {"Conv", 1},
                                                {"Flatten", 1},
                                                {"MatMul", 1},
                                                {"Relu", 1},
                                                {"com.example:Mystery", 1}});
  // fp32: 108 + 4 + 4 + 4 = 120 elements * 4 B = 480 B; fp16: 1440 elements * 2 B = 2880 B.
  CHECK(s.parameter_count == 1560);
  CHECK(s.parameter_bytes == 3360);
  REQUIRE(s.parameters_by_dtype.size() == 2);
  CHECK(s.parameters_by_dtype.at("float32").count == 120);
  CHECK(s.parameters_by_dtype.at("float32").bytes == 480);
  CHECK(s.parameters_by_dtype.at("float16").count == 1440);
  CHECK(s.parameters_by_dtype.at("float16").bytes == 2880);

  REQUIRE(s.inputs.size() == 1);
  CHECK(s.inputs[0].name == "x");
  CHECK(s.inputs[0].dtype == "float32");
  CHECK(s.inputs[0].dims == std::vector<std::string>{"batch", "3", "8", "8"});
  CHECK(s.inputs[0].bound_dims == std::vector<int64_t>{2, 3, 8, 8});
  REQUIRE(s.outputs.size() == 1);
  CHECK(s.outputs[0].dims == std::vector<std::string>{"batch", "10"});
  CHECK(s.outputs[0].bound_dims == std::vector<int64_t>{2, 10});

  REQUIRE(s.symbols.size() == 1);
  CHECK(s.symbols[0].name == "batch");
  CHECK(s.symbols[0].is_batch);
  CHECK(s.symbols[0].value == 2);

  // The custom-domain op is unknown; registered ops (MatMul, Conv) never are.
  CHECK(std::find(s.unknown_ops.begin(), s.unknown_ops.end(), "com.example:Mystery") !=
        s.unknown_ops.end());
  CHECK(std::find(s.unknown_ops.begin(), s.unknown_ops.end(), "MatMul") == s.unknown_ops.end());
  CHECK(std::find(s.unknown_ops.begin(), s.unknown_ops.end(), "Conv") == s.unknown_ops.end());
  CHECK(std::is_sorted(s.unknown_ops.begin(), s.unknown_ops.end()));

  // The importer's warnings come first; a training-mode BN and one Conv warn about nothing.
  REQUIRE_FALSE(s.warnings.empty());
  CHECK(s.warnings[0] == "importer says hello");
  CHECK(s.warnings.size() == 1);

  // Without bindings, symbolic tensors have no bound dims.
  ModelSummary unbound = SummarizeModel(b.graph(), Bindings(&b.graph().symbols()));
  CHECK_FALSE(unbound.inputs[0].bound_dims.has_value());
  CHECK_FALSE(unbound.symbols[0].value.has_value());
}

TEST_CASE("model summary: BatchNorm in inference mode warns", "[summary]") {
  Builder b;
  b.SetBatchSymbol();
  ValueId x = b.Input("x", Shape{{b.batch(), 4}});
  ValueId p = b.Param("p", Shape{{4}});
  ValueId y = b.Op("BatchNormalization", {x, p, p, p, p});  // training_mode absent = 0
  y = b.Op("BatchNormalization", {y, p, p, p, p}, TrainingMode(0));
  y = b.Op("BatchNormalization", {y, p, p, p, p}, TrainingMode(1));
  ModelSummary s = SummarizeModel(b.graph(), Bindings(&b.graph().symbols()));
  CHECK(HasWarning(s, "2 of 3 BatchNormalization nodes run in inference mode"));
}

// A CNN of `convs` Conv nodes, each with a bias; the first `folded` have weight and bias named
// as torch.onnx names tensors its constant folding made (onnx::Conv_<n>), the rest as module
// parameters.
ModelSummary ConvChain(int convs, int folded, bool with_batchnorm = false,
                       const std::string& folded_prefix = "onnx::Conv_") {
  Builder b;
  b.SetBatchSymbol();
  ValueId y = b.Input("x", Shape{{b.batch(), 8, 8, 8}});
  int next_id = 100;
  for (int i = 0; i < convs; ++i) {
    const bool f = i < folded;
    const std::string w =
        f ? folded_prefix + std::to_string(next_id++) : "features." + std::to_string(i) + ".weight";
    const std::string bias =
        f ? folded_prefix + std::to_string(next_id++) : "features." + std::to_string(i) + ".bias";
    y = b.Op("Conv", {y, b.Param(w, Shape{{8, 8, 3, 3}}), b.Param(bias, Shape{{8}})});
    if (with_batchnorm) {
      ValueId p = b.Param("bn" + std::to_string(i), Shape{{8}});
      y = b.Op("BatchNormalization", {y, p, p, p, p}, TrainingMode(1));
    }
    y = b.Op("Relu", {y});
  }
  return SummarizeModel(b.graph(), Bindings(&b.graph().symbols()));
}

TEST_CASE("model summary: Conv weights folded at export look like folded BatchNorm", "[summary]") {
  const std::string folded = "looks like an inference export: ";
  // torch 1.13's eval export of Conv -> BatchNorm2d: Conv(x, onnx::Conv_15, onnx::Conv_16).
  CHECK(HasWarning(ConvChain(1, 1), "1 of 1 Conv nodes have a weight and bias computed at export"));
  CHECK(HasWarning(ConvChain(20, 3), "3 of 20 Conv nodes"));
  // A CNN without BatchNorm by design (SqueezeNet, VGG, AlexNet): biased convs with their own
  // parameter names are a training export, however many there are.
  CHECK_FALSE(HasWarning(ConvChain(26, 0), folded));
  CHECK_FALSE(HasWarning(ConvChain(8, 0, /*with_batchnorm=*/true), folded));
  // Only torch.onnx's exact naming counts: onnx::Conv_ followed by digits.
  CHECK_FALSE(HasWarning(ConvChain(4, 4, false, "onnx::Conv_x"), folded));
  CHECK_FALSE(HasWarning(ConvChain(4, 4, false, "Conv_"), folded));
}

// A one-head attention block: softmax(q k^T) v, with no Dropout anywhere.
ModelSummary AttentionWithoutDropout() {
  Builder b;
  b.SetBatchSymbol();
  ValueId x = b.Input("x", Shape{{b.batch(), 16, 32}});
  ValueId wq = b.Param("wq", Shape{{32, 32}});
  ValueId q = b.Op("MatMul", {x, wq});
  ValueId probs = b.Op("Softmax", {b.Op("MatMul", {q, q})});
  b.graph().MarkOutput(b.Op("MatMul", {probs, x}));
  return SummarizeModel(b.graph(), Bindings(&b.graph().symbols()));
}

TEST_CASE("model summary: the absence of a layer is no sign of an inference export", "[summary]") {
  // LLaMA-style decoders have no Dropout; SqueezeNet and ConvNeXt have no BatchNorm.
  CHECK_FALSE(HasWarning(AttentionWithoutDropout(), "inference export"));
  CHECK_FALSE(HasWarning(ConvChain(26, 0), "inference export"));
}

TEST_CASE("model summary: a model without parameters warns", "[summary]") {
  Builder b;  // no batch symbol set: the importer, not the summary, warns about a fixed batch
  ValueId x = b.Input("images", Shape{{1, 3, 4, 4}});
  b.graph().MarkOutput(b.Op("Relu", {x}));
  ModelSummary s = SummarizeModel(b.graph(), Bindings(&b.graph().symbols()));
  REQUIRE(s.warnings.size() == 1);
  CHECK(HasWarning(s, "no trainable parameters"));
  CHECK(s.parameter_count == 0);
  CHECK(s.parameters_by_dtype.empty());
  // A constant shape is fully bound even without bindings.
  CHECK(s.inputs[0].bound_dims == std::vector<int64_t>{1, 3, 4, 4});
}

TEST_CASE("model summary: initializers listed as graph inputs are not inputs", "[summary]") {
  Builder b;
  b.SetBatchSymbol();
  ValueId x = b.Input("x", Shape{{b.batch(), 4}});
  ValueId w = b.Param("w", Shape{{4, 4}});
  b.graph().MarkInput(w);  // old exporters list initializers among the inputs...
  b.graph().mutable_value(w).kind = ValueKind::kParameter;  // ...the importer keeps them params
  b.graph().MarkOutput(b.Op("MatMul", {x, w}));
  ModelSummary s = SummarizeModel(b.graph(), Bindings(&b.graph().symbols()));
  REQUIRE(s.inputs.size() == 1);
  CHECK(s.inputs[0].name == "x");
  CHECK(s.parameter_count == 16);
}

}  // namespace
}  // namespace memplan
