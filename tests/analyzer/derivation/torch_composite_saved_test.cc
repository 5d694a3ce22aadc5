// Saved-for-backward bytes of the import fusions that restore torch ops exporters write as several
// nodes (graph/fusion/max_dim.cc, variance.cc, glu.cc), derived by hand from derivatives.yaml and
// checked against torch 2.x (tests/analyzer/derivation/torch_composite_reference.py prints the
// same models' bytes) for
//
//   x [batch, 4, 8] -> MatMul(W [8, 8]) -> h [-> Relu -> r] -> <pattern> -> y,   loss = sum(y)
//
// at batch 2, fp32. A [2, 4, 8] tensor is 64 elements = 256 bytes, a [2, 4] one 8 elements: 32
// bytes fp32, 64 bytes int64. MatMul keeps x (W requires grad): 256 bytes; Relu keeps r: 256.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "graph/onnx_import.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;
using testing::SimulateSumLoss;
using Pattern = std::function<std::string(ProtoModel&, const std::string& in)>;

constexpr int64_t kFull = 256;  // one [2, 4, 8] fp32 tensor

// `out` is the pattern's output shape, declared as the graph output's (the checker needs one).
ProtoModel ModelWith(bool relu, std::vector<testing::ProtoDim> out, const Pattern& pattern,
                     int64_t opset = 13) {
  ProtoModel m(opset);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 8});
  m.Node("MatMul", {"x", "W"}, {"h"});
  if (relu) m.Node("Relu", {"h"}, {"r"});
  m.Output(pattern(m, relu ? "r" : "h"), onnx::TensorProto::FLOAT, std::move(out));
  return m;
}

int64_t SavedBytes(const ProtoModel& model, const std::string& file,
                   FusionSet fusions = FusionSet::kFusedOps) {
  ImportOptions options;
  options.fusions = fusions;
  return SimulateSumLoss(model.Import(file, options)).saved_activation_bytes;
}

int CountOp(const ProtoModel& model, const std::string& file, const std::string& op,
            FusionSet fusions = FusionSet::kFusedOps) {
  ImportOptions options;
  options.fusions = fusions;
  const Graph graph = model.Import(file, options);
  int count = 0;
  for (const Node& n : graph.nodes()) count += n.op_type == op;
  return count;
}

std::string ReduceMax(ProtoModel& p, const std::string& in, int64_t keepdims) {
  auto& n = p.Node("ReduceMax", {in}, {"y"});
  testing::SetInts(n, "axes", {2});
  testing::SetInt(n, "keepdims", keepdims);
  return "y";
}

TEST_CASE("torch.max(x, dim): keeps its int64 indices, not input and result",
          "[fusion][saved][max_dim]") {
  // torch.max(h, 2)[0] exports ReduceMax(axes=[2], keepdims=0) alone (the unread ArgMax is dead).
  const ProtoModel m = ModelWith(false, {"batch", 4}, [](ProtoModel& p, const std::string& h) {
    return ReduceMax(p, h, /*keepdims=*/0);
  });
  CHECK(CountOp(m, "max_dim.onnx", "MaxDim") == 1);
  // max.dim keeps indices [2, 4] int64 (64 bytes) beside MatMul's x: 256 + 64 = 320 (torch: 320).
  CHECK(SavedBytes(m, "max_dim.onnx") == kFull + 64);
  // Planned as amax (unfused): h and the result [2, 4] fp32: 256 + 256 + 32 = 544.
  CHECK(SavedBytes(m, "max_dim.onnx", FusionSet::kNone) == 2 * kFull + 32);
}

TEST_CASE("torch.max(x, dim, keepdim=True) with its indices read: one MaxDim, two outputs",
          "[fusion][saved][max_dim]") {
  const ProtoModel m = ModelWith(false, {"batch", 4, 1}, [](ProtoModel& p, const std::string& h) {
    ReduceMax(p, h, /*keepdims=*/1);
    auto& arg = p.Node("ArgMax", {h}, {"i"});
    testing::SetInt(arg, "axis", 2);
    testing::SetInt(arg, "keepdims", 1);
    testing::SetInt(p.Node("Cast", {"i"}, {"fi"}), "to", onnx::TensorProto::FLOAT);
    p.Node("Add", {"y", "fi"}, {"z"});
    return std::string("z");
  });
  CHECK(CountOp(m, "max_dim_pair.onnx", "MaxDim") == 1);
  CHECK(CountOp(m, "max_dim_pair.onnx", "ArgMax") == 0);
  // x and the indices [2, 4, 1] int64: 256 + 64 = 320 (torch: 320).
  CHECK(SavedBytes(m, "max_dim_pair.onnx") == kFull + 64);
}

TEST_CASE("amax(x, dim, keepdim=True) stays amax: input and result", "[fusion][saved][max_dim]") {
  const ProtoModel m = ModelWith(false, {"batch", 4, 1}, [](ProtoModel& p, const std::string& h) {
    return ReduceMax(p, h, /*keepdims=*/1);
  });
  CHECK(CountOp(m, "amax.onnx", "MaxDim") == 0);
  // amax keeps h and the result [2, 4, 1]: 256 + 256 + 32 = 544 (torch: 544).
  CHECK(SavedBytes(m, "amax.onnx") == 2 * kFull + 32);
}

// x.var(2, unbiased=False) as torch.onnx writes it (the square `square`: "Mul" or "Pow").
std::string VarianceChain(ProtoModel& p, const std::string& r, const std::string& square) {
  testing::SetInts(p.Node("ReduceMean", {r}, {"mean"}), "axes", {2});
  p.Node("Sub", {r, "mean"}, {"d"});
  if (square == "Mul") {
    p.Node("Mul", {"d", "d"}, {"sq"});
  } else {
    // A Constant node, as torch.onnx writes the 2 (a float initializer would train).
    auto* a = p.Node("Constant", {}, {"two"}).add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a->mutable_t()->add_float_data(2.0f);
    p.Node("Pow", {"d", "two"}, {"sq"});
  }
  auto& v = p.Node("ReduceMean", {"sq"}, {"y"});
  testing::SetInts(v, "axes", {2});
  testing::SetInt(v, "keepdims", 0);
  return "y";
}

TEST_CASE("torch.var written as mean, sub, square, mean: keeps its input only",
          "[fusion][saved][variance]") {
  const ProtoModel m = ModelWith(true, {"batch", 4}, [](ProtoModel& p, const std::string& r) {
    return VarianceChain(p, r, "Mul");
  });
  CHECK(CountOp(m, "var.onnx", "Variance") == 1);
  // var_backward keeps r, which Relu keeps already: x + r = 512 (torch: 512).
  CHECK(SavedBytes(m, "var.onnx") == 2 * kFull);
  // Node by node the Mul keeps d: 768.
  CHECK(SavedBytes(m, "var.onnx", FusionSet::kNone) == 3 * kFull);
}

TEST_CASE("a variance written by hand with Pow is planned as eager runs it",
          "[fusion][saved][variance]") {
  const ProtoModel m = ModelWith(true, {"batch", 4}, [](ProtoModel& p, const std::string& r) {
    return VarianceChain(p, r, "Pow");
  });
  // ((r - r.mean(2, keepdim=True))**2).mean(2): pow keeps d: 768 (torch: 768).
  CHECK(CountOp(m, "var_pow.onnx", "Variance") == 0);
  CHECK(SavedBytes(m, "var_pow.onnx") == 3 * kFull);
  // Under --fusions all it is torch.var's: 512.
  CHECK(CountOp(m, "var_pow.onnx", "Variance", FusionSet::kAll) == 1);
  CHECK(SavedBytes(m, "var_pow.onnx", FusionSet::kAll) == 2 * kFull);
}

TEST_CASE("F.glu written as Split, Sigmoid, Mul: keeps its input only", "[fusion][saved][glu]") {
  const ProtoModel m = ModelWith(
      true, {"batch", 4, 4},
      [](ProtoModel& p, const std::string& r) {
        auto& split = p.Node("Split", {r}, {"a", "b"});
        testing::SetInt(split, "axis", -1);
        p.Node("Sigmoid", {"b"}, {"s"});
        p.Node("Mul", {"a", "s"}, {"y"});
        return std::string("y");
      },
      /*opset=*/17);
  CHECK(CountOp(m, "glu.onnx", "Glu") == 1);
  // glu_backward keeps r, kept by Relu already: 512 (torch: 512).
  CHECK(SavedBytes(m, "glu.onnx") == 2 * kFull);
  // Node by node: Sigmoid keeps s [2, 4, 4] (128 bytes), the Mul a (a view of r) and s: 640
  // (torch, the same gate written with chunk: 640).
  CHECK(SavedBytes(m, "glu.onnx", FusionSet::kNone) == 2 * kFull + 128);
}

// An int64 scalar initializer (Range reads scalars).
void Int64Scalar(ProtoModel& p, const std::string& name, int64_t value) {
  auto* t = p.model().mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_int64_data(value);
}

// T5's relative position bias in small: positions computed from constants (arange), their
// pairwise offsets shifted into [0, 7) index an embedding table E [7, 8]; the bias [4, 4, 8]
// summed over its first axis is added to h. memplan folds the offsets at import (every input is
// a constant); torch computes them in forward and embedding keeps them.
TEST_CASE("embedding indices computed from constants are kept, as torch keeps them",
          "[saved][embedding]") {
  const ProtoModel m = ModelWith(false, {"batch", 4, 8}, [](ProtoModel& p, const std::string& h) {
    Int64Scalar(p, "zero", 0);
    Int64Scalar(p, "four", 4);
    Int64Scalar(p, "one", 1);
    Int64Scalar(p, "three", 3);
    p.Int64s("axis0", {0});
    p.Int64s("axis1", {1});
    p.Initializer("E", onnx::TensorProto::FLOAT, {7, 8});
    p.Node("Range", {"zero", "four", "one"}, {"positions"});
    p.Node("Unsqueeze", {"positions", "axis0"}, {"row"});
    p.Node("Unsqueeze", {"positions", "axis1"}, {"column"});
    p.Node("Sub", {"row", "column"}, {"offsets"});
    p.Node("Add", {"offsets", "three"}, {"buckets"});
    p.Node("Gather", {"E", "buckets"}, {"bias"});
    auto& sum = p.Node("ReduceSum", {"bias", "axis0"}, {"summed"});
    testing::SetInt(sum, "keepdims", 0);
    p.Node("Add", {h, "summed"}, {"y"});
    return std::string("y");
  });
  // MatMul keeps x (256); embedding keeps its indices [4, 4] int64: 16 * 8 = 128; the sum and
  // the adds keep nothing: 384 (torch: 384).
  CHECK(SavedBytes(m, "relative_bias.onnx") == kFull + 128);
}

TEST_CASE("embedding indices sliced from a buffer are the buffer's: nothing new is kept",
          "[saved][embedding]") {
  // BERT's position_ids[:, :S]: a registered buffer [8] int64 sliced to [4] (a view), read by
  // an embedding of E [8, 8] whose rows are added to h.
  const ProtoModel m = ModelWith(false, {"batch", 4, 8}, [](ProtoModel& p, const std::string& h) {
    p.Int64s("position_ids", {0, 1, 2, 3, 4, 5, 6, 7});
    p.Int64s("start", {0});
    p.Int64s("end", {4});
    p.Initializer("E", onnx::TensorProto::FLOAT, {8, 8});
    p.Node("Slice", {"position_ids", "start", "end"}, {"positions"});
    p.Node("Gather", {"E", "positions"}, {"rows"});
    p.Node("Add", {h, "rows"}, {"y"});
    return std::string("y");
  });
  // MatMul keeps x (256); embedding keeps a view of the buffer, which is model state: 256
  // (torch, the buffer excluded as the rows exclude module buffers: 256).
  CHECK(SavedBytes(m, "position_slice.onnx") == kFull);
}

}  // namespace
}  // namespace memplan
