// Saved-for-backward bytes of the import fusions (graph/fusion/fusion_table.h), derived by hand
// from derivatives.yaml (docs/saved_for_backward.md) for a hand-built model
//
//   x [batch, 4, 8] -> MatMul(W [8, 8]) -> Relu -> r -> <pattern> -> y,   loss = sum(y)
//
// at batch 2, fp32. Every [2, 4, 8] tensor is 64 elements = 256 bytes; per-row statistics
// [2, 4, 1] are 8 elements = 32 bytes. Common to every case: MatMul keeps x (W requires grad)
// and Relu keeps r: 512 bytes. Autograd's fused ops (torch 1.13, read back with
// saved_tensors_hooks on CPU) keep r only for SiLU, Hardswish and GELU, and r, mean and rstd
// for LayerNorm: the fused numbers below are those.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <numbers>
#include <string>

#include "graph/onnx_import.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;
using testing::SimulateSumLoss;
using Pattern = std::function<std::string(ProtoModel&, const std::string& r)>;

void SetFloat(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

// A Constant node holding a scalar, as torch.onnx writes a Python number (a float initializer
// would be a trainable parameter here).
void Const(ProtoModel& p, const std::string& name, float v,
           int32_t type = onnx::TensorProto::FLOAT) {
  auto* a = p.Node("Constant", {}, {name}).add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(type);
  if (type == onnx::TensorProto::FLOAT) {
    a->mutable_t()->add_float_data(v);
  } else {
    a->mutable_t()->add_int32_data(static_cast<int32_t>(v));
  }
}

// F.gelu(x, approximate="tanh") as the TorchScript exporter writes it below opset 20 (torch 1.13):
// the cube as Mul(x, Mul(x, x)), then ((x * gate) * 0.5) into `out`.
void TorchScriptTanhGelu(ProtoModel& p, const std::string& x, const std::string& out) {
  Const(p, "kappa", 0.044715f);
  Const(p, "beta", static_cast<float>(std::sqrt(2.0 / std::numbers::pi)));
  Const(p, "one", 1.0f);
  Const(p, "half", 0.5f);
  p.Node("Mul", {x, x}, {"sq"});
  p.Node("Mul", {x, "sq"}, {"cube"});
  p.Node("Mul", {"kappa", "cube"}, {"k"});
  p.Node("Add", {x, "k"}, {"inner"});
  p.Node("Mul", {"beta", "inner"}, {"scaled"});
  p.Node("Tanh", {"scaled"}, {"t"});
  p.Node("Add", {"one", "t"}, {"gate"});
  p.Node("Mul", {x, "gate"}, {"prod"});
  p.Node("Mul", {"half", "prod"}, {out});
}

ProtoModel ModelWith(const Pattern& pattern) {
  ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8});
  m.Initializer("W", onnx::TensorProto::FLOAT, {8, 8});
  m.Node("MatMul", {"x", "W"}, {"h"});
  m.Node("Relu", {"h"}, {"r"});
  const std::string y = pattern(m, "r");
  m.Output(y, onnx::TensorProto::FLOAT, {{"batch", 4, 8}});
  return m;
}

int64_t SavedBytes(const ProtoModel& model, const std::string& file, FusionSet fusions) {
  ImportOptions options;
  options.fusions = fusions;
  return SimulateSumLoss(model.Import(file, options)).saved_activation_bytes;
}

int CountOp(const ProtoModel& model, const std::string& file, const std::string& op) {
  const Graph graph = model.Import(file);
  int count = 0;
  for (const Node& n : graph.nodes()) count += n.op_type == op;
  return count;
}

constexpr int64_t kCommon = 512;  // x for MatMul, r for Relu
constexpr int64_t kFull = 256;    // one [2, 4, 8] fp32 tensor
constexpr int64_t kRow = 32;      // one [2, 4, 1] fp32 statistic

TEST_CASE("SiLU: fused, Swish keeps its input only", "[fusion][saved]") {
  const ProtoModel m = ModelWith([](ProtoModel& p, const std::string& r) {
    p.Node("Sigmoid", {r}, {"s"});
    p.Node("Mul", {r, "s"}, {"y"});
    return std::string("y");
  });
  CHECK(CountOp(m, "silu.onnx", "Swish") == 1);
  // silu_backward(grad, self): r, already kept by Relu.
  CHECK(SavedBytes(m, "silu.onnx", FusionSet::kFusedOps) == kCommon);
  // Node by node: Sigmoid keeps s, Mul keeps r and s.
  CHECK(SavedBytes(m, "silu.onnx", FusionSet::kNone) == kCommon + kFull);
}

TEST_CASE("SwiGLU under --fusions liger keeps gate and up only, as Liger's function",
          "[fusion][saved]") {
  const ProtoModel m = ModelWith([](ProtoModel& p, const std::string& r) {
    p.Initializer("U", onnx::TensorProto::FLOAT, {8, 8});
    p.Node("MatMul", {r, "U"}, {"up"});
    p.Node("Sigmoid", {r}, {"s"});
    p.Node("Mul", {r, "s"}, {"silu"});
    p.Node("Mul", {"silu", "up"}, {"y"});
    return std::string("y");
  });
  // LigerSiLUMulFunction: ctx.save_for_backward(a, b): r (kept by Relu and the up MatMul) and up.
  CHECK(SavedBytes(m, "swiglu.onnx", FusionSet::kLiger) == kCommon + kFull);
  // Eager F.silu(r) * up: silu keeps r, the product keeps silu(r) and up.
  CHECK(SavedBytes(m, "swiglu.onnx", FusionSet::kFusedOps) == kCommon + 2 * kFull);
  CHECK(SavedBytes(m, "swiglu.onnx", FusionSet::kAll) == kCommon + 2 * kFull);
  // Node by node the Sigmoid's result is kept too (by Sigmoid and by the first Mul).
  CHECK(SavedBytes(m, "swiglu.onnx", FusionSet::kNone) == kCommon + 3 * kFull);
}

// Gemma's MLP, gelu_pytorch_tanh(gate) * up, with the gate exported as the TorchScript chain.
TEST_CASE("GeGLU under --fusions liger keeps gate and up only, as Liger's function",
          "[fusion][saved]") {
  const ProtoModel m = ModelWith([](ProtoModel& p, const std::string& r) {
    p.Initializer("U", onnx::TensorProto::FLOAT, {8, 8});
    p.Node("MatMul", {r, "U"}, {"up"});
    TorchScriptTanhGelu(p, r, "gelu");
    p.Node("Mul", {"gelu", "up"}, {"y"});
    return std::string("y");
  });
  CHECK(CountOp(m, "geglu.onnx", "Gelu") == 1);
  // LigerGELUMulFunction: ctx.save_for_backward(a, b): r (kept by Relu and the up MatMul) and up.
  CHECK(SavedBytes(m, "geglu.onnx", FusionSet::kLiger) == kCommon + kFull);
  // Eager gelu(r, approximate="tanh") * up: gelu keeps r, the product keeps gelu(r) and up.
  CHECK(SavedBytes(m, "geglu.onnx", FusionSet::kFusedOps) == kCommon + 2 * kFull);
  CHECK(SavedBytes(m, "geglu.onnx", FusionSet::kAll) == kCommon + 2 * kFull);
}

TEST_CASE("an exact (erf) GELU gate is not Liger's GeGLU", "[fusion][saved]") {
  const ProtoModel m = ModelWith([](ProtoModel& p, const std::string& r) {
    p.Initializer("U", onnx::TensorProto::FLOAT, {8, 8});
    p.Node("MatMul", {r, "U"}, {"up"});
    Const(p, "root2", static_cast<float>(std::numbers::sqrt2));
    Const(p, "one", 1.0f);
    Const(p, "half", 0.5f);
    p.Node("Div", {r, "root2"}, {"d"});
    p.Node("Erf", {"d"}, {"e"});
    p.Node("Add", {"e", "one"}, {"gate"});
    p.Node("Mul", {r, "gate"}, {"prod"});
    p.Node("Mul", {"prod", "half"}, {"gelu"});
    p.Node("Mul", {"gelu", "up"}, {"y"});
    return std::string("y");
  });
  CHECK(CountOp(m, "erf_geglu.onnx", "Gelu") == 1);
  // LigerGEGLUMLP takes gelu_pytorch_tanh only: eager's gelu keeps r, the product gelu(r) and up.
  CHECK(SavedBytes(m, "erf_geglu.onnx", FusionSet::kLiger) == kCommon + 2 * kFull);
}

TEST_CASE("HardSwish: fused, keeps its input only", "[fusion][saved]") {
  const ProtoModel m = ModelWith([](ProtoModel& p, const std::string& r) {
    SetFloat(p.Node("HardSigmoid", {r}, {"hs"}), "alpha", 1.0f / 6.0f);
    p.Node("Mul", {r, "hs"}, {"y"});
    return std::string("y");
  });
  CHECK(CountOp(m, "hardswish.onnx", "HardSwish") == 1);
  CHECK(SavedBytes(m, "hardswish.onnx", FusionSet::kFusedOps) == kCommon);
  // HardSigmoid keeps r; Mul keeps r and hardsigmoid(r).
  CHECK(SavedBytes(m, "hardswish.onnx", FusionSet::kNone) == kCommon + kFull);
}

TEST_CASE("tanh GELU: fused, keeps its input only", "[fusion][saved]") {
  const ProtoModel m = ModelWith([](ProtoModel& p, const std::string& r) {
    TorchScriptTanhGelu(p, r, "y");
    return std::string("y");
  });
  CHECK(CountOp(m, "tanh_gelu.onnx", "Gelu") == 1);
  CHECK(SavedBytes(m, "tanh_gelu.onnx", FusionSet::kFusedOps) == kCommon);
  // Node by node: Mul(r, r) keeps r; Mul(r, sq) keeps sq; the constant products keep only their
  // (free) constants; Tanh keeps t; Mul(r, gate) keeps gate: sq, t and gate.
  CHECK(SavedBytes(m, "tanh_gelu.onnx", FusionSet::kNone) == kCommon + 3 * kFull);
}

// F.gelu(approximate="tanh") as the dynamo exporter writes it (onnxscript torch_lib): the cube is
// a Pow and the half multiplies the gate. aten::gelu keeps x only.
TEST_CASE("tanh GELU, dynamo exporter's form: fused, keeps its input only", "[fusion][saved]") {
  const ProtoModel m = ModelWith([](ProtoModel& p, const std::string& r) {
    Const(p, "three", 3.0f);
    Const(p, "kappa", 0.044715f);
    Const(p, "beta", static_cast<float>(std::sqrt(2.0 / std::numbers::pi)));
    Const(p, "one", 1.0f);
    Const(p, "half", 0.5f);
    p.Node("Pow", {r, "three"}, {"cube"});
    p.Node("Mul", {"kappa", "cube"}, {"k"});
    p.Node("Add", {r, "k"}, {"inner"});
    p.Node("Mul", {"beta", "inner"}, {"scaled"});
    p.Node("Tanh", {"scaled"}, {"t"});
    p.Node("Add", {"t", "one"}, {"gate"});
    p.Node("Mul", {"half", "gate"}, {"half_gate"});
    p.Node("Mul", {r, "half_gate"}, {"y"});
    return std::string("y");
  });
  CHECK(CountOp(m, "tanh_gelu_torchlib.onnx", "Gelu") == 1);
  CHECK(SavedBytes(m, "tanh_gelu_torchlib.onnx", FusionSet::kFusedOps) == kCommon);
  // Node by node: Pow(r, 3) keeps r (already kept); the constant products and the Adds keep
  // nothing activation-sized; Tanh keeps t; Mul(r, half_gate) keeps r and half_gate: t and
  // half_gate, 2 x 256 B on top of the 512.
  CHECK(SavedBytes(m, "tanh_gelu_torchlib.onnx", FusionSet::kNone) == kCommon + 2 * kFull);
}

// x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0))) written by hand (ESM's gelu), traced with the
// half on x first. Eager autograd runs it op by op (derivatives.yaml): the Div and the Mul by a
// Python scalar keep nothing, erf keeps its input d, Mul(halved, gate) keeps both. So three
// [2, 4, 8] tensors on top of the 512: 512 + 3 x 256 = 1,280 B by default (torch 2.15 measured
// 3 x 8,192 B per MLP on ESM's [2, 16, 64]); fused (kAll) only x, as F.gelu.
TEST_CASE("erf GELU written by hand, half on x first: planned node by node", "[fusion][saved]") {
  const ProtoModel m = ModelWith([](ProtoModel& p, const std::string& r) {
    Const(p, "root2", static_cast<float>(std::sqrt(2.0)));
    Const(p, "one", 1.0f);
    Const(p, "half", 0.5f);
    p.Node("Div", {r, "root2"}, {"d"});
    p.Node("Erf", {"d"}, {"e"});
    p.Node("Add", {"e", "one"}, {"gate"});
    p.Node("Mul", {r, "half"}, {"halved"});
    p.Node("Mul", {"halved", "gate"}, {"y"});
    return std::string("y");
  });
  CHECK(CountOp(m, "erf_gelu_formula.onnx", "Gelu") == 0);
  CHECK(SavedBytes(m, "erf_gelu_formula.onnx", FusionSet::kFusedOps) == kCommon + 3 * kFull);
  CHECK(SavedBytes(m, "erf_gelu_formula.onnx", FusionSet::kAll) == kCommon);
}

// nn.LayerNorm(8) at opset 13 as torch 1.13 writes it.
std::string LayerNormChain(ProtoModel& p, const std::string& r) {
  p.Initializer("gamma", onnx::TensorProto::FLOAT, {8});
  p.Initializer("beta", onnx::TensorProto::FLOAT, {8});
  Const(p, "two", 2.0f);
  Const(p, "eps", 1e-5f);
  testing::SetInts(p.Node("ReduceMean", {r}, {"mean"}), "axes", {-1});
  p.Node("Sub", {r, "mean"}, {"d"});
  p.Node("Pow", {"d", "two"}, {"sq"});
  testing::SetInts(p.Node("ReduceMean", {"sq"}, {"var"}), "axes", {-1});
  p.Node("Add", {"var", "eps"}, {"ve"});
  p.Node("Sqrt", {"ve"}, {"std"});
  p.Node("Div", {"d", "std"}, {"n"});
  p.Node("Mul", {"n", "gamma"}, {"scaled"});
  p.Node("Add", {"scaled", "beta"}, {"y"});
  return "y";
}

TEST_CASE("LayerNorm below opset 17: fused, keeps input, mean and rstd", "[fusion][saved]") {
  const ProtoModel m = ModelWith(LayerNormChain);
  CHECK(CountOp(m, "layernorm.onnx", "LayerNormalization") == 1);
  // native_layer_norm: r (kept by Relu already), gamma and beta (parameters), mean and rstd.
  CHECK(SavedBytes(m, "layernorm.onnx", FusionSet::kFusedOps) == kCommon + 2 * kRow);
  // Node by node: Pow keeps d; Sqrt keeps its output (a statistic); Div keeps d and it; Mul keeps
  // n (gamma requires grad).
  CHECK(SavedBytes(m, "layernorm.onnx", FusionSet::kNone) == kCommon + 2 * kFull + kRow);
}

// nn.GroupNorm(2, 4) on r [2, 4, 8] as torch.onnx writes it below opset 18.
std::string GroupNormChain(ProtoModel& p, const std::string& r) {
  p.Initializer("gn_w", onnx::TensorProto::FLOAT, {4});
  p.Initializer("gn_b", onnx::TensorProto::FLOAT, {4});
  p.Int64s("groups_shape", {0, 2, -1});
  p.Int64s("axes", {1});
  for (const char* name : {"ones", "zeros"}) {
    auto* a = p.Node("Constant", {}, {name}).add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a->mutable_t()->add_dims(2);
    for (int i = 0; i < 2; ++i) a->mutable_t()->add_float_data(name[0] == 'o' ? 1.0f : 0.0f);
  }
  p.Node("Reshape", {r, "groups_shape"}, {"grouped"});
  SetFloat(p.Node("InstanceNormalization", {"grouped", "ones", "zeros"}, {"normed"}), "epsilon",
           1e-5f);
  p.Node("Shape", {r}, {"r_shape"});
  p.Node("Reshape", {"normed", "r_shape"}, {"n"});
  p.Node("Unsqueeze", {"gn_w", "axes"}, {"w1"});
  p.Node("Unsqueeze", {"gn_b", "axes"}, {"b1"});
  p.Node("Mul", {"n", "w1"}, {"scaled"});
  p.Node("Add", {"scaled", "b1"}, {"y"});
  return "y";
}

TEST_CASE("GroupNorm below opset 18: fused, keeps input and [N, G] statistics", "[fusion][saved]") {
  const ProtoModel m = ModelWith(GroupNormChain);
  CHECK(CountOp(m, "groupnorm.onnx", "GroupNormalization") == 1);
  // native_group_norm: r (kept by Relu), w (a parameter), mean and rstd [2, 2] fp32: 16 B each.
  CHECK(SavedBytes(m, "groupnorm.onnx", FusionSet::kFusedOps) == kCommon + 2 * 16);
  // Node by node the Mul keeps the normalised tensor for w's gradient: a full tensor at least.
  CHECK(SavedBytes(m, "groupnorm.onnx", FusionSet::kNone) >= kCommon + kFull);
}

std::string RmsNormChain(ProtoModel& p, const std::string& r) {
  p.Initializer("w", onnx::TensorProto::FLOAT, {8});
  Const(p, "two", 2.0f);
  Const(p, "eps", 1e-6f);
  Const(p, "one", 1.0f);
  p.Node("Pow", {r, "two"}, {"sq"});
  testing::SetInts(p.Node("ReduceMean", {"sq"}, {"ms"}), "axes", {-1});
  p.Node("Add", {"ms", "eps"}, {"ve"});
  p.Node("Sqrt", {"ve"}, {"root"});
  p.Node("Div", {"one", "root"}, {"rstd"});
  p.Node("Mul", {r, "rstd"}, {"n"});
  p.Node("Mul", {"w", "n"}, {"y"});
  return "y";
}

TEST_CASE("RMSNorm formula: fused only under kAll, then keeps input, weight and rstd",
          "[fusion][saved]") {
  const ProtoModel m = ModelWith(RmsNormChain);
  CHECK(CountOp(m, "rmsnorm.onnx", "RMSNormalization") == 0);
  // _fused_rms_norm: r (kept by Relu), w (a parameter), rstd.
  CHECK(SavedBytes(m, "rmsnorm.onnx", FusionSet::kAll) == kCommon + kRow);
  // LigerRMSNormFunction (llama casting): ctx.save_for_backward(X, W, RSTD), the same set.
  CHECK(SavedBytes(m, "rmsnorm.onnx", FusionSet::kLiger) == kCommon + kRow);
  // As eager autograd runs the formula, with torch.rsqrt one op (the rsqrt entry): Pow keeps r;
  // Rsqrt keeps its result rstd; Mul(r, rstd) keeps rstd; Mul(w, n) keeps n. torch 1.13 with
  // saved_tensors_hooks on this model: x, r, rstd, n (and the parameters W and w).
  CHECK(CountOp(m, "rmsnorm.onnx", "Rsqrt") == 1);
  CHECK(SavedBytes(m, "rmsnorm.onnx", FusionSet::kFusedOps) == kCommon + kRow + kFull);
  // Node by node: Sqrt keeps root, Div(1, root) keeps root (and the free constant), and the Mul
  // keeps Div's output too: one statistic more.
  CHECK(SavedBytes(m, "rmsnorm.onnx", FusionSet::kNone) == kCommon + 2 * kRow + kFull);
}

TEST_CASE("Dropout(p=0) becomes Identity: no mask, no new tensor", "[fusion][saved]") {
  auto dropout = [](float ratio) {
    return ModelWith([ratio](ProtoModel& p, const std::string& r) {
      Const(p, "ratio", ratio);
      Const(p, "training", 1.0f, onnx::TensorProto::BOOL);
      p.Node("Dropout", {r, "ratio", "training"}, {"y", "mask"});
      return std::string("y");
    });
  };
  const ProtoModel zero = dropout(0.0f);
  CHECK(CountOp(zero, "dropout0.onnx", "Identity") == 1);
  CHECK(SavedBytes(zero, "dropout0.onnx", FusionSet::kFusedOps) == kCommon);
  // p = 0.1 keeps its bool mask: 64 elements, 1 byte each.
  const ProtoModel tenth = dropout(0.1f);
  CHECK(CountOp(tenth, "dropout1.onnx", "Dropout") == 1);
  CHECK(SavedBytes(tenth, "dropout1.onnx", FusionSet::kFusedOps) == kCommon + 64);
}

TEST_CASE("AvgPool2d(3, 2, padding=1): fused, keeps the unpadded input only", "[fusion][saved]") {
  // torch: r = relu(conv(x)); F.avg_pool2d(r, 3, 2, padding=1) with x [2, 4, 8, 8] and a 1x1
  // conv. Conv keeps x and relu r (512 elements = 2048 bytes each); avg_pool2d keeps self, r
  // again: 4096 bytes (torch 1.13 saved_tensors_hooks). Exported as Pad + AveragePool, the pool
  // would keep the padded [2, 4, 10, 10] (800 elements = 3200 bytes) besides: 7296.
  ProtoModel m(/*opset=*/17);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 4, 8, 8});
  m.Initializer("Wc", onnx::TensorProto::FLOAT, {4, 4, 1, 1});
  m.Int64s("pads", {0, 0, 1, 1, 0, 0, 1, 1});
  testing::SetInts(m.Node("Conv", {"x", "Wc"}, {"c"}), "kernel_shape", {1, 1});
  m.Node("Relu", {"c"}, {"r"});
  testing::SetString(m.Node("Pad", {"r", "pads"}, {"p"}), "mode", "constant");
  auto& pool = m.Node("AveragePool", {"p"}, {"y"});
  testing::SetInts(pool, "kernel_shape", {3, 3});
  testing::SetInts(pool, "strides", {2, 2});
  testing::SetInts(pool, "pads", {0, 0, 0, 0});
  m.Output("y", onnx::TensorProto::FLOAT, {{"batch", 4, 4, 4}});
  CHECK(CountOp(m, "avg_pool.onnx", "Pad") == 0);
  CHECK(SavedBytes(m, "avg_pool.onnx", FusionSet::kFusedOps) == 4096);
  CHECK(SavedBytes(m, "avg_pool.onnx", FusionSet::kNone) == 7296);
}

}  // namespace
}  // namespace memplan
