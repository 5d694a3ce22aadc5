// --attention: which exporter patterns are fused into memplan:ScaledDotProductAttention, and the
// bytes forward keeps for backward under eager and under sdpa, derived by hand per pattern.
//
// Every graph below is one attention block with batch B = 2 (bound), H = 2 heads, S = 16, D = 8,
// fp32. q, k and v are x + bias (Add saves nothing, derivatives.yaml add.Tensor), so the saved
// bytes are the attention's alone:
//   |q| = |k| = |v| = |out| = B*H*S*D = 2*2*16*8 = 512 elements = 2048 bytes
//   |P| (probabilities, S x S)   = B*H*S*S = 2*2*16*16 = 1024 elements = 4096 bytes
//   |lse| (fp32 [B, H, S])        = 2*2*16 = 64 elements = 256 bytes
// Eager (derivatives.yaml): MatMul(q, k^T) keeps q and k (k^T is a view of k); the scale (Div by
// a constant) keeps only the constant divisor (no activation); Add keeps nothing, Where its
// constant condition; Softmax keeps P; Dropout keeps its bool mask (|P| bytes); MatMul(P, v)
// keeps P (the same tensor as Softmax's) or the dropped P' (a new tensor), and v.
// SDPA (_scaled_dot_product_flash_attention / _efficient_attention): q, k, v, out, lse, and
// under dropout the philox seed and offset (2 int64 = 16 bytes); the mask when it is an input.

#include <catch2/catch.hpp>

#include <algorithm>

#include <cmath>
#include <limits>
#include <utility>

#include "analyzer/derivation/attention_plan.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "graph/ops/sdpa_op.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::DeriveVerified;
using testing::SumLossSgd;
using testing::TestGraph;

constexpr int64_t kHeads = 2, kSeq = 16, kHead = 8;

enum class Mask {
  kNone,
  kAddCausal,
  kWhereCausal,
  kPadding,
  kLearnedBias,
  kT5SelfBias,      // T5 self-attention: scores + position_bias (trained) + padding
  kT5CrossZeros,    // T5 cross-attention: scores + torch.zeros(...) + padding
  kTwoRuntimeTerms  // scores + an input + padding: two runtime terms, no trained one
};

// HF: context.transpose(1, 2).reshape(B, S, H*D); torch's nn.MultiheadAttention:
// context.permute(2, 0, 1, 3).contiguous().view(S*B, H*D).
enum class OutProjection { kNone, kHf, kMultiheadAttention };

struct AttentionOptions {
  Mask mask = Mask::kNone;
  bool dropout = false;
  bool identity_after_softmax = false;  // what the import fusions leave of a ratio-0 Dropout
  int same_dtype_casts = 0;   // HF's softmax(..., dtype=float32).to(query.dtype), exported in fp32
  int64_t kv_heads = kHeads;  // fewer: grouped-query attention through repeat_kv
  // How the context goes into the output projection (a MatMul with Wo [H*D, H*D]).
  OutProjection out_projection = OutProjection::kNone;
  // x is [S, B, H, D] and q, k, v are (x + b).permute(1, 2, 0, 3): [B, H, S, D] views laid out
  // sequence first, as nn.MultiheadAttention's packed projection gives them.
  bool sequence_first = false;
  // torch.onnx's scaled_dot_product_attention (symbolic_opset14): q and k^T each times
  // sqrt(scale), scale a scalar computed from k's shape, instead of one scale on the scores.
  bool split_scale = false;
  // torch.onnx's dynamo exporter (onnxscript torch_lib aten_scaled_dot_product_attention, after
  // its optimizer): q * c and k^T as Reshape(k, [B*H, S, D]), Transpose(0, 2, 1), Reshape
  // [B, H, D, S], times c; c = sqrt(1 / sqrt(D)) folded into one [1] initializer the graph
  // signature leaves untrained (timm's ViT, torch 2.15).
  bool torchlib_scale = false;
  // The dynamo exporter's guard of the probabilities: Where(IsNaN(P), 0, P) (onnxscript's
  // aten_scaled_dot_product_attention), what every converted Hugging Face attention holds.
  bool nan_guard = false;
};

// A constant holding one float, as torch.onnx writes scalars: a Constant node.
ValueId FloatScalar(TestGraph& t, const std::string& name, double value) {
  ValueId c = t.Op("Constant", name + "_node", {}, name, {});
  t.graph.mutable_value(c).kind = ValueKind::kConstant;
  t.graph.mutable_node(t.graph.value(c).producer).attributes.Set("value_float", value);
  return c;
}

ValueId IntConstant(TestGraph& t, const std::string& name, std::vector<int64_t> values) {
  ValueId c = t.Constant(name, {static_cast<int64_t>(values.size())});
  std::vector<Dim> contents;
  for (int64_t v : values) contents.push_back(Dim(v));
  t.graph.mutable_value(c).contents = contents;
  return c;
}

// Transpose(x, perm) named `name`, its output `out` of shape `dims`.
ValueId Permute(TestGraph& t, const std::string& name, ValueId x, std::vector<int64_t> perm,
                const std::string& out, std::vector<Dim> dims) {
  ValueId y = t.Op("Transpose", name, {x}, out, std::move(dims));
  t.graph.mutable_node(t.NodeNamed(name)).attributes.Set("perm", std::move(perm));
  return y;
}

// repeat_kv as HF writes it: [B, Hkv, S, D] -> Unsqueeze(2) -> Expand -> Reshape [B, H, S, D].
ValueId RepeatKv(TestGraph& t, const std::string& name, ValueId x, int64_t kv_heads) {
  const int64_t n = kHeads / kv_heads;
  ValueId u = t.Op("Unsqueeze", name + "_unsqueeze", {x, IntConstant(t, name + "_axes", {2})},
                   name + "_u", {t.B(), kv_heads, 1, kSeq, kHead});
  ValueId e = t.Op("Expand", name + "_expand",
                   {u, IntConstant(t, name + "_expand_shape", {2, kv_heads, n, kSeq, kHead})},
                   name + "_e", {t.B(), kv_heads, n, kSeq, kHead});
  return t.Op("Reshape", name + "_reshape",
              {e, IntConstant(t, name + "_shape", {2, kHeads, kSeq, kHead})}, name + "_r",
              {t.B(), kHeads, kSeq, kHead});
}

TestGraph AttentionBlock(const AttentionOptions& o) {
  TestGraph t;
  const Dim b = t.B();
  ValueId q, k, v;
  if (o.sequence_first) {
    ValueId x = t.Input("x", {kSeq, b, kHeads, kHead});
    auto head_view = [&](const std::string& name) {
      ValueId sum = t.Op("Add", name + "_proj", {x, t.Param("b" + name, {kHead})}, name + "_sum",
                         {kSeq, b, kHeads, kHead});
      return Permute(t, name + "_heads", sum, {1, 2, 0, 3}, name, {b, kHeads, kSeq, kHead});
    };
    q = head_view("q");
    k = head_view("k");
    v = head_view("v");
  } else {
    ValueId x = t.Input("x", {b, kHeads, kSeq, kHead});
    ValueId xkv = o.kv_heads == kHeads ? x : t.Input("x_kv", {b, o.kv_heads, kSeq, kHead});
    q = t.Op("Add", "q_proj", {x, t.Param("bq", {kHead})}, "q", {b, kHeads, kSeq, kHead});
    k = t.Op("Add", "k_proj", {xkv, t.Param("bk", {kHead})}, "k", {b, o.kv_heads, kSeq, kHead});
    v = t.Op("Add", "v_proj", {xkv, t.Param("bv", {kHead})}, "v", {b, o.kv_heads, kSeq, kHead});
  }
  if (o.kv_heads != kHeads) {
    k = RepeatKv(t, "k_repeat", k, o.kv_heads);
    v = RepeatKv(t, "v_repeat", v, o.kv_heads);
  }
  ValueId kt = Permute(t, "attn/key_t", k, {0, 1, 3, 2}, "kt", {b, kHeads, kHead, kSeq});
  if (o.split_scale) {
    const ValueId scale = t.Constant("scale", {}, DType::kFloat32);
    auto root = [&](const std::string& name) {
      const ValueId r = t.Op("Sqrt", "attn/" + name, {scale}, name, {});
      t.graph.mutable_value(r).kind = ValueKind::kConstant;
      return r;
    };
    q = t.Op("Mul", "attn/scale_q", {q, root("sqrt_q")}, "q_scaled", {b, kHeads, kSeq, kHead});
    kt = t.Op("Mul", "attn/scale_k", {kt, root("sqrt_k")}, "kt_scaled", {b, kHeads, kHead, kSeq});
  }
  if (o.torchlib_scale) {
    const ValueId c = t.Param("val_57", {1});
    t.graph.mutable_value(c).trainable = false;
    t.graph.mutable_value(c).float_values = std::vector<double>{std::sqrt(1.0 / std::sqrt(8.0))};
    const ValueId flat =
        t.Op("Reshape", "attn/key_flat", {k, IntConstant(t, "flat_shape", {-1, kSeq, kHead})},
             "k_flat", {b * kHeads, kSeq, kHead});
    const ValueId flat_t =
        Permute(t, "attn/key_flat_t", flat, {0, 2, 1}, "k_flat_t", {b * kHeads, kHead, kSeq});
    kt = t.Op("Reshape", "attn/key_t4",
              {flat_t, IntConstant(t, "t4_shape", {2, kHeads, kHead, kSeq})}, "k_t4",
              {b, kHeads, kHead, kSeq});
    q = t.Op("Mul", "attn/scale_q", {q, c}, "q_scaled", {b, kHeads, kSeq, kHead});
    kt = t.Op("Mul", "attn/scale_k", {kt, c}, "kt_scaled", {b, kHeads, kHead, kSeq});
  }
  ValueId s = t.Op("MatMul", "attn/qk", {q, kt}, "scores", {b, kHeads, kSeq, kSeq});
  if (!o.split_scale && !o.torchlib_scale)
    s = t.Op("Div", "attn/scale", {s, FloatScalar(t, "sqrt_d", 2.8284271247461903)}, "scaled",
             {b, kHeads, kSeq, kSeq});
  switch (o.mask) {
    case Mask::kNone:
      break;
    case Mask::kAddCausal:  // scores + triu(full(-inf), 1), a float [1, 1, S, S] constant
      s = t.Op("Add", "attn/mask", {s, t.Constant("causal", {1, 1, kSeq, kSeq}, DType::kFloat32)},
               "masked", {b, kHeads, kSeq, kSeq});
      break;
    case Mask::kWhereCausal:  // HF GPT-2: where(bias[:, :, :S, :S], scores, finfo.min)
      s = t.Op("Where", "attn/mask",
               {t.Constant("causal", {1, 1, kSeq, kSeq}, DType::kBool), s,
                FloatScalar(t, "lowest", std::numeric_limits<float>::lowest())},
               "masked", {b, kHeads, kSeq, kSeq});
      break;
    case Mask::kLearnedBias:  // Swin: scores + relative_position_bias (a trained table)
      s = t.Op("Add", "attn/mask", {s, t.Param("position_bias", {1, kHeads, kSeq, kSeq})}, "masked",
               {b, kHeads, kSeq, kSeq});
      break;
    case Mask::kT5SelfBias:
      s = t.Op("Add", "attn/bias", {s, t.Param("position_bias", {1, kHeads, kSeq, kSeq})}, "biased",
               {b, kHeads, kSeq, kSeq});
      s = t.Op("Add", "attn/mask", {s, t.Input("padding", {b, 1, 1, kSeq}, DType::kFloat32)},
               "masked", {b, kHeads, kSeq, kSeq});
      break;
    case Mask::kT5CrossZeros: {
      // ConstantOfShape with no value: ONNX's default, zeros (how torch.zeros exports).
      const ValueId shape = IntConstant(t, "bias_shape", {1, kHeads, kSeq, kSeq});
      const ValueId zeros =
          t.Op("ConstantOfShape", "attn/zeros", {shape}, "zeros", {1, kHeads, kSeq, kSeq});
      s = t.Op("Add", "attn/bias", {s, zeros}, "biased", {b, kHeads, kSeq, kSeq});
      s = t.Op("Add", "attn/mask", {s, t.Input("padding", {b, 1, 1, kSeq}, DType::kFloat32)},
               "masked", {b, kHeads, kSeq, kSeq});
      break;
    }
    case Mask::kTwoRuntimeTerms:
      s = t.Op("Add", "attn/bias", {s, t.Input("extra", {b, 1, 1, kSeq}, DType::kFloat32)},
               "biased", {b, kHeads, kSeq, kSeq});
      s = t.Op("Add", "attn/mask", {s, t.Input("padding", {b, 1, 1, kSeq}, DType::kFloat32)},
               "masked", {b, kHeads, kSeq, kSeq});
      break;
    case Mask::kPadding:  // BERT: scores + (1 - attention_mask)[:, None, None, :] * min
      s = t.Op("Add", "attn/mask", {s, t.Input("padding", {b, 1, 1, kSeq}, DType::kFloat32)},
               "masked", {b, kHeads, kSeq, kSeq});
      break;
  }
  ValueId p = t.Op("Softmax", "attn/softmax", {s}, "probs", {b, kHeads, kSeq, kSeq});
  t.graph.mutable_node(t.NodeNamed("attn/softmax")).attributes.Set("axis", int64_t{-1});
  for (int i = 0; i < o.same_dtype_casts; ++i) {
    const std::string name = "attn/cast" + std::to_string(i);
    p = t.Op("Cast", name, {p}, "cast" + std::to_string(i), {b, kHeads, kSeq, kSeq});
    t.graph.mutable_node(t.NodeNamed(name)).attributes.Set("to", int64_t{1});  // FLOAT
  }
  if (o.nan_guard) {
    const ValueId is_nan = t.Op("IsNaN", "attn/is_nan", {p}, "p_is_nan", {b, kHeads, kSeq, kSeq});
    t.graph.mutable_value(is_nan).dtype = DType::kBool;
    p = t.Op("Where", "attn/nan_guard", {is_nan, FloatScalar(t, "zero", 0.0), p}, "guarded",
             {b, kHeads, kSeq, kSeq});
  }
  if (o.dropout) {
    p = t.Op("Dropout", "attn/dropout", {p, FloatScalar(t, "ratio", 0.1)}, "dropped",
             {b, kHeads, kSeq, kSeq});
  }
  if (o.identity_after_softmax) {
    p = t.Op("Identity", "attn/dropout", {p}, "dropped", {b, kHeads, kSeq, kSeq});
  }
  ValueId context = t.Op("MatMul", "attn/pv", {p, v}, "context", {b, kHeads, kSeq, kHead});
  if (o.out_projection == OutProjection::kNone) {
    t.Output(context);
    return t;
  }
  const bool hf = o.out_projection == OutProjection::kHf;
  ValueId moved =
      hf ? Permute(t, "attn/out_t", context, {0, 2, 1, 3}, "context_t", {b, kSeq, kHeads, kHead})
         : Permute(t, "attn/out_t", context, {2, 0, 1, 3}, "context_t", {kSeq, b, kHeads, kHead});
  const int64_t width = kHeads * kHead;
  ValueId merged =
      hf ? t.Op("Reshape", "attn/merge", {moved, IntConstant(t, "merge_shape", {2, kSeq, width})},
                "merged", {b, kSeq, width})
         : t.Op("Reshape", "attn/merge", {moved, IntConstant(t, "merge_shape", {kSeq * 2, width})},
                "merged", {Dim(kSeq) * b, width});
  t.Output(t.Op("MatMul", "attn/out_proj", {merged, t.Param("Wo", {width, width})}, "out",
                hf ? std::vector<Dim>{b, Dim(kSeq), Dim(width)}
                   : std::vector<Dim>{Dim(kSeq) * b, Dim(width)}));
  return t;
}

// What one micro-batch of 2 keeps for backward, in bytes.
int64_t SavedBytes(const Graph& graph, const TestGraph& t) {
  TrainingProgram program = DeriveVerified(graph, SumLossSgd());
  ExactAllocator exact;
  auto r = Simulate(program, t.Bind(2), exact);
  REQUIRE(r.ok());
  return r->saved_activation_bytes;
}

struct Planned {
  AttentionPlan plan;
  int64_t saved_bytes = 0;
};

Planned PlanWith(AttentionMode mode, const AttentionOptions& o, bool fp32_only = false) {
  TestGraph t = AttentionBlock(o);
  auto plan = ApplyAttentionMode(t.graph, mode, "block.onnx", fp32_only);
  REQUIRE(plan.ok());
  return {std::move(plan).value(), SavedBytes(t.graph, t)};
}

const FusedAttention& OnlyFused(const AttentionPlan& plan) {
  REQUIRE(plan.fused.size() == 1);
  return plan.fused.front();
}

TEST_CASE("attention without a mask: eager keeps S x S, sdpa q, k, v, out and lse", "[attention]") {
  const Planned eager = PlanWith(AttentionMode::kEager, {});
  CHECK(eager.plan.fused.empty());
  CHECK(eager.plan.mode() == "eager");
  // q 2048 + k 2048 + P 4096 + v 2048.
  CHECK(eager.saved_bytes == 10240);

  const Planned sdpa = PlanWith(AttentionMode::kSdpa, {});
  CHECK(sdpa.plan.mode() == "sdpa");
  CHECK(OnlyFused(sdpa.plan).mask == sdpa::kMaskNone);
  CHECK_FALSE(OnlyFused(sdpa.plan).grouped_query);
  // q 2048 + k 2048 + v 2048 + out 2048 + lse 256.
  CHECK(sdpa.saved_bytes == 8448);

  // auto fuses what it recognises, like sdpa.
  CHECK(PlanWith(AttentionMode::kAuto, {}).saved_bytes == 8448);
}

// The output projection saves its input (for Wo's gradient), a [B, S, H*D] tensor of 2048 bytes.
// Eager attention's context is dense [B, H, S, D]: moving the heads next to the features makes
// a strided view, and the Reshape copies it (a new 2048 B). Flash and memory-efficient attention
// write their output as [B, S, H, D] and return it transposed (_efficient_attention_forward,
// then .transpose(1, 2)): HF's transpose(1, 2) makes it dense again and the reshape is a view
// of the saved output, so nothing new is kept. nn.MultiheadAttention's permute(2, 0, 1, 3) puts
// the sequence first, which no layout of the output makes dense: it copies in both modes.
// Measured on an H100 (docs/measurements.md): BERT-base fp32 under sdpa kept exactly one
// [B, S, 768] tensor per layer less than the eager count minus the S x S tensors.
TEST_CASE("the sdpa output is [B, S, H, D] in memory: HF's merge of the heads is a view",
          "[attention][views]") {
  AttentionOptions hf;
  hf.out_projection = OutProjection::kHf;
  CHECK(PlanWith(AttentionMode::kEager, hf).saved_bytes == 10240 + 2048);
  CHECK(PlanWith(AttentionMode::kSdpa, hf).saved_bytes == 8448);

  AttentionOptions mha;
  mha.out_projection = OutProjection::kMultiheadAttention;
  CHECK(PlanWith(AttentionMode::kEager, mha).saved_bytes == 10240 + 2048);
  CHECK(PlanWith(AttentionMode::kSdpa, mha).saved_bytes == 8448 + 2048);
}

// nn.MultiheadAttention's q, k and v are views of its packed [S, B, E] projection: [B, H, S, D]
// laid out [S, B, H, D]. The flash kernel (half precision, no runtime mask) allocates its output
// like q (empty_like(q.transpose(1, 2))), so permute(2, 0, 1, 3) of it is dense and the merge of
// the heads a view; the memory-efficient kernel (fp32) writes a fresh [B, S, H, D], which that
// permute cannot view: a copy. Measured on an H100: torchvision ViT-B/16 in bf16 keeps no copy
// (saved bytes equal PyTorch's to 0.1 MiB with this rule, 110.8 MiB over without it).
// Here x [S, B, H, D] fp32 (S = 16, B = 2, H = 2, D = 8); q, k, v = (x + b).permute(1, 2, 0, 3).
// bf16 autocast, sum loss, SGD: the fused node saves its own bf16 casts of q, k, v (3 x 512 x 2
// = 3072 B), its output (1024 B) and logsumexp (256 B); the projection saves the merged heads
// (the output itself under flash, 1024 B more as a copy) and its bf16 weight cast (16 x 16 x 2
// = 512 B): 4864 B under flash. In fp32 (efficient kernel): q, k, v, out 4 x 2048 + lse 256 +
// the copy 2048 = 10496 B (the weight is fp32, no cast).
TEST_CASE("flash attention's output follows q's layout: nn.MultiheadAttention merges by a view",
          "[attention][views]") {
  TestGraph t = AttentionBlock(
      {.out_projection = OutProjection::kMultiheadAttention, .sequence_first = true});
  REQUIRE(ApplyAttentionMode(t.graph, AttentionMode::kSdpa, "mha.onnx").ok());

  auto saved = [&](Precision precision) {
    ProgramOptions options = SumLossSgd();
    options.precision = precision;
    options.amp_mode = AmpMode::kAutocast;
    TrainingProgram program = DeriveVerified(t.graph, options);
    ExactAllocator exact;
    auto r = Simulate(program, t.Bind(2), exact);
    REQUIRE(r.ok());
    return r->saved_activation_bytes;
  };
  CHECK(saved(Precision::kBf16) == 4864);
  CHECK(saved(Precision::kFp32) == 10496);
}

// torchvision's Swin adds a trained relative-position bias to the scores and writes its attention
// out by hand (q.matmul(k.transpose(-2, -1)), softmax, dropout, matmul(v)): PyTorch runs it eager,
// and the fused op would give the bias no gradient. Measured on an H100: Swin-T's saved bytes are
// eager's to 0.2 MiB in fp32 and bf16. Eager: q 2048 + k 2048 + P 4096 + v 2048 (Add saves
// nothing).
TEST_CASE("q and k^T each scaled by sqrt(scale), as torch.onnx writes sdpa, fuse as one scale",
          "[attention]") {
  AttentionOptions split;
  split.split_scale = true;
  // Eager: MatMul keeps q' = q * sqrt(s) and k'^T (both new tensors, 2048 each), P, v; each Mul
  // keeps only its constant (no activation): 2048 + 2048 + 4096 + 2048 = 10240.
  CHECK(PlanWith(AttentionMode::kEager, split).saved_bytes == 10240);
  // Fused: q, k, v, out, lse = 8448, as with one scale; k^T * sqrt(s) no longer kept apart
  // (it was: 8448 + 2048 when only the q side folded into the node).
  const Planned sdpa = PlanWith(AttentionMode::kSdpa, split);
  CHECK(sdpa.saved_bytes == 8448);
  const FusedAttention& fused = OnlyFused(sdpa.plan);
  CHECK(fused.mask == sdpa::kMaskNone);
}

TEST_CASE("the dynamo exporter's sdpa (flattened k^T, one folded scale) fuses on q, k, v",
          "[attention]") {
  AttentionOptions torchlib;
  torchlib.torchlib_scale = true;
  // Eager: MatMul keeps q' = q * c and k'^T (new tensors, 2048 each), P 4096 and v 2048; the
  // Muls by the untrained c and the Reshapes and Transpose of the contiguous k keep nothing:
  // 10240.
  CHECK(PlanWith(AttentionMode::kEager, torchlib).saved_bytes == 10240);
  // Fused: q, k, v, out, lse = 2048 * 4 + 256 = 8448. Before the untrained [1] initializer
  // counted as a constant, both Muls stayed outside and the node kept q' and k'^T besides
  // (8448 + 2 * 2048); before the flattened k^T was read back to k, k'^T alone (8448 + 2048).
  const Planned sdpa = PlanWith(AttentionMode::kSdpa, torchlib);
  CHECK(sdpa.saved_bytes == 8448);
  const FusedAttention& fused = OnlyFused(sdpa.plan);
  for (const char* node :
       {"attn/scale_q", "attn/scale_k", "attn/key_flat", "attn/key_flat_t", "attn/key_t4"})
    CHECK(std::count(fused.replaced.begin(), fused.replaced.end(), node) == 1);
}

// torch's eager attention has no NaN guard (HF's eager_attention_forward: softmax, dropout,
// matmul), and SDPA's math kernel runs it inside _safe_softmax, whose backward keeps only its
// result. Kept as written, the guard's Where output (4096 B) would be a second P that the
// MatMul saves, and Where its bool condition (1024 B) besides.
TEST_CASE("the exporter's NaN guard after the softmax is no tensor when attention runs eager",
          "[attention]") {
  AttentionOptions guarded;
  guarded.nan_guard = true;
  // q 2048 + k 2048 + P 4096 + v 2048, as without the guard: 10240.
  CHECK(PlanWith(AttentionMode::kEager, guarded).saved_bytes == 10240);
  CHECK(PlanWith(AttentionMode::kEager, {}).saved_bytes == 10240);
  // Fused, the guard is inside the node: q, k, v, out, lse = 8448.
  const Planned sdpa = PlanWith(AttentionMode::kSdpa, guarded);
  CHECK(sdpa.saved_bytes == 8448);
  CHECK(std::count(OnlyFused(sdpa.plan).replaced.begin(), OnlyFused(sdpa.plan).replaced.end(),
                   "attn/nan_guard") == 1);
  // The rewrite: the guard's Where becomes Identity(P), under its own name; IsNaN goes.
  TestGraph t = AttentionBlock(guarded);
  size_t stripped = 0;
  Graph graph = StripSoftmaxNanGuards(std::move(t.graph), &stripped);
  CHECK(stripped == 1);
  CHECK(graph.node(graph.value(*graph.FindValue("guarded")).producer).op_type == "Identity");
  CHECK_FALSE(graph.FindValue("p_is_nan"));
}

TEST_CASE("attention with a trained score bias stays eager", "[attention]") {
  AttentionOptions learned;
  learned.mask = Mask::kLearnedBias;
  const Planned planned = PlanWith(AttentionMode::kAuto, learned);
  CHECK(planned.plan.fused.empty());
  CHECK(planned.plan.math_kernel.empty());  // auto: written by hand (Swin), no SDPA call
  CHECK(planned.saved_bytes == 10240);
  // --attention sdpa (issue 41): recognised, and run as written: the mask SDPA would receive
  // requires grad, PyTorch runs its math kernel (docs/attention.md), which keeps eager's
  // q 2048 + k 2048 + P 4096 + v 2048 = 10240.
  const Planned sdpa = PlanWith(AttentionMode::kSdpa, learned);
  CHECK(sdpa.plan.fused.empty());
  REQUIRE(sdpa.plan.math_kernel.size() == 1);
  CHECK(sdpa.plan.math_kernel.front().mask_requires_grad);
  CHECK(sdpa.saved_bytes == 10240);
  CHECK_THAT(AttentionPlanText(sdpa.plan).front(),
             Catch::Contains("1 attentions with a trained score bias run SDPA's math kernel"));
}

// HF's T5 (issue 41 item 6): no scaling, scores + position_bias + mask as two Adds. The
// self-attention's bias is a trained table: recognised for --attention sdpa and run as written
// (the math kernel keeps eager's bytes); the cross-attention's bias is torch.zeros: it adds
// nothing, and the attention fuses with the padding mask alone.
TEST_CASE("T5's self-attention (a trained position bias) runs SDPA's math kernel", "[attention]") {
  const Planned eager = PlanWith(AttentionMode::kEager, {.mask = Mask::kT5SelfBias});
  const Planned sdpa = PlanWith(AttentionMode::kSdpa, {.mask = Mask::kT5SelfBias});
  CHECK(sdpa.plan.fused.empty());
  REQUIRE(sdpa.plan.math_kernel.size() == 1);
  CHECK(sdpa.plan.math_kernel.front().mask_requires_grad);
  // Eager's q 2048 + k 2048 + P 4096 + v 2048 (the Adds keep nothing).
  CHECK(eager.saved_bytes == 10240);
  CHECK(sdpa.saved_bytes == 10240);
}

TEST_CASE("T5's cross-attention: the zero bias adds nothing, the padding mask fuses",
          "[attention]") {
  const Planned sdpa = PlanWith(AttentionMode::kSdpa, {.mask = Mask::kT5CrossZeros});
  const FusedAttention& fused = OnlyFused(sdpa.plan);
  CHECK(fused.mask == sdpa::kMaskAdd);
  CHECK_FALSE(fused.mask_requires_grad);
  // Both Adds are replaced.
  CHECK(std::count(fused.replaced.begin(), fused.replaced.end(), "attn/bias") == 1);
  CHECK(std::count(fused.replaced.begin(), fused.replaced.end(), "attn/mask") == 1);
}

TEST_CASE("two runtime additive terms are not fused into one mask input", "[attention]") {
  const Planned sdpa = PlanWith(AttentionMode::kAuto, {.mask = Mask::kTwoRuntimeTerms});
  CHECK(sdpa.plan.fused.empty());
  CHECK(sdpa.plan.math_kernel.empty());
}

TEST_CASE("causal mask by Add and by Where: the constant mask costs nothing in either mode",
          "[attention]") {
  for (Mask mask : {Mask::kAddCausal, Mask::kWhereCausal}) {
    const Planned eager = PlanWith(AttentionMode::kEager, {.mask = mask});
    // As without a mask: Add keeps nothing, Where keeps its condition, a constant.
    CHECK(eager.saved_bytes == 10240);
    const Planned sdpa = PlanWith(AttentionMode::kSdpa, {.mask = mask});
    CHECK(OnlyFused(sdpa.plan).mask ==
          (mask == Mask::kAddCausal ? sdpa::kMaskAdd : sdpa::kMaskKeep));
    // q, k, v, out 4 * 2048 + lse 256; the mask is kept but is a constant.
    CHECK(sdpa.saved_bytes == 8448);
    // MatMul, Div, the mask, Softmax, MatMul; the key's Transpose stays (the fused node reads
    // k^T, a view of k, with key_transposed = 1).
    CHECK(OnlyFused(sdpa.plan).replaced.size() == 5);
  }
}

TEST_CASE("attention with dropout: eager keeps the bool mask and P', sdpa the RNG state",
          "[attention]") {
  const Planned eager =
      PlanWith(AttentionMode::kEager, {.mask = Mask::kWhereCausal, .dropout = true});
  // q 2048 + k 2048 + P 4096 (Softmax's output) + mask 1024 (bool) + P' 4096 + v 2048.
  CHECK(eager.saved_bytes == 15360);
  const Planned sdpa =
      PlanWith(AttentionMode::kSdpa, {.mask = Mask::kWhereCausal, .dropout = true});
  CHECK(OnlyFused(sdpa.plan).dropout);
  // 8448 + philox seed and offset 2 * 8.
  CHECK(sdpa.saved_bytes == 8464);
}

TEST_CASE("an Identity left by a ratio-0 Dropout is fused with the attention around it",
          "[attention]") {
  const Planned sdpa =
      PlanWith(AttentionMode::kSdpa, {.mask = Mask::kAddCausal, .identity_after_softmax = true});
  CHECK_FALSE(OnlyFused(sdpa.plan).dropout);
  // MatMul, Div, Add, Softmax, Identity, MatMul.
  CHECK(OnlyFused(sdpa.plan).replaced.size() == 6);
  // As without the Identity: q, k, v, out 4 * 2048 + lse 256.
  CHECK(sdpa.saved_bytes == 8448);
}

TEST_CASE("same-dtype casts after the softmax are part of the attention", "[attention]") {
  // HF llama's eager attention in an fp32 export: Softmax -> Cast(float) -> Cast(float) ->
  // Dropout(0) -> MatMul. Eager: the casts alias P (torch's .to() of an fp32 tensor returns it),
  // so the bytes are those without them: q 2048 + k 2048 + P 4096 + v 2048.
  const Planned eager = PlanWith(AttentionMode::kEager, {.same_dtype_casts = 2});
  CHECK(eager.saved_bytes == 10240);
  // sdpa fuses the casts too: MatMul, Div, Softmax, 2 Casts, MatMul; q, k, v, out + lse.
  const Planned sdpa = PlanWith(AttentionMode::kSdpa, {.same_dtype_casts = 2});
  CHECK(OnlyFused(sdpa.plan).replaced.size() == 6);
  CHECK(sdpa.saved_bytes == 8448);
}

TEST_CASE("padding mask: a per-batch input the sdpa kernel keeps as attn_bias", "[attention]") {
  const Planned eager = PlanWith(AttentionMode::kEager, {.mask = Mask::kPadding});
  CHECK(eager.saved_bytes == 10240);  // Add keeps nothing
  const Planned sdpa = PlanWith(AttentionMode::kSdpa, {.mask = Mask::kPadding});
  CHECK(OnlyFused(sdpa.plan).mask == sdpa::kMaskAdd);
  // 8448 + the mask [B, 1, 1, S] fp32 = 2*16*4 = 128 (the efficient kernel saves attn_bias).
  CHECK(sdpa.saved_bytes == 8576);
}

TEST_CASE("grouped-query attention: sdpa keeps K and V before repeat_kv", "[attention]") {
  // One kv head for two query heads: |k| = |v| = 2*1*16*8 = 256 elements = 1024 bytes.
  const Planned sdpa = PlanWith(AttentionMode::kSdpa, {.mask = Mask::kAddCausal, .kv_heads = 1});
  CHECK(OnlyFused(sdpa.plan).grouped_query);
  // q 2048 + k 1024 + v 1024 + out 2048 + lse 256.
  CHECK(sdpa.saved_bytes == 6400);
  // Eager keeps P and q besides the repeated K and V, so it keeps strictly more: at least
  // q 2048 + P 4096 + k 1024 + v 1024 even with the repeats as views of k and v.
  const Planned eager = PlanWith(AttentionMode::kEager, {.mask = Mask::kAddCausal, .kv_heads = 1});
  CHECK(eager.saved_bytes >= 8192);
}

TEST_CASE("grouped-query attention in an fp32 plan stays eager: SDPA runs its math kernel",
          "[attention]") {
  // HF passes enable_gqa=True; flash needs fp16/bf16 and the memory-efficient kernel takes no
  // grouped K/V, so fp32 falls back to the math kernel, which keeps what eager keeps (measured on
  // an H100: a 1.1B Llama in fp32 peaks the same under sdpa and eager, docs/measurements.md).
  const AttentionOptions gqa{.mask = Mask::kAddCausal, .kv_heads = 1};
  const Planned fp32 = PlanWith(AttentionMode::kSdpa, gqa, /*fp32_only=*/true);
  CHECK(fp32.plan.fused.empty());
  REQUIRE(fp32.plan.math_kernel.size() == 1);
  CHECK(fp32.plan.math_kernel.front().grouped_query);
  CHECK(fp32.plan.mode() == "eager");
  CHECK(fp32.saved_bytes == PlanWith(AttentionMode::kEager, gqa).saved_bytes);
  CHECK(AttentionPlanToJson(fp32.plan)["math_kernel"] == 1);
  // Without grouped K/V the fp32 plan fuses (the memory-efficient kernel takes fp32): 8448 as
  // in the first case.
  const Planned mha = PlanWith(AttentionMode::kSdpa, {.mask = Mask::kAddCausal}, true);
  CHECK(mha.plan.fused.size() == 1);
  CHECK(mha.saved_bytes == 8448);
  // A plan that may run in bf16 fuses the grouped one: 6400 as above.
  CHECK(PlanWith(AttentionMode::kSdpa, gqa).saved_bytes == 6400);
}

TEST_CASE("the ONNX Attention op (opset 23, 4D, is_causal) becomes the fused node", "[attention]") {
  auto block = [] {
    TestGraph t;
    const Dim b = t.B();
    ValueId x = t.Input("x", {b, kHeads, kSeq, kHead});
    ValueId q = t.Op("Add", "q_proj", {x, t.Param("bq", {kHead})}, "q", {b, kHeads, kSeq, kHead});
    ValueId k = t.Op("Add", "k_proj", {x, t.Param("bk", {kHead})}, "k", {b, kHeads, kSeq, kHead});
    ValueId v = t.Op("Add", "v_proj", {x, t.Param("bv", {kHead})}, "v", {b, kHeads, kSeq, kHead});
    t.Output(t.Op("Attention", "attn", {q, k, v}, "y", {b, kHeads, kSeq, kHead}));
    t.graph.mutable_node(t.NodeNamed("attn")).attributes.Set("is_causal", int64_t{1});
    return t;
  };
  TestGraph eager = block();
  REQUIRE(ApplyAttentionMode(eager.graph, AttentionMode::kEager, "block.onnx").ok());
  // The registry's eager Attention keeps Q, K, V (3 * 2048) and P (4096).
  CHECK(SavedBytes(eager.graph, eager) == 10240);
  TestGraph fused = block();
  auto plan = ApplyAttentionMode(fused.graph, AttentionMode::kAuto, "block.onnx");
  REQUIRE(plan.ok());
  CHECK(OnlyFused(*plan).mask == "causal");
  CHECK(OnlyFused(*plan).replaced == std::vector<std::string>{"attn"});
  // q, k, v, out 4 * 2048 + lse 256.
  CHECK(SavedBytes(fused.graph, fused) == 8448);
}

TEST_CASE("the ONNX Attention op with 3D inputs (heads packed) becomes the fused node",
          "[attention]") {
  // x [b, 16, 2 heads * 8]; k and v [b, 16, kv_heads * 8].
  auto block = [](int64_t kv_heads, int64_t q_hidden) {
    TestGraph t;
    const Dim b = t.B();
    const int64_t kv_hidden = kv_heads * kHead;
    ValueId x = t.Input("x", {b, kSeq, q_hidden});
    ValueId q = t.Op("Add", "q_proj", {x, t.Param("bq", {q_hidden})}, "q", {b, kSeq, q_hidden});
    ValueId xk = t.Input("xk", {b, kSeq, kv_hidden});
    ValueId k = t.Op("Add", "k_proj", {xk, t.Param("bk", {kv_hidden})}, "k", {b, kSeq, kv_hidden});
    ValueId v = t.Op("Add", "v_proj", {xk, t.Param("bv", {kv_hidden})}, "v", {b, kSeq, kv_hidden});
    t.Output(t.Op("Attention", "attn", {q, k, v}, "y", {b, kSeq, q_hidden}));
    Attributes& a = t.graph.mutable_node(t.NodeNamed("attn")).attributes;
    a.Set("is_causal", int64_t{1});
    a.Set("q_num_heads", kHeads);
    a.Set("kv_num_heads", kv_heads);
    return t;
  };
  TestGraph eager = block(kHeads, kHeads * kHead);
  REQUIRE(ApplyAttentionMode(eager.graph, AttentionMode::kEager, "block.onnx").ok());
  // At b = 2 each of Q, K, V is 2*16*16 floats = 2048 bytes, P [2, 2, 16, 16] 4096: 10240, as
  // the 4D op above.
  CHECK(SavedBytes(eager.graph, eager) == 10240);
  TestGraph fused = block(kHeads, kHeads * kHead);
  auto plan = ApplyAttentionMode(fused.graph, AttentionMode::kAuto, "block.onnx");
  REQUIRE(plan.ok());
  CHECK(OnlyFused(*plan).mask == "causal");
  CHECK_FALSE(OnlyFused(*plan).grouped_query);
  const Node& node = fused.graph.node(fused.NodeNamed(OnlyFused(*plan).node));
  CHECK(node.attributes.GetInt(sdpa::kHeadSize, 0) == kHead);
  // No scale attribute: 1/sqrt(head_size 8), not 1/sqrt(hidden 16).
  CHECK(node.attributes.GetFloat(sdpa::kScale, 0.0) == Approx(1.0 / std::sqrt(8.0)));
  // q, k, v, out 4 * 2048 + logsumexp [2, 2 heads, 16] fp32 256 = 8448, as the 4D op.
  CHECK(SavedBytes(fused.graph, fused) == 8448);
  // Grouped-query, one kv head: q 2048, k and v 1024 each, out 2048, logsumexp 256 = 6400.
  TestGraph gqa = block(1, kHeads * kHead);
  auto gqa_plan = ApplyAttentionMode(gqa.graph, AttentionMode::kAuto, "block.onnx");
  REQUIRE(gqa_plan.ok());
  CHECK(OnlyFused(*gqa_plan).grouped_query);
  CHECK(SavedBytes(gqa.graph, gqa) == 6400);
  // A hidden size that is not whole heads (15 over 2) is not recognised: it stays eager.
  TestGraph odd = block(kHeads, 15);
  auto odd_plan = ApplyAttentionMode(odd.graph, AttentionMode::kAuto, "block.onnx");
  REQUIRE(odd_plan.ok());
  CHECK(odd_plan->fused.empty());
}

TEST_CASE("ONNX Runtime's MultiHeadAttention (com.microsoft, 3D) becomes the fused node",
          "[attention]") {
  // query, key, value [b, 16, 2 heads * 8], unidirectional (causal); `extra` adds a projection
  // bias (slot 3), which leaves the op eager.
  auto block = [](bool bias) {
    TestGraph t;
    const Dim b = t.B();
    const int64_t hidden = kHeads * kHead;
    ValueId x = t.Input("x", {b, kSeq, hidden});
    auto proj = [&](const std::string& name) {
      return t.Op("Add", name + "_proj", {x, t.Param("b" + name, {hidden})}, name,
                  {b, kSeq, hidden});
    };
    ValueId q = proj("q"), k = proj("k"), v = proj("v");
    std::vector<ValueId> inputs = {q, k, v};
    if (bias) inputs.push_back(t.Param("qkv_bias", {3 * hidden}));
    t.Output(t.Op("MultiHeadAttention", "mha", inputs, "y", {b, kSeq, hidden}));
    Node& mha = t.graph.mutable_node(t.NodeNamed("mha"));
    mha.domain = "com.microsoft";
    mha.attributes.Set("num_heads", kHeads);
    mha.attributes.Set("unidirectional", int64_t{1});
    return t;
  };
  TestGraph eager = block(false);
  REQUIRE(ApplyAttentionMode(eager.graph, AttentionMode::kEager, "block.onnx").ok());
  // The registry's eager entry: Q, K, V 3 * 2048 and P [2, 2, 16, 16] 4096 at b = 2.
  CHECK(SavedBytes(eager.graph, eager) == 10240);
  TestGraph fused = block(false);
  auto plan = ApplyAttentionMode(fused.graph, AttentionMode::kAuto, "block.onnx");
  REQUIRE(plan.ok());
  CHECK(OnlyFused(*plan).mask == "causal");
  CHECK(OnlyFused(*plan).replaced == std::vector<std::string>{"mha"});
  const Node& node = fused.graph.node(fused.NodeNamed(OnlyFused(*plan).node));
  CHECK(node.attributes.GetInt(sdpa::kHeadSize, 0) == kHead);
  CHECK(node.attributes.GetFloat(sdpa::kScale, 0.0) == Approx(1.0 / std::sqrt(8.0)));
  // q, k, v, out 4 * 2048 + logsumexp 256.
  CHECK(SavedBytes(fused.graph, fused) == 8448);
  TestGraph with_bias = block(true);
  auto bias_plan = ApplyAttentionMode(with_bias.graph, AttentionMode::kAuto, "block.onnx");
  REQUIRE(bias_plan.ok());
  CHECK(bias_plan->fused.empty());
}

TEST_CASE("an extra reader of the scores keeps the attention eager", "[attention]") {
  TestGraph t = AttentionBlock({});
  t.Output(*t.graph.FindValue("probs"));  // the probabilities are also a model output
  auto plan = ApplyAttentionMode(t.graph, AttentionMode::kAuto, "block.onnx");
  REQUIRE(plan.ok());
  CHECK(plan->fused.empty());
  CHECK(plan->mode() == "eager");
}

TEST_CASE("attention mode sdpa on a model without attention is bad input", "[attention]") {
  TestGraph t = testing::LinearRelu();
  auto plan = ApplyAttentionMode(t.graph, AttentionMode::kSdpa, "/models/mlp.onnx");
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.error().message.find("--attention sdpa: model 'mlp.onnx' has no attention") == 0);
  // auto and eager accept it and change nothing.
  CHECK(ApplyAttentionMode(t.graph, AttentionMode::kAuto, "mlp.onnx").ok());
  CHECK(ApplyAttentionMode(t.graph, AttentionMode::kEager, "mlp.onnx").ok());
}

TEST_CASE("plan.attention JSON and text name the fused attentions", "[attention]") {
  const Planned sdpa = PlanWith(AttentionMode::kAuto, {.mask = Mask::kWhereCausal});
  const nlohmann::ordered_json j = AttentionPlanToJson(sdpa.plan);
  CHECK(j["mode"] == "sdpa");
  CHECK(j["requested"] == "auto");
  CHECK(j["fused"] == 1);
  CHECK(j["groups"][0]["node"] == "attn/ScaledDotProductAttention");
  CHECK(j["groups"][0]["mask"] == "keep");
  const std::vector<std::string> text = AttentionPlanText(sdpa.plan);
  REQUIRE(text.size() == 2);
  CHECK(text[0] == "sdpa: 1 attention fused into scaled_dot_product_attention (flash kernel)");
  CHECK(text[1] == "first attn/ScaledDotProductAttention; all: --json, plan.attention");
}

}  // namespace
}  // namespace memplan
