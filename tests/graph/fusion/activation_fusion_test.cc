// The activation entries of the import-fusion table on hand-built protos, in the node shapes
// torch 1.13's exporter writes at opset 13 (read back with torch.onnx.export, training mode):
// tanh_gelu (and the gelu_new formula), silu, swiglu (Liger's), hard_swish, zero_dropout. Each
// fuses the exported form and leaves look-alikes (a wrong constant, an intermediate read elsewhere
// or returned as a graph output, a gate multiplying another tensor) as they are.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <string>

#include "graph/fusion/fusion_table.h"
#include "tests/graph/fusion/fusion_proto_builder.h"

namespace memplan::testing {
namespace {

// ---------------------------------------------------------------- tanh GELU

struct TanhGeluConstants {
  float kappa = 0.044715f;
  float beta = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
  float half = 0.5f;
};

// F.gelu(x, approximate="tanh") as torch 1.13 exports it (symbolic_opset9.gelu):
//   Mul(x, x), Mul(x, .), Mul(kappa, .), Add(x, .), Mul(beta, .), Tanh, Add(1, .), Mul(x, .),
//   Mul(0.5, .)
std::string TorchTanhGelu(FusionProtoBuilder& b, const std::string& s, const std::string& x,
                          TanhGeluConstants c = {}) {
  auto sq = b.Op("Mul", s + "/Mul", {x, x});
  auto cube = b.Op("Mul", s + "/Mul_1", {x, sq});
  auto k = b.Op("Mul", s + "/Mul_2", {b.Scalar(s + "/Constant", c.kappa), cube});
  auto inner = b.Op("Add", s + "/Add", {x, k});
  auto scaled = b.Op("Mul", s + "/Mul_3", {b.Scalar(s + "/Constant_1", c.beta), inner});
  auto t = b.Op("Tanh", s + "/Tanh", {scaled});
  auto gate = b.Op("Add", s + "/Add_1", {b.Scalar(s + "/Constant_2", 1.0f), t});
  auto prod = b.Op("Mul", s + "/Mul_4", {x, gate});
  return b.Op("Mul", s + "/Mul_5", {b.Scalar(s + "/Constant_3", c.half), prod});
}

// GPT-2's gelu_new, 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))), as exported:
//   Mul(x, 0.5), Pow(x, 3), Mul(., kappa), Add(x, .), Mul(., beta), Tanh, Add(., 1), Mul(half, .)
std::string GeluNew(FusionProtoBuilder& b, const std::string& s, const std::string& x) {
  TanhGeluConstants c;
  auto half = b.Op("Mul", s + "/Mul", {x, b.Scalar(s + "/Constant", 0.5f)});
  auto cube = b.Op("Pow", s + "/Pow", {x, b.Scalar(s + "/Constant_1", 3.0f)});
  auto k = b.Op("Mul", s + "/Mul_1", {cube, b.Scalar(s + "/Constant_2", c.kappa)});
  auto inner = b.Op("Add", s + "/Add", {x, k});
  auto scaled = b.Op("Mul", s + "/Mul_2", {inner, b.Scalar(s + "/Constant_3", c.beta)});
  auto t = b.Op("Tanh", s + "/Tanh", {scaled});
  auto gate = b.Op("Add", s + "/Add_1", {t, b.Scalar(s + "/Constant_4", 1.0f)});
  return b.Op("Mul", s + "/Mul_3", {half, gate});
}

// F.gelu(x, approximate="tanh") as torch.onnx's dynamo exporter writes it at opset 18 (onnxscript
// torch_lib _aten_gelu_approximate_tanh; read back from Gemma's and SigLIP's exports, torch 2.15):
//   Pow(x, 3), Mul(kappa, .), Add(x, .), Mul(beta, .), Tanh, Add(., 1), Mul(0.5, .), Mul(x, .)
std::string TorchLibTanhGelu(FusionProtoBuilder& b, const std::string& s, const std::string& x) {
  TanhGeluConstants c;
  auto cube = b.Op("Pow", s + "/Pow", {x, b.Scalar(s + "/val_1", 3.0f)});
  auto k = b.Op("Mul", s + "/Mul", {b.Scalar(s + "/val_2", c.kappa), cube});
  auto inner = b.Op("Add", s + "/Add", {x, k});
  auto scaled = b.Op("Mul", s + "/Mul_1", {b.Scalar(s + "/val_3", c.beta), inner});
  auto t = b.Op("Tanh", s + "/Tanh", {scaled});
  auto gate = b.Op("Add", s + "/Add_1", {t, b.Scalar(s + "/val_4", 1.0f)});
  auto half_gate = b.Op("Mul", s + "/Mul_2", {b.Scalar(s + "/val_5", c.half), gate});
  return b.Op("Mul", s + "/gelu", {x, half_gate});
}

TEST_CASE("F.gelu(approximate='tanh') as exported becomes Gelu(approximate=tanh)",
          "[import][fusion][gelu]") {
  FusionProtoBuilder b;
  auto x = b.Op("Relu", "/pre", {"input"});
  auto y = TorchTanhGelu(b, "/mlp/act", x);
  b.Output(b.Op("Relu", "/post", {y}));
  // Relu, Gelu, Relu: the nine pattern nodes and the four Constant nodes are gone.
  const auto& gelu = FuseBetweenRelus(b, "tanh_gelu", "Gelu", "/mlp/act/Gelu");
  CHECK(StringAttribute(gelu, "approximate") == "tanh");
  CHECK(gelu.input(0) == x);
  CHECK(gelu.output(0) == y);
  // The formula entry does not take the F.gelu form (its cube is Mul(x, Mul(x, x))).
  FusionProtoBuilder c;
  c.Output(TorchTanhGelu(c, "/g", c.Op("Relu", "/pre", {"input"})));
  CHECK(Fuse(c, "tanh_gelu_formula") == 0);
}

TEST_CASE("GPT-2's gelu_new is a formula: fused only by the formula entry",
          "[import][fusion][gelu]") {
  FusionProtoBuilder b;
  auto x = b.Op("Relu", "/pre", {"input"});
  auto y = GeluNew(b, "/h.0/mlp/act", x);
  b.Output(y);
  CHECK(Fuse(b, "tanh_gelu") == 0);
  REQUIRE(Fuse(b, "tanh_gelu_formula") == 1);
  REQUIRE(b.graph().node_size() == 2);
  CHECK(b.graph().node(1).op_type() == "Gelu");
  CHECK(StringAttribute(b.graph().node(1), "approximate") == "tanh");
  CHECK(b.graph().node(1).input(0) == x);
  CHECK(b.graph().node(1).output(0) == y);

  // Under the default set only F.gelu's form is fused; kAll takes both.
  FusionProtoBuilder d;
  auto xd = d.Op("Relu", "/pre", {"input"});
  d.Output(GeluNew(d, "/a", xd));
  d.Output(TorchTanhGelu(d, "/b", xd));
  CHECK(FuseImportPatterns(d.model()).by_entry == std::map<std::string, int>{{"tanh_gelu", 1}});
  CHECK(FuseImportPatterns(d.model(), FusionSet::kAll).by_entry ==
        std::map<std::string, int>{{"tanh_gelu_formula", 1}});
  CHECK(CountOps(d.graph(), "Tanh") == 0);
}

TEST_CASE("F.gelu(approximate='tanh') from the dynamo exporter is fused by default",
          "[import][fusion][gelu]") {
  FusionProtoBuilder b;
  auto x = b.Op("Relu", "/pre", {"input"});
  auto y = TorchLibTanhGelu(b, "/mlp/act", x);
  b.Output(b.Op("Relu", "/post", {y}));
  // Relu, Gelu, Relu: the eight pattern nodes and the five scalars are gone.
  const auto& gelu = FuseBetweenRelus(b, "tanh_gelu_torchlib", "Gelu", "/mlp/act/Gelu");
  CHECK(StringAttribute(gelu, "approximate") == "tanh");
  CHECK(gelu.input(0) == x);
  CHECK(gelu.output(0) == y);

  // The half on the gate tells it from gelu_new (the half on x first), whose Pow it shares:
  // gelu_new stays unfused by default, F.gelu's dynamo form does not need kAll.
  FusionProtoBuilder d;
  auto xd = d.Op("Relu", "/pre", {"input"});
  d.Output(GeluNew(d, "/a", xd));
  d.Output(TorchLibTanhGelu(d, "/b", xd));
  CHECK(Fuse(d, "tanh_gelu") == 0);  // the products cube only
  CHECK(FuseImportPatterns(d.model()).by_entry ==
        std::map<std::string, int>{{"tanh_gelu_torchlib", 1}});
  CHECK(CountOps(d.graph(), "Tanh") == 1);  // gelu_new's
  CHECK(CountOps(d.graph(), "Pow") == 1);

  // Nor does the TorchScript form's (x * gate) * 0.5 with a Pow cube (a hand-written formula).
  FusionProtoBuilder e;
  auto xe = e.Op("Relu", "/pre", {"input"});
  auto cube = e.Op("Pow", "/g/Pow", {xe, e.Scalar("/g/three", 3.0f)});
  auto k = e.Op("Mul", "/g/Mul", {e.Scalar("/g/kappa", 0.044715f), cube});
  auto inner = e.Op("Add", "/g/Add", {xe, k});
  auto scaled =
      e.Op("Mul", "/g/Mul_1",
           {e.Scalar("/g/beta", static_cast<float>(std::sqrt(2.0 / std::numbers::pi))), inner});
  auto t = e.Op("Tanh", "/g/Tanh", {scaled});
  auto gate = e.Op("Add", "/g/Add_1", {e.Scalar("/g/one", 1.0f), t});
  auto prod = e.Op("Mul", "/g/Mul_2", {xe, gate});
  e.Output(e.Op("Mul", "/g/Mul_3", {e.Scalar("/g/half", 0.5f), prod}));
  CHECK(Fuse(e, "tanh_gelu_torchlib") == 0);
  CHECK(Fuse(e, "tanh_gelu_formula") == 1);
}

TEST_CASE("tanh GELU look-alikes are left alone", "[import][fusion][gelu]") {
  const struct {
    const char* section;
    TanhGeluConstants constants;
  } wrong_constants[] = {
      {"the cubic coefficient is not 0.044715", {.kappa = 0.05f}},
      {"the scale is not sqrt(2/pi)", {.beta = 0.8f}},
      {"the half is not 0.5", {.half = 0.25f}},
  };
  for (const auto& wrong : wrong_constants) {
    DYNAMIC_SECTION(wrong.section) {
      FusionProtoBuilder b;
      b.Output(TorchTanhGelu(b, "/g", b.Op("Relu", "/pre", {"input"}), wrong.constants));
      CHECK(Fuse(b, "tanh_gelu") == 0);
    }
  }
  // Left as written, so its one Tanh stays.
  CheckLeftAloneWhenEscaping(
      "tanh_gelu",
      [](FusionProtoBuilder& b, const std::string& x) { return TorchTanhGelu(b, "/g", x); },
      {{"tanh's output is also read elsewhere", "/g/Tanh_out", Escape::kReadElsewhere},
       {"the cube is a graph output", "/g/Mul_1_out", Escape::kGraphOutput}});
}

// ---------------------------------------------------------------- SiLU

TEST_CASE("x * Sigmoid(x) becomes Swish (SiLU)", "[import][fusion][silu]") {
  FusionProtoBuilder b;
  auto x = b.Op("Conv", "/features/0/0", {"input", "w"});
  auto s = b.Op("Sigmoid", "/features/0/2/Sigmoid", {x});
  auto y = b.Op("Mul", "/features/0/2/Mul", {x, s});
  b.Output(b.Op("Relu", "/post", {y}));
  REQUIRE(Fuse(b, "silu") == 1);
  REQUIRE(b.graph().node_size() == 3);
  const auto& swish = b.graph().node(1);
  CHECK(swish.op_type() == "Swish");
  CHECK(swish.name() == "/features/0/2/Swish");
  CHECK(FloatAttribute(swish, "alpha") == 1.0f);
  CHECK(swish.input(0) == x);
  CHECK(swish.output(0) == y);
}

TEST_CASE("SiLU look-alikes are left alone", "[import][fusion][silu]") {
  SECTION("a sigmoid gate times another tensor (squeeze-and-excitation, SwiGLU)") {
    FusionProtoBuilder b;
    auto x = b.Op("Relu", "/x", {"input"});
    auto gate = b.Op("Sigmoid", "/se/Sigmoid", {b.Op("Relu", "/se/fc", {x})});
    b.Output(b.Op("Mul", "/se/Mul", {gate, x}));
    CHECK(Fuse(b, "silu") == 0);
  }
  CheckLeftAloneWhenEscaping(
      "silu",
      [](FusionProtoBuilder& b, const std::string& x) {
        return b.Op("Mul", "/Mul", {x, b.Op("Sigmoid", "/Sigmoid", {x})});
      },
      {{"the sigmoid is read twice", "/Sigmoid_out", Escape::kReadElsewhere},
       {"the sigmoid is a graph output", "/Sigmoid_out", Escape::kGraphOutput}});
  SECTION("sigmoid(x) squared") {
    FusionProtoBuilder b;
    auto s = b.Op("Sigmoid", "/Sigmoid", {b.Op("Relu", "/x", {"input"})});
    b.Output(b.Op("Mul", "/Mul", {s, s}));
    CHECK(Fuse(b, "silu") == 0);
  }
}

// ---------------------------------------------------------------- SwiGLU (Liger)

// A gated MLP's act_fn(gate_proj(x)) * up_proj(x) as exported: the activation `act` writes from
// the gate, then Mul(., up) (or Mul(up, .)) and down_proj.
struct ExportedGatedMlp {
  std::string gate, up, out;
};
using Activation = std::function<std::string(FusionProtoBuilder&, const std::string& gate)>;
ExportedGatedMlp GatedMlp(FusionProtoBuilder& b, const Activation& act, bool up_first = false) {
  auto x = b.Op("Relu", "/x", {"input"});
  auto gate = b.Op("MatMul", "/mlp/gate_proj/MatMul", {x, b.Weight("gate_w", {8, 16})});
  auto up = b.Op("MatMul", "/mlp/up_proj/MatMul", {x, b.Weight("up_w", {8, 16})});
  auto a = act(b, gate);
  auto out = up_first ? b.Op("Mul", "/mlp/Mul", {up, a}) : b.Op("Mul", "/mlp/Mul", {a, up});
  b.Output(b.Op("MatMul", "/mlp/down_proj/MatMul", {out, b.Weight("down_w", {16, 8})}));
  return {gate, up, out};
}

// The MLP after fusion: x, gate, up, one memplan `op_type` node reading gate and up and writing
// the product, down.
void CheckGatedMlpFused(FusionProtoBuilder& b, const ExportedGatedMlp& mlp,
                        const std::string& op_type) {
  REQUIRE(b.graph().node_size() == 5);
  const auto& fused = b.graph().node(3);
  CHECK(fused.op_type() == op_type);
  CHECK(fused.domain() == "memplan");
  REQUIRE(fused.input_size() == 2);
  CHECK(fused.input(0) == mlp.gate);
  CHECK(fused.input(1) == mlp.up);
  CHECK(fused.output(0) == mlp.out);
}

// A LLaMA MLP: SiLU as Sigmoid, Mul.
ExportedGatedMlp LlamaMlpGate(FusionProtoBuilder& b, bool up_first = false) {
  auto silu = [](FusionProtoBuilder& p, const std::string& gate) {
    return p.Op("Mul", "/mlp/act_fn/Mul", {gate, p.Op("Sigmoid", "/mlp/act_fn/Sigmoid", {gate})});
  };
  return GatedMlp(b, silu, up_first);
}

TEST_CASE("silu(gate) * up becomes memplan:SwiGlu under the Liger set only",
          "[import][fusion][swiglu]") {
  for (bool up_first : {false, true}) {
    FusionProtoBuilder b;
    const ExportedGatedMlp mlp = LlamaMlpGate(b, up_first);
    const FusionCounts counts = FuseImportPatterns(b.model(), FusionSet::kLiger);
    CHECK(counts.by_entry == std::map<std::string, int>{{"silu", 1}, {"swiglu", 1}});
    CheckGatedMlpFused(b, mlp, "SwiGlu");
  }
  // Eager autograd keeps silu(gate) for the product: the default and the formulas set leave the
  // product as it is.
  for (FusionSet set : {FusionSet::kFusedOps, FusionSet::kAll}) {
    FusionProtoBuilder b;
    LlamaMlpGate(b);
    CHECK(FuseImportPatterns(b.model(), set).by_entry == std::map<std::string, int>{{"silu", 1}});
  }
}

// The table's [formulas] and [liger] marks (graph/fusion/fusion_table.h), written out by hand.
TEST_CASE("the Liger set applies the default entries, Liger's RMSNorm, SwiGLU and GeGLU",
          "[import][fusion][swiglu]") {
  int liger_applied = 0;
  for (const FusionEntry& e : FusionTable()) {
    const std::string name = e.name;
    const bool formula = name == "rms_norm" || name == "erf_gelu_formula" ||
                         name == "tanh_gelu_formula" || name == "variance_formula";
    const bool liger_only = name == "swiglu" || name == "geglu";
    const bool by_default = !formula && !liger_only;
    CAPTURE(name);
    CHECK_FALSE(FusionSetApplies(FusionSet::kNone, e));
    CHECK(FusionSetApplies(FusionSet::kFusedOps, e) == by_default);
    CHECK(FusionSetApplies(FusionSet::kAll, e) == !liger_only);
    CHECK(FusionSetApplies(FusionSet::kLiger, e) ==
          (by_default || name == "rms_norm" || liger_only));
    liger_applied += FusionSetApplies(FusionSet::kLiger, e) ? 1 : 0;
  }
  CHECK(liger_applied == static_cast<int>(FusionTable().size()) - 3);  // three formulas left out
}

TEST_CASE("SwiGLU look-alikes are left alone", "[import][fusion][swiglu]") {
  SECTION("silu(x) * x: the product of the gate with its own input is not a gate") {
    FusionProtoBuilder b;
    auto x = b.Op("Relu", "/x", {"input"});
    auto silu = b.Op("Mul", "/act/Mul", {x, b.Op("Sigmoid", "/act/Sigmoid", {x})});
    b.Output(b.Op("Mul", "/Mul", {silu, x}));
    CHECK(FuseImportPatterns(b.model(), FusionSet::kLiger).by_entry ==
          std::map<std::string, int>{{"silu", 1}});
  }
  SECTION("silu(gate) read by another node too") {
    FusionProtoBuilder b;
    auto x = b.Op("Relu", "/x", {"input"});
    auto silu = b.Op("Mul", "/act/Mul", {x, b.Op("Sigmoid", "/act/Sigmoid", {x})});
    auto up = b.Op("Relu", "/up", {"input"});
    b.Output(b.Op("Mul", "/Mul", {silu, up}));
    b.Output(b.Op("Relu", "/other", {silu}));
    CHECK(FuseImportPatterns(b.model(), FusionSet::kLiger).by_entry ==
          std::map<std::string, int>{{"silu", 1}});
  }
}

// ---------------------------------------------------------------- GeGLU (Liger)

// Gemma's MLP, gelu_pytorch_tanh(gate_proj(x)) * up_proj(x): the tanh GELU chain as the
// TorchScript exporter writes it (or its exact form), then Mul(., up).
TEST_CASE("gelu_tanh(gate) * up becomes memplan:GeGlu under the Liger set only",
          "[import][fusion][geglu]") {
  auto gemma_mlp = [](FusionProtoBuilder& b, bool exact) {
    return GatedMlp(b, [exact](FusionProtoBuilder& p, const std::string& gate) {
      return exact ? p.Op("Gelu", "/mlp/act_fn/Gelu", {gate})
                   : TorchTanhGelu(p, "/mlp/act_fn", gate);
    });
  };
  FusionProtoBuilder b;
  const ExportedGatedMlp mlp = gemma_mlp(b, /*exact=*/false);
  CHECK(FuseImportPatterns(b.model(), FusionSet::kLiger).by_entry ==
        std::map<std::string, int>{{"tanh_gelu", 1}, {"geglu", 1}});
  CheckGatedMlpFused(b, mlp, "GeGlu");
  // Eager autograd keeps gelu(gate) for the product.
  for (FusionSet set : {FusionSet::kFusedOps, FusionSet::kAll}) {
    FusionProtoBuilder d;
    gemma_mlp(d, /*exact=*/false);
    CHECK(FuseImportPatterns(d.model(), set).by_entry ==
          std::map<std::string, int>{{"tanh_gelu", 1}});
  }
  // An opset-20 Gelu without approximate="tanh" is the exact GELU, which LigerGEGLUMLP refuses.
  FusionProtoBuilder e;
  gemma_mlp(e, /*exact=*/true);
  CHECK(FuseImportPatterns(e.model(), FusionSet::kLiger).total() == 0);
}

// ---------------------------------------------------------------- HardSwish

std::string TorchHardSwish(FusionProtoBuilder& b, const std::string& s, const std::string& x,
                           float alpha = 1.0f / 6.0f) {
  auto& h = b.Node("HardSigmoid", s + "/HardSigmoid", {x});
  AddFloat(h, "alpha", alpha);
  return b.Op("Mul", s + "/Mul", {x, h.output(0)});
}

TEST_CASE("x * HardSigmoid(x, 1/6) becomes HardSwish", "[import][fusion][hardswish]") {
  FusionProtoBuilder b;
  auto x = b.Op("Conv", "/features/0/0", {"input", "w"});
  auto y = TorchHardSwish(b, "/features/0/2", x);
  b.Output(y);
  REQUIRE(Fuse(b, "hard_swish") == 1);
  REQUIRE(b.graph().node_size() == 2);
  CHECK(b.graph().node(1).op_type() == "HardSwish");
  CHECK(b.graph().node(1).input(0) == x);
  CHECK(b.graph().node(1).output(0) == y);
}

TEST_CASE("HardSwish look-alikes are left alone", "[import][fusion][hardswish]") {
  SECTION("ONNX's default HardSigmoid (alpha 0.2)") {
    FusionProtoBuilder b;
    auto x = b.Op("Relu", "/x", {"input"});
    auto h = b.Op("HardSigmoid", "/HardSigmoid", {x});
    b.Output(b.Op("Mul", "/Mul", {x, h}));
    CHECK(Fuse(b, "hard_swish") == 0);
  }
  SECTION("MobileNetV3's squeeze-and-excitation gate") {
    FusionProtoBuilder b;
    auto x = b.Op("Relu", "/x", {"input"});
    auto& h = b.Node("HardSigmoid", "/se/HardSigmoid", {b.Op("Relu", "/se/fc2", {x})});
    AddFloat(h, "alpha", 1.0f / 6.0f);
    b.Output(b.Op("Mul", "/se/Mul", {h.output(0), x}));
    CHECK(Fuse(b, "hard_swish") == 0);
  }
  CheckLeftAloneWhenEscaping(
      "hard_swish",
      [](FusionProtoBuilder& b, const std::string& x) { return TorchHardSwish(b, "/a", x); },
      {{"the gate is a graph output", "/a/HardSigmoid_out", Escape::kGraphOutput}});
}

// ---------------------------------------------------------------- Dropout(p=0)

// nn.Dropout as torch 1.13 exports it in training mode at opset 13: Dropout(x, ratio, True) with
// both outputs, the mask unread.
onnx::NodeProto& TorchDropout(FusionProtoBuilder& b, const std::string& s, const std::string& x,
                              float ratio) {
  auto r = b.Scalar(s + "/Constant", ratio);
  auto& train = b.Node("Constant", s + "/Constant_1", {});
  auto* a = train.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  a->mutable_t()->add_int32_data(1);
  return b.Node("Dropout", s + "/Dropout", {x, r, train.output(0)}, /*outputs=*/2);
}

TEST_CASE("Dropout with ratio 0 becomes Identity", "[import][fusion][dropout]") {
  FusionProtoBuilder b;
  auto x = b.Op("Relu", "/x", {"input"});
  auto& d = TorchDropout(b, "/drop", x, 0.0f);
  const std::string y = d.output(0);
  b.Output(b.Op("Relu", "/post", {y}));
  REQUIRE(Fuse(b, "zero_dropout") == 1);
  // Relu, Identity, Relu: the two Constant nodes went with the Dropout.
  REQUIRE(b.graph().node_size() == 3);
  CHECK(b.graph().node(1).op_type() == "Identity");
  CHECK(b.graph().node(1).input_size() == 1);
  CHECK(b.graph().node(1).input(0) == x);
  CHECK(b.graph().node(1).output(0) == y);

  SECTION("the opset-10 form: ratio as an attribute") {
    FusionProtoBuilder o(10);
    auto xo = o.Op("Relu", "/x", {"input"});
    auto& n = o.Node("Dropout", "/drop/Dropout", {xo});
    AddFloat(n, "ratio", 0.0f);
    o.Output(n.output(0));
    CHECK(Fuse(o, "zero_dropout") == 1);
  }
}

TEST_CASE("Dropout look-alikes are left alone", "[import][fusion][dropout]") {
  SECTION("ratio 0.1") {
    FusionProtoBuilder b;
    b.Output(TorchDropout(b, "/drop", b.Op("Relu", "/x", {"input"}), 0.1f).output(0));
    CHECK(Fuse(b, "zero_dropout") == 0);
  }
  SECTION("no ratio: ONNX's default 0.5") {
    FusionProtoBuilder b;
    b.Output(b.Op("Dropout", "/drop/Dropout", {b.Op("Relu", "/x", {"input"})}));
    CHECK(Fuse(b, "zero_dropout") == 0);
  }
  SECTION("a ratio fed at run time") {
    FusionProtoBuilder b;
    b.Output(b.Op("Dropout", "/drop/Dropout", {b.Op("Relu", "/x", {"input"}), "p"}));
    CHECK(Fuse(b, "zero_dropout") == 0);
  }
  for (const bool read : {true, false}) {
    DYNAMIC_SECTION((read ? "the mask is read" : "the mask is a graph output")) {
      FusionProtoBuilder b;
      auto& d = TorchDropout(b, "/drop", b.Op("Relu", "/x", {"input"}), 0.0f);
      const std::string y = d.output(0);
      const std::string mask = d.output(1);
      b.Output(y);
      b.Output(read ? b.Op("Cast", "/mask/Cast", {mask}) : mask);
      CHECK(Fuse(b, "zero_dropout") == 0);
    }
  }
}

}  // namespace
}  // namespace memplan::testing
