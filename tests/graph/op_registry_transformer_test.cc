// Transformer ops of ai.onnx opset 23 and ONNX Runtime's com.microsoft domain, and the GELU forms:
// shapes, FLOPs, saved-for-backward and its bytes, with every number derived in a comment.

#include <catch2/catch.hpp>

#include "graph/ops/common_rules.h"
#include "tests/graph/op_registry_test_helpers.h"

namespace memplan {
namespace {

using testing::Absent;
using testing::Describe;
using testing::Dims;
using testing::Eval;
using testing::F32;
using testing::OpCase;
using testing::Param;
using testing::Tensor;

using Names = std::vector<std::string>;

// Bytes of every saved tensor (inputs/outputs resolved against the case's context).
int64_t SavedBytes(OpCase& c) {
  OpContext ctx = c.Context();
  int64_t total = 0;
  for (const SavedTensor& s : c.Saved()) {
    switch (s.source) {
      case SavedTensor::Source::kInput:
        total += Eval(ctx.inputs.at(static_cast<size_t>(s.index)).Bytes());
        break;
      case SavedTensor::Source::kOutput:
        total += Eval(ctx.outputs.at(static_cast<size_t>(s.index)).Bytes());
        break;
      case SavedTensor::Source::kExtra:
        total += Eval(TensorBytes(s.shape.NumElements(), s.dtype));
        break;
    }
  }
  return total;
}

TEST_CASE("Attention 4D: shape, FLOPs and eager saved tensors", "[registry][attention]") {
  // B=2, heads=8, seq=128, head=64, float32.
  OpCase c("Attention", {F32({2, 8, 128, 64}), F32({2, 8, 128, 64}), F32({2, 8, 128, 64})});
  CHECK(c.OutputShape() == Dims({2, 8, 128, 64}));
  // scores = 2*8*128*128 = 262144; QK^T and PV 2*scores*64 each = 33554432 * 2 = 67108864;
  // softmax 5 per score = 1310720. Total 68419584.
  CHECK(Eval(c.Cost().flops) == 68419584);
  CHECK(Describe(c.Saved()) == Names{"in0", "in1", "in2", "extra:attention_probs"});
  // Q, K, V: 2*8*128*64*4 = 524288 bytes each; P: 262144 * 4 = 1048576. 3*524288 + 1048576.
  CHECK(SavedBytes(c) == 2621440);
  CHECK(c.schema().amp == AmpCategory::kFp16Safe);
}

TEST_CASE("Attention 3D with grouped-query heads saves repeated K and V", "[registry][attention]") {
  // Q [2, 16, 64] with 4 heads (head 16); K, V [2, 16, 32] with 2 kv heads (head 16).
  OpCase c("Attention", {F32({2, 16, 64}), F32({2, 16, 32}), F32({2, 16, 32})});
  c.Attr("q_num_heads", int64_t{4}).Attr("kv_num_heads", int64_t{2});
  // Y: [B, q_seq, q_heads * v_head] = [2, 16, 4 * 16].
  CHECK(c.OutputShape() == Dims({2, 16, 64}));
  CHECK(Describe(c.Saved()) ==
        Names{"in0", "extra:repeated_key", "extra:repeated_value", "extra:attention_probs"});
  // Q 2*16*64*4 = 8192; repeated K and V [2, 4, 16, 16] = 2048 elements = 8192 bytes each;
  // P [2, 4, 16, 16] = 8192 bytes. 4 * 8192 = 32768.
  CHECK(SavedBytes(c) == 32768);
}

TEST_CASE("Attention with a past appends to it and saves the present K and V",
          "[registry][attention]") {
  OpCase c("Attention",
           {F32({1, 2, 3, 4}), F32({1, 2, 3, 4}), F32({1, 2, 3, 4}), Absent(), F32({1, 2, 5, 4}),
            F32({1, 2, 5, 4})},
           /*num_outputs=*/4);
  auto outs = c.Outputs();
  // total_seq = past 5 + new 3 = 8.
  CHECK(outs[0].shape == Dims({1, 2, 3, 4}));
  CHECK(outs[1].shape == Dims({1, 2, 8, 4}));
  CHECK(outs[2].shape == Dims({1, 2, 8, 4}));
  CHECK(outs[3].shape == Dims({1, 2, 3, 8}));
  CHECK(Describe(c.Saved()) == Names{"in0", "out1", "out2", "extra:attention_probs"});
  // The mask slot (3) gets no gradient; the past does.
  CHECK(c.Gradients() == std::vector<bool>{true, true, true, false, true, true});
}

TEST_CASE("Attention rejects mixed ranks and missing head counts", "[registry][attention]") {
  OpCase mixed("Attention", {F32({2, 16, 64}), F32({2, 2, 16, 32}), F32({2, 2, 16, 32})});
  CHECK_FALSE(mixed.Infer().ok());
  OpCase no_heads("Attention", {F32({2, 16, 64}), F32({2, 16, 64}), F32({2, 16, 64})});
  CHECK_FALSE(no_heads.Infer().ok());
}

TEST_CASE("RMSNormalization saves input, weight and a float32 rstd", "[registry][norm]") {
  // X [4, 10, 32] float16, scale [32].
  OpCase c("RMSNormalization", {Tensor(DType::kFloat16, {4, 10, 32}), Param({32})});
  CHECK(c.OutputShape() == Dims({4, 10, 32}));
  CHECK(c.Outputs()[0].dtype == DType::kFloat16);
  // 4 flops per element: 4 * 1280 = 5120.
  CHECK(Eval(c.Cost().flops) == 5120);
  CHECK(Describe(c.Saved()) == Names{"in0", "in1", "extra:rstd"});
  // X 1280 * 2 = 2560; scale 32 * 4 = 128; rstd [4, 10, 1] float32 = 160. Total 2848.
  CHECK(SavedBytes(c) == 2848);
}

TEST_CASE("SimplifiedLayerNormalization exposes rstd as its second output", "[registry][norm]") {
  for (const char* domain : {"", "com.microsoft"}) {
    INFO(domain);
    OpCase c("SimplifiedLayerNormalization", {F32({3, 4}), Param({4})}, /*num_outputs=*/2, domain);
    auto outs = c.Outputs();
    CHECK(outs[1].shape == Dims({3, 1}));
    CHECK(outs[1].dtype == DType::kFloat32);
    CHECK(Describe(c.Saved()) == Names{"in0", "in1", "out1"});
  }
}

TEST_CASE("SkipLayerNormalization saves the residual sum and LayerNorm's statistics",
          "[registry][norm]") {
  // input, skip [2, 5, 8]; gamma, beta [8].
  OpCase c("SkipLayerNormalization", {F32({2, 5, 8}), F32({2, 5, 8}), Param({8}), Param({8})},
           /*num_outputs=*/1, "com.microsoft");
  CHECK(c.OutputShape() == Dims({2, 5, 8}));
  CHECK(Describe(c.Saved()) ==
        Names{"extra:input_skip_bias_sum", "in2", "in3", "extra:mean", "extra:rstd"});
  // sum 80 * 4 = 320; gamma, beta 32 each; mean, rstd [2, 5, 1] float32 = 40 each. 464.
  CHECK(SavedBytes(c) == 464);
  // (8 + 2) flops per input element: 80 * 10 = 800.
  CHECK(Eval(c.Cost().flops) == 800);

  OpCase all("SkipLayerNormalization", {F32({2, 5, 8}), F32({2, 5, 8}), Param({8}), Param({8})},
             /*num_outputs=*/4, "com.microsoft");
  CHECK(Describe(all.Saved()) == Names{"out3", "in2", "in3", "out1", "out2"});
}

TEST_CASE("RotaryEmbedding saves the gathered cos and sin, not X", "[registry][rotary]") {
  const TensorInfo positions = Tensor(DType::kInt64, {2, 10});
  // ai.onnx: X [2, 4, 10, 16], caches [64, 8], position_ids [2, 10].
  OpCase standard("RotaryEmbedding", {F32({2, 4, 10, 16}), F32({64, 8}, ValueKind::kConstant),
                                      F32({64, 8}, ValueKind::kConstant), positions});
  CHECK(standard.OutputShape() == Dims({2, 4, 10, 16}));
  CHECK(Describe(standard.Saved()) == Names{"extra:gathered_cos", "extra:gathered_sin"});
  // [2, 10, 8] float32 = 640 bytes each.
  CHECK(SavedBytes(standard) == 1280);
  // 3 flops per output element: 1280 * 3 = 3840.
  CHECK(Eval(standard.Cost().flops) == 3840);

  // com.microsoft: (input, position_ids, cos_cache, sin_cache).
  OpCase ms("RotaryEmbedding",
            {F32({2, 10, 64}), positions, F32({64, 8}, ValueKind::kConstant),
             F32({64, 8}, ValueKind::kConstant)},
            1, "com.microsoft");
  CHECK(ms.OutputShape() == Dims({2, 10, 64}));
  CHECK(SavedBytes(ms) == 1280);
  CHECK(ms.Gradients() == std::vector<bool>{true, false, false, false});
  // One offset (token s at offset + s) gathers one row per token of X's sequence, shared by the
  // batch: [1, 10, 8] float32 = 320 bytes each.
  OpCase offset("RotaryEmbedding",
                {F32({2, 10, 64}), Tensor(DType::kInt64, {1}), F32({64, 8}, ValueKind::kConstant),
                 F32({64, 8}, ValueKind::kConstant)},
                1, "com.microsoft");
  CHECK(SavedBytes(offset) == 640);

  // Without position ids the caches are already per token: they are saved as they are.
  OpCase direct("RotaryEmbedding", {F32({2, 4, 10, 16}), F32({2, 10, 8}), F32({2, 10, 8})});
  CHECK(Describe(direct.Saved()) == Names{"in1", "in2"});
}

TEST_CASE("FastGelu and BiasGelu save gelu's input, the biased sum when fused",
          "[registry][gelu]") {
  // X [2, 3, 8] float16, bias [8]: 48 elements.
  OpCase fast("FastGelu", {Tensor(DType::kFloat16, {2, 3, 8}), Param({8})}, 1, "com.microsoft");
  CHECK(fast.OutputShape() == Dims({2, 3, 8}));
  CHECK(Describe(fast.Saved()) == Names{"extra:gelu_input"});
  CHECK(SavedBytes(fast) == 96);  // 48 * 2 bytes
  // tanh form 4 + 8 flops, + 1 for the bias: 48 * 13 = 624.
  CHECK(Eval(fast.Cost().flops) == 624);

  OpCase plain("FastGelu", {Tensor(DType::kFloat16, {2, 3, 8})}, 1, "com.microsoft");
  CHECK(Describe(plain.Saved()) == Names{"in0"});
  CHECK(Eval(plain.Cost().flops) == 48 * 12);

  OpCase bias("BiasGelu", {F32({2, 3, 8}), Param({8})}, 1, "com.microsoft");
  CHECK(Describe(bias.Saved()) == Names{"extra:gelu_input"});
  // erf form 4 + 4 flops, + 1 for the bias: 48 * 9 = 432.
  CHECK(Eval(bias.Cost().flops) == 432);
}

TEST_CASE("Gelu-20's tanh approximation costs more than the erf form, both save self",
          "[registry][gelu]") {
  OpCase erf("Gelu", {F32({10})});
  CHECK(Eval(erf.Cost().flops) == 80);  // 10 * (4 + 4)
  OpCase tanh("Gelu", {F32({10})});
  tanh.Attr("approximate", std::string("tanh"));
  CHECK(Eval(tanh.Cost().flops) == 120);  // 10 * (4 + 8)
  CHECK(Describe(tanh.Saved()) == Names{"in0"});
}

TEST_CASE("the new ops cite their sources", "[registry]") {
  const std::pair<const char*, const char*> ops[] = {
      {"Attention", ""},
      {"RMSNormalization", ""},
      {"RotaryEmbedding", ""},
      {"RotaryEmbedding", "com.microsoft"},
      {"Mod", ""},
      {"Trilu", ""},
      {"Bernoulli", ""},
      {"SimplifiedLayerNormalization", ""},
      {"FastGelu", "com.microsoft"},
      {"BiasGelu", "com.microsoft"},
      {"SkipLayerNormalization", "com.microsoft"},
      {"SkipSimplifiedLayerNormalization", "com.microsoft"},
  };
  for (const auto& [op, domain] : ops) {
    INFO(domain << ":" << op);
    const OpSchema& s = testing::Schema(op, domain);
    CHECK_FALSE(s.saved_source.empty());
    CHECK_FALSE(s.amp_source.empty());
  }
}

}  // namespace
}  // namespace memplan
