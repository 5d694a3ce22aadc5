// The normalisation entries of the import-fusion table on hand-built protos: layer_norm (torch
// 1.13's export of nn.LayerNorm below opset 17) and rms_norm (LLaMA's and Gemma's RMSNorm written
// out), and the look-alikes each must leave alone.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "graph/fusion/fusion_table.h"
#include "tests/graph/fusion/fusion_proto_builder.h"

namespace memplan::testing {
namespace {

struct LayerNormShape {
  std::vector<int64_t> axes = {-1};
  float exponent = 2.0f;
  float eps = 1e-5f;
  std::vector<int64_t> gamma_dims = {8};
  bool bias = true;
  bool axes_as_input = false;  // opset 18
};

// nn.LayerNorm(8) as torch 1.13 exports it at opset 13 (symbolic_opset9.layer_norm):
//   ReduceMean(x), Sub(x, .), Pow(., 2), ReduceMean, Add(., eps), Sqrt, Div(d, .), Mul(., weight),
//   Add(., bias)
std::string TorchLayerNorm(FusionProtoBuilder& b, const std::string& s, const std::string& x,
                           const LayerNormShape& c = {}) {
  auto reduce = [&](const std::string& name, const std::string& in) -> std::string {
    if (c.axes_as_input) return b.Op("ReduceMean", name, {in, b.Int64s(name + "/axes", c.axes)});
    auto& n = b.Node("ReduceMean", name, {in});
    AddInts(n, "axes", c.axes);
    return n.output(0);
  };
  auto mean = reduce(s + "/ReduceMean", x);
  auto d = b.Op("Sub", s + "/Sub", {x, mean});
  auto sq = b.Op("Pow", s + "/Pow", {d, b.Scalar(s + "/Constant", c.exponent)});
  auto var = reduce(s + "/ReduceMean_1", sq);
  auto ve = b.Op("Add", s + "/Add", {var, b.Scalar(s + "/Constant_1", c.eps)});
  auto root = b.Op("Sqrt", s + "/Sqrt", {ve});
  auto n = b.Op("Div", s + "/Div", {d, root});
  auto scaled = b.Op("Mul", s + "/Mul", {n, b.Weight(s + ".weight", c.gamma_dims)});
  if (!c.bias) return scaled;
  return b.Op("Add", s + "/Add_1", {scaled, b.Weight(s + ".bias", c.gamma_dims)});
}

TEST_CASE("nn.LayerNorm exported below opset 17 becomes LayerNormalization",
          "[import][fusion][layernorm]") {
  FusionProtoBuilder b;
  auto x = b.Op("Relu", "/pre", {"input"});
  auto y = TorchLayerNorm(b, "/ln_1", x);
  b.Output(b.Op("Relu", "/post", {y}));
  // Relu, LayerNormalization, Relu; the Constant nodes are gone, the weights stay.
  const auto& ln =
      FuseBetweenRelus(b, "layer_norm", "LayerNormalization", "/ln_1/LayerNormalization");
  REQUIRE(ln.input_size() == 3);
  CHECK(ln.input(0) == x);
  CHECK(ln.input(1) == "/ln_1.weight");
  CHECK(ln.input(2) == "/ln_1.bias");
  CHECK(ln.output(0) == y);
  CHECK(IntAttribute(ln, "axis") == -1);
  CHECK(FloatAttribute(ln, "epsilon") == 1e-5f);
  CHECK(b.graph().initializer_size() == 2);
}

TEST_CASE("LayerNorm variants: two axes, no bias, Mul(d, d), opset-18 axes input",
          "[import][fusion][layernorm]") {
  SECTION("normalized over the last two axes, eps 1e-6") {
    FusionProtoBuilder b;
    LayerNormShape c;
    c.axes = {-2, -1};
    c.gamma_dims = {4, 8};
    c.eps = 1e-6f;
    b.Output(TorchLayerNorm(b, "/ln", b.Op("Relu", "/pre", {"input"}), c));
    REQUIRE(Fuse(b, "layer_norm") == 1);
    const auto& ln = OnlyNode(b.graph(), "LayerNormalization");
    CHECK(IntAttribute(ln, "axis") == -2);
    CHECK(FloatAttribute(ln, "epsilon") == 1e-6f);
  }
  SECTION("LayerNorm(bias=False): the Mul is the last node") {
    FusionProtoBuilder b;
    LayerNormShape c;
    c.bias = false;
    auto y = TorchLayerNorm(b, "/ln", b.Op("Relu", "/pre", {"input"}), c);
    b.Output(b.Op("Add", "/residual", {y, "input"}));
    REQUIRE(Fuse(b, "layer_norm") == 1);
    const auto& ln = OnlyNode(b.graph(), "LayerNormalization");
    CHECK(ln.input_size() == 2);
    CHECK(ln.output(0) == y);
    CHECK(CountOps(b.graph(), "Add") == 1);  // the residual add is not a bias
  }
  SECTION("opset 18: axes as a constant input") {
    FusionProtoBuilder b(18);
    LayerNormShape c;
    c.axes_as_input = true;
    b.Output(TorchLayerNorm(b, "/ln", b.Op("Relu", "/pre", {"input"}), c));
    REQUIRE(Fuse(b, "layer_norm") == 1);
    // The axes initializers only the ReduceMeans read are gone; weight and bias stay.
    CHECK(b.graph().initializer_size() == 2);
  }
}

TEST_CASE("LayerNorm look-alikes are left alone", "[import][fusion][layernorm]") {
  auto unfused = [](LayerNormShape c) {
    FusionProtoBuilder b;
    b.Output(TorchLayerNorm(b, "/ln", b.Op("Relu", "/pre", {"input"}), c));
    return Fuse(b, "layer_norm") == 0 && CountOps(b.graph(), "Sqrt") == 1;
  };
  LayerNormShape c;
  c.exponent = 3.0f;
  CHECK(unfused(c));  // not a variance
  c = {};
  c.axes = {1};
  CHECK(unfused(c));  // a positive (channel) axis: not provably trailing
  c = {};
  c.axes = {-3, -1};
  CHECK(unfused(c));  // not contiguous
  c = {};
  c.gamma_dims = {4, 8};
  CHECK(unfused(c));  // the weight varies along an axis that is not normalised

  CheckLeftAloneWhenEscaping(
      "layer_norm",
      [](FusionProtoBuilder& b, const std::string& x) { return TorchLayerNorm(b, "/ln", x); },
      {{"the centred input is read elsewhere", "/ln/Sub_out", Escape::kReadElsewhere},
       {"the normalised tensor is a graph output", "/ln/Div_out", Escape::kGraphOutput}});
  SECTION("the scale is an activation, not a weight") {
    FusionProtoBuilder b;
    auto x = b.Op("Relu", "/pre", {"input"});
    auto& mean = b.Node("ReduceMean", "/ln/ReduceMean", {x});
    AddInts(mean, "axes", {-1});
    auto d = b.Op("Sub", "/ln/Sub", {x, mean.output(0)});
    auto& var = b.Node("ReduceMean", "/ln/ReduceMean_1", {b.Op("Mul", "/ln/Sq", {d, d})});
    AddInts(var, "axes", {-1});
    auto root = b.Op("Sqrt", "/ln/Sqrt",
                     {b.Op("Add", "/ln/Add", {var.output(0), b.Scalar("/ln/eps", 1e-5f)})});
    b.Output(b.Op("Mul", "/ln/Mul", {b.Op("Div", "/ln/Div", {d, root}), x}));
    CHECK(Fuse(b, "layer_norm") == 0);
  }
}

// LLaMA's RMSNorm, x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight, as torch 1.13
// exports it at opset 13: Pow(x, 2), ReduceMean, Add(eps), Sqrt, Div(1, .), Mul(x, .), Mul(w, .).
// Its normalisation, x * (one / sqrt(mean(x^2) + eps)): the part HF's RMSNorm writes alike.
std::string RmsNormalized(FusionProtoBuilder& b, const std::string& s, const std::string& x,
                          float one = 1.0f) {
  auto sq = b.Op("Pow", s + "/Pow", {x, b.Scalar(s + "/Constant", 2.0f)});
  auto& mean = b.Node("ReduceMean", s + "/ReduceMean", {sq});
  AddInts(mean, "axes", {-1});
  AddInt(mean, "keepdims", 1);
  auto ve = b.Op("Add", s + "/Add", {mean.output(0), b.Scalar(s + "/Constant_1", 1e-6f)});
  auto root = b.Op("Sqrt", s + "/Sqrt", {ve});
  auto r = b.Op("Div", s + "/Div", {b.Scalar(s + "/Constant_2", one), root});
  return b.Op("Mul", s + "/Mul", {x, r});
}

std::string TorchRmsNorm(FusionProtoBuilder& b, const std::string& s, const std::string& x,
                         float one = 1.0f, std::vector<int64_t> w_dims = {8}) {
  const std::string n = RmsNormalized(b, s, x, one);
  return b.Op("Mul", s + "/Mul_1", {b.Weight(s + ".weight", w_dims), n});
}

TEST_CASE("RMSNorm written out becomes RMSNormalization under the formula set",
          "[import][fusion][rmsnorm]") {
  FusionProtoBuilder b;
  auto x = b.Op("Relu", "/pre", {"input"});
  auto y = TorchRmsNorm(b, "/norm", x);
  b.Output(y);
  // A formula: the default set leaves it as written (eager autograd runs it op by op), but for
  // its torch.rsqrt, which eager runs as one op (graph/fusion/rsqrt.cc).
  onnx::ModelProto as_eager = b.model();
  CHECK(FuseImportPatterns(as_eager).by_entry == std::map<std::string, int>{{"rsqrt", 1}});
  REQUIRE(FuseImportPatterns(b.model(), FusionSet::kAll).by_entry.at("rms_norm") == 1);
  REQUIRE(b.graph().node_size() == 2);
  const auto& rms = b.graph().node(1);
  CHECK(rms.op_type() == "RMSNormalization");
  CHECK(rms.input(0) == x);
  CHECK(rms.input(1) == "/norm.weight");
  CHECK(rms.output(0) == y);
  CHECK(IntAttribute(rms, "axis") == -1);
  CHECK(FloatAttribute(rms, "epsilon") == 1e-6f);

  SECTION("Mul(x, x), Reciprocal and Div(x, root) forms") {
    for (int form = 0; form < 2; ++form) {
      FusionProtoBuilder c;
      auto xc = c.Op("Relu", "/pre", {"input"});
      auto sq = c.Op("Mul", "/n/Sq", {xc, xc});
      auto& mean = c.Node("ReduceMean", "/n/ReduceMean", {sq});
      AddInts(mean, "axes", {-1});
      auto root = c.Op("Sqrt", "/n/Sqrt",
                       {c.Op("Add", "/n/Add", {mean.output(0), c.Scalar("/n/e", 1e-5f)})});
      std::string n = form == 0 ? c.Op("Mul", "/n/Mul", {c.Op("Reciprocal", "/n/Rec", {root}), xc})
                                : c.Op("Div", "/n/Div", {xc, root});
      c.Output(c.Op("Mul", "/n/Mul_1", {n, c.Weight("w", {8})}));
      INFO("form " << form);
      CHECK(Fuse(c, "rms_norm") == 1);
      CHECK(c.graph().node_size() == 2);
    }
  }
}

// Hugging Face's LlamaRMSNorm as torch.onnx writes it (read back from a LlamaForCausalLM export,
// torch 2.15, opset 17): x = Cast(h, to=float) read by Pow and Mul, and Cast(to=float) again
// between the normalisation and the weight (hidden_states.to(input_dtype)).
std::string HfLlamaRmsNorm(FusionProtoBuilder& b, const std::string& s, const std::string& h,
                           bool cast_back = true) {
  auto& up = b.Node("Cast", s + "/Cast", {h});
  AddInt(up, "to", onnx::TensorProto::FLOAT);
  std::string n = RmsNormalized(b, s, up.output(0));
  if (cast_back) {
    auto& back = b.Node("Cast", s + "/Cast_1", {n});
    AddInt(back, "to", onnx::TensorProto::FLOAT);
    n = back.output(0);
  }
  return b.Op("Mul", s + "/Mul_1", {b.Weight(s + ".weight", {8}), n});
}

TEST_CASE("HF's RMSNorm with its two casts becomes one RMSNormalization of the input",
          "[import][fusion][rmsnorm]") {
  FusionProtoBuilder b;
  auto h = b.Op("Relu", "/pre", {"input"});
  auto y = HfLlamaRmsNorm(b, "/norm", h);
  b.Output(y);
  REQUIRE(FuseImportPatterns(b.model(), FusionSet::kAll).by_entry.at("rms_norm") == 1);
  REQUIRE(b.graph().node_size() == 2);  // Relu, RMSNormalization: both casts went with it
  const auto& rms = b.graph().node(1);
  CHECK(rms.op_type() == "RMSNormalization");
  CHECK(rms.input(0) == h);
  CHECK(rms.output(0) == y);

  SECTION("the upcast without the cast back stays, read by the fused node") {
    FusionProtoBuilder c;
    auto hc = c.Op("Relu", "/pre", {"input"});
    c.Output(HfLlamaRmsNorm(c, "/norm", hc, /*cast_back=*/false));
    REQUIRE(Fuse(c, "rms_norm") == 1);
    REQUIRE(c.graph().node_size() == 3);
    CHECK(c.graph().node(1).op_type() == "Cast");
    CHECK(c.graph().node(2).input(0) == c.graph().node(1).output(0));
  }
  SECTION("an upcast the residual reads too stays; the same-dtype cast back joins") {
    FusionProtoBuilder c;
    auto hc = c.Op("Relu", "/pre", {"input"});
    auto yc = HfLlamaRmsNorm(c, "/norm", hc);
    c.Output(c.Op("Add", "/residual", {"/norm/Cast_out", yc}));
    REQUIRE(Fuse(c, "rms_norm") == 1);
    REQUIRE(c.graph().node_size() == 4);  // Relu, Cast, RMSNormalization, Add
    CHECK(c.graph().node(1).op_type() == "Cast");
    CHECK(c.graph().node(2).op_type() == "RMSNormalization");
    CHECK(c.graph().node(2).input(0) == "/norm/Cast_out");
    CHECK(c.graph().node(2).output(0) == yc);
  }
}

// Hugging Face's GemmaRMSNorm as torch.onnx writes it (read back from a GemmaForCausalLM export,
// torch 2.15, opset 17, fp32): x = Cast(h, to=float) read by Pow, Mul and the residual Add, the
// normalisation, then Mul(., Add(Cast(w, to=float), 1)): output * (1.0 + self.weight.float()).
// type_as(x) to the same dtype writes no node.
std::string HfGemmaRmsNorm(FusionProtoBuilder& b, const std::string& s, const std::string& h,
                           std::vector<int64_t> w_dims = {8}) {
  auto& up = b.Node("Cast", s + "/Cast", {h});
  AddInt(up, "to", onnx::TensorProto::FLOAT);
  const std::string n = RmsNormalized(b, s, up.output(0));
  auto& w = b.Node("Cast", s + "/Cast_1", {b.Weight(s + ".weight", w_dims)});
  AddInt(w, "to", onnx::TensorProto::FLOAT);
  auto one_plus_w = b.Op("Add", s + "/Add_1", {w.output(0), b.Scalar(s + "/Constant_3", 1.0f)});
  return b.Op("Mul", s + "/Mul_1", {n, one_plus_w});
}

TEST_CASE("Gemma's RMSNorm, scaled by 1 + w, becomes RMSNormalization reading 1 + w",
          "[import][fusion][rmsnorm]") {
  FusionProtoBuilder b;
  auto h = b.Op("Relu", "/pre", {"input"});
  auto y = HfGemmaRmsNorm(b, "/norm", h);
  b.Output(b.Op("Add", "/residual", {"/norm/Cast_out", y}));
  REQUIRE(FuseImportPatterns(b.model(), FusionSet::kAll).by_entry ==
          std::map<std::string, int>{{"rms_norm", 1}});
  // Relu, the upcast (the residual reads it), Cast(w), the constant 1 and Add(., 1) (read by the
  // fused node), RMSNormalization, the residual: Pow, ReduceMean, Add(eps), Sqrt, Div(1, .),
  // Mul(x, .), the scale Mul and their three constants went.
  REQUIRE(b.graph().node_size() == 7);
  const auto& rms = b.graph().node(5);
  CHECK(rms.op_type() == "RMSNormalization");
  CHECK(rms.input(0) == "/norm/Cast_out");
  CHECK(rms.input(1) == "/norm/Add_1_out");
  CHECK(rms.output(0) == y);
  CHECK(IntAttribute(rms, "axis") == -1);
  CHECK(FloatAttribute(rms, "epsilon") == 1e-6f);
  CHECK(b.graph().node(2).op_type() == "Cast");
  CHECK(b.graph().node(4).op_type() == "Add");
  CHECK(b.graph().node(4).output(0) == rms.input(1));

  SECTION("1 + w with w uncast, the one first") {
    FusionProtoBuilder c;
    auto hc = c.Op("Relu", "/pre", {"input"});
    auto one_plus_w =
        c.Op("Add", "/n/Add_1", {c.Scalar("/n/Constant_3", 1.0f), c.Weight("/n.weight", {8})});
    c.Output(c.Op("Mul", "/n/Mul_1", {RmsNormalized(c, "/n", hc), one_plus_w}));
    REQUIRE(Fuse(c, "rms_norm") == 1);
    REQUIRE(c.graph().node_size() == 4);  // Relu, the constant one, Add, RMSNormalization
    CHECK(c.graph().node(3).input(1) == one_plus_w);
  }
}

TEST_CASE("RMSNorm look-alikes are left alone", "[import][fusion][rmsnorm]") {
  SECTION("a scale of 2 + w, or of 1 + an activation, is not Gemma's 1 + w") {
    for (const bool activation : {false, true}) {
      FusionProtoBuilder b;
      auto x = b.Op("Relu", "/pre", {"input"});
      const std::string w = activation ? b.Op("Relu", "/pre_1", {"other"}) : b.Weight("w", {8});
      auto scale =
          b.Op("Add", "/n/Add_1", {w, b.Scalar("/n/Constant_3", activation ? 1.0f : 2.0f)});
      b.Output(b.Op("Mul", "/n/Mul_1", {RmsNormalized(b, "/n", x), scale}));
      INFO("activation " << activation);
      CHECK(Fuse(b, "rms_norm") == 0);
    }
  }
  SECTION("Gemma's 1 + w with a weight of a higher rank than the normalised axes") {
    FusionProtoBuilder b;
    b.Output(HfGemmaRmsNorm(b, "/n", b.Op("Relu", "/pre", {"input"}), {4, 8}));
    CHECK(Fuse(b, "rms_norm") == 0);
  }
  SECTION("2 / sqrt(.) is not a reciprocal") {
    FusionProtoBuilder b;
    b.Output(TorchRmsNorm(b, "/n", b.Op("Relu", "/pre", {"input"}), 2.0f));
    CHECK(Fuse(b, "rms_norm") == 0);
  }
  SECTION("a weight of a higher rank than the normalised axes") {
    FusionProtoBuilder b;
    b.Output(TorchRmsNorm(b, "/n", b.Op("Relu", "/pre", {"input"}), 1.0f, {4, 8}));
    CHECK(Fuse(b, "rms_norm") == 0);
  }
  CheckLeftAloneWhenEscaping(
      "rms_norm",
      [](FusionProtoBuilder& b, const std::string& x) { return TorchRmsNorm(b, "/n", x); },
      {{"the statistic is also returned", "/n/Sqrt_out", Escape::kGraphOutput}});
  SECTION("a LayerNorm is not an RMSNorm of x - mean: the table fuses it as a LayerNorm first") {
    FusionProtoBuilder b;
    b.Output(TorchLayerNorm(b, "/ln", b.Op("Relu", "/pre", {"input"})));
    auto counts = FuseImportPatterns(b.model(), FusionSet::kAll);
    CHECK(counts.by_entry == std::map<std::string, int>{{"layer_norm", 1}});
  }
}

}  // namespace
}  // namespace memplan::testing
