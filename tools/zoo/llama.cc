// llama3_8b / mistral_7b: Hugging Face LlamaForCausalLM / MistralForCausalLM (the two share the
// decoder), input_ids[batch, seq] -> logits[batch, seq, vocab], eager attention as torch.onnx
// exports it.
//
//   embed_tokens(input_ids) -> layers.0 .. layers.{n-1} -> norm -> lm_head (untied)
//   layer i:    x + self_attn(input_layernorm(x)),  then  x + mlp(post_attention_layernorm(x))
//   self_attn:  q_proj, k_proj, v_proj (no bias) -> heads (q: 32, k/v: 8 of dim 128) -> rotary
//               on q and k -> repeat_kv(k), repeat_kv(v) -> softmax(q k^T / sqrt(128) + causal)
//               @ v -> merge heads -> o_proj
//   mlp:        down_proj(silu(gate_proj(x)) * up_proj(x))
//   RMSNorm:    weight * (x * 1 / sqrt(mean(x^2, -1) + eps)), the exporter's seven nodes
//               Pow, ReduceMean, Add, Sqrt, Reciprocal, Mul, Mul (opset 17 has no
//               RMSNormalization).
//
// Shared, computed once at the top level as HF's LlamaModel does:
//  * position_ids = arange(seq)[None];
//  * rotary cos/sin [1, seq, head_dim] from inv_freq (a 64-element Constant, HF's non-persistent
//    buffer): cat(f, f).cos() / .sin() with f = (inv_freq[None, :, None] @ position_ids[:, None,
//    :]).transpose(1, 2). Computing them keeps the file small and the model free of a max-length
//    table; as Constants they are not parameters (a floating initializer would be, since a
//    gradient reaches it through Mul), so the counts below are PyTorch's parameters();
//  * the causal mask [batch, 1, seq, seq] as transformers' _make_causal_mask writes it:
//    full(lowest).masked_fill(arange < (arange + 1).view(seq, 1), 0)[None, None].expand(...).
// Per layer: cos/sin.unsqueeze(1); rotate_half(x) = cat(-x[..., 64:], x[..., :64]) as Slice,
// Neg, Concat; repeat_kv as x[:, :, None].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)
// (Unsqueeze, Expand, Reshape), which memplan's attention fusion reads as grouped-query attention.
// nn.SiLU is written Sigmoid, Mul (torch.onnx's silu); the attention's dropout (p = 0 in the
// configs, training mode) is a Dropout node of ratio 0, as HF's eager attention exports it.
// Linear weights are stored [in, out] under their state_dict names, as the other zoo entries do.
//
// Parameters per layer: q, o 4096^2 each; k, v 4096 * 1024 each; gate, up, down 4096 * 14336
// each; two norms 4096 each: 218,112,000. Plus embed_tokens and lm_head vocab * 4096 each and
// the final norm 4096.

#include <cmath>
#include <limits>

#include "tools/zoo/zoo_models.h"

namespace memplan::zoo {
namespace {

struct LlamaConfig {
  int64_t vocab;
  double rope_theta;
  int64_t layers = 32;
  int64_t width = 4096;  // hidden_size
  int64_t heads = 32;    // num_attention_heads
  int64_t kv_heads = 8;  // num_key_value_heads
  int64_t intermediate = 14336;
  float rms_norm_eps = 1e-5f;
};

class LlamaWriter {
 public:
  LlamaWriter(ModelBuilder& builder, const LlamaConfig& config)
      : b_(builder), c_(config), head_dim_(config.width / config.heads) {}

  void Write() {
    std::string ids = b_.AddInput("input_ids", onnx::TensorProto::INT64, {"batch", "seq"});
    std::string embed =
        b_.AddParameter("model.embed_tokens.weight", {c_.vocab, c_.width}, Init::UniformFanIn(1));
    std::string x = b_.Op("/model/embed_tokens", "Gather", {embed, ids}, {IntAttr("axis", 0)});

    // position_ids = torch.arange(seq).unsqueeze(0)
    std::string batch = b_.DimOf("/model", ids, 0);
    std::string seq = b_.DimOf("/model", ids, 1);
    std::string arange =
        b_.Op("/model", "Range",
              {b_.ConstantIntScalar("/model", 0), seq, b_.ConstantIntScalar("/model", 1)});
    std::string positions = b_.Op("/model", "Unsqueeze", {arange, b_.ConstantInts("/model", {0})});
    Rotary(positions);
    CausalMask(batch, seq);

    for (int64_t i = 0; i < c_.layers; ++i) x = Layer(i, x);

    x = RmsNorm("/model/norm", "model.norm", x);
    std::string logits = b_.LinearNoBias("/lm_head", "lm_head", x, c_.width, c_.vocab);
    b_.AddOutput(logits, onnx::TensorProto::FLOAT, {"batch", "seq", c_.vocab});
  }

 private:
  // cos_, sin_ [1, seq, head_dim] from inv_freq and position_ids (LlamaRotaryEmbedding.forward).
  void Rotary(const std::string& positions) {
    const std::string scope = "/model/rotary_emb";
    std::vector<float> inv_freq;
    for (int64_t i = 0; i < head_dim_; i += 2) {
      inv_freq.push_back(static_cast<float>(
          1.0 / std::pow(c_.rope_theta, static_cast<double>(i) / static_cast<double>(head_dim_))));
    }
    std::string freq = b_.ConstantFloats(scope, inv_freq);
    freq = b_.Op(scope, "Unsqueeze", {freq, b_.ConstantInts(scope, {0, 2})});
    std::string rows = b_.DimOf(scope, positions, 0);
    freq = b_.Op(scope, "Expand", {freq, b_.ShapeTarget(scope, {rows, head_dim_ / 2, 1})});
    std::string places = b_.Op(scope, "Unsqueeze", {positions, b_.ConstantInts(scope, {1})});
    places = b_.Op(scope, "Cast", {places}, {IntAttr("to", onnx::TensorProto::FLOAT)});
    std::string freqs = b_.Op(scope, "MatMul", {freq, places});
    freqs = b_.Op(scope, "Transpose", {freqs}, {IntsAttr("perm", {0, 2, 1})});
    std::string emb = b_.Op(scope, "Concat", {freqs, freqs}, {IntAttr("axis", -1)});
    cos_ = b_.Op(scope, "Cos", {emb});
    sin_ = b_.Op(scope, "Sin", {emb});
  }

  // mask_ [batch, 1, seq, seq]: 0 where key <= query, the float32 lowest elsewhere.
  void CausalMask(const std::string& batch, const std::string& seq) {
    const std::string scope = "/model";
    std::string full = b_.ConstantOfShapeFloat(scope, b_.ShapeTarget(scope, {seq, seq}),
                                               std::numeric_limits<float>::lowest());
    std::string cond = b_.Op(scope, "Range",
                             {b_.ConstantIntScalar(scope, 0), seq, b_.ConstantIntScalar(scope, 1)});
    std::string next = b_.Op(scope, "Add", {cond, b_.ConstantIntScalar(scope, 1)});
    next = b_.Op(scope, "Reshape", {next, b_.ShapeTarget(scope, {seq, 1})});
    std::string keep = b_.Op(scope, "Less", {cond, next});
    std::string mask = b_.Op(scope, "Where", {keep, b_.ConstantFloatScalar(scope, 0.0f), full});
    mask = b_.Op(scope, "Unsqueeze", {mask, b_.ConstantInts(scope, {0, 1})});
    mask_ = b_.Op(scope, "Expand", {mask, b_.ShapeTarget(scope, {batch, 1, seq, seq})});
  }

  std::string Layer(int64_t i, const std::string& x) {
    const std::string prefix = "model.layers." + std::to_string(i);
    const std::string scope = "/model/layers." + std::to_string(i);
    std::string h = RmsNorm(scope + "/input_layernorm", prefix + ".input_layernorm", x);
    h = Attention(scope + "/self_attn", prefix + ".self_attn", h);
    std::string residual = b_.Op(scope, "Add", {x, h});
    h = RmsNorm(scope + "/post_attention_layernorm", prefix + ".post_attention_layernorm",
                residual);
    h = Mlp(scope + "/mlp", prefix + ".mlp", h);
    return b_.Op(scope, "Add", {residual, h});
  }

  // LlamaRMSNorm: weight * (x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)).
  std::string RmsNorm(const std::string& scope, const std::string& prefix, const std::string& x) {
    std::string weight = b_.AddParameter(prefix + ".weight", {c_.width}, Init::Ones());
    std::string square = b_.Op(scope, "Pow", {x, b_.ConstantFloatScalar(scope, 2.0f)});
    std::string variance =
        b_.Op(scope, "ReduceMean", {square}, {IntsAttr("axes", {-1}), IntAttr("keepdims", 1)});
    variance = b_.Op(scope, "Add", {variance, b_.ConstantFloatScalar(scope, c_.rms_norm_eps)});
    std::string rstd = b_.Op(scope, "Reciprocal", {b_.Op(scope, "Sqrt", {variance})});
    std::string normed = b_.Op(scope, "Mul", {x, rstd});
    return b_.Op(scope, "Mul", {weight, normed});
  }

  // q * cos + rotate_half(q) * sin, with cos/sin unsqueezed to [1, 1, seq, head_dim].
  std::string ApplyRotary(const std::string& scope, const std::string& x, const std::string& cos,
                          const std::string& sin) {
    const int64_t half = head_dim_ / 2;
    auto slice = [&](int64_t start, int64_t end) {
      return b_.Op(scope, "Slice",
                   {x, b_.ConstantInts(scope, {start}), b_.ConstantInts(scope, {end}),
                    b_.ConstantInts(scope, {3}), b_.ConstantInts(scope, {1})});
    };
    std::string x1 = slice(0, half);
    std::string x2 = slice(half, std::numeric_limits<int64_t>::max());
    std::string rotated =
        b_.Op(scope, "Concat", {b_.Op(scope, "Neg", {x2}), x1}, {IntAttr("axis", -1)});
    return b_.Op(scope, "Add",
                 {b_.Op(scope, "Mul", {x, cos}), b_.Op(scope, "Mul", {rotated, sin})});
  }

  // repeat_kv: [b, kv, s, d] -> [b, kv * n_rep, s, d].
  std::string RepeatKv(const std::string& scope, const std::string& x) {
    const int64_t n_rep = c_.heads / c_.kv_heads;
    std::string batch = b_.DimOf(scope, x, 0);
    std::string seq = b_.DimOf(scope, x, 2);
    std::string wide = b_.Op(scope, "Unsqueeze", {x, b_.ConstantInts(scope, {2})});
    wide = b_.Op(scope, "Expand",
                 {wide, b_.ShapeTarget(scope, {batch, c_.kv_heads, n_rep, seq, head_dim_})});
    return b_.Op(scope, "Reshape",
                 {wide, b_.ShapeTarget(scope, {batch, c_.heads, seq, head_dim_})});
  }

  std::string Attention(const std::string& scope, const std::string& prefix, const std::string& x) {
    const int64_t kv_width = c_.kv_heads * head_dim_;
    std::string q = b_.LinearNoBias(scope + "/q_proj", prefix + ".q_proj", x, c_.width, c_.width);
    std::string k = b_.LinearNoBias(scope + "/k_proj", prefix + ".k_proj", x, c_.width, kv_width);
    std::string v = b_.LinearNoBias(scope + "/v_proj", prefix + ".v_proj", x, c_.width, kv_width);
    q = b_.SplitHeads(scope, q, c_.heads, head_dim_, /*is_key=*/false);
    k = b_.SplitHeads(scope, k, c_.kv_heads, head_dim_, /*is_key=*/false);
    v = b_.SplitHeads(scope, v, c_.kv_heads, head_dim_, /*is_key=*/false);

    std::string cos = b_.Op(scope, "Unsqueeze", {cos_, b_.ConstantInts(scope, {1})});
    std::string sin = b_.Op(scope, "Unsqueeze", {sin_, b_.ConstantInts(scope, {1})});
    q = ApplyRotary(scope, q, cos, sin);
    k = ApplyRotary(scope, k, cos, sin);
    k = RepeatKv(scope, k);
    v = RepeatKv(scope, v);

    std::string key_t = b_.Op(scope, "Transpose", {k}, {IntsAttr("perm", {0, 1, 3, 2})});
    std::string scores = b_.Op(scope, "MatMul", {q, key_t});
    const float head_dim_sqrt = std::sqrt(static_cast<float>(head_dim_));
    scores = b_.Op(scope, "Div", {scores, b_.ConstantFloatScalar(scope, head_dim_sqrt)});
    scores = b_.Op(scope, "Add", {scores, mask_});
    std::string probs = b_.Op(scope, "Softmax", {scores}, {IntAttr("axis", -1)});
    // nn.functional.dropout(p=attention_dropout=0.0, training=True): exported as a Dropout node
    // of ratio 0 (torch's dropout returns its input unchanged for p = 0).
    probs = b_.Dropout(scope, probs, 0.0f);
    std::string context = b_.Op(scope, "MatMul", {probs, v});
    context = b_.MergeHeads(scope, context, c_.width);
    return b_.LinearNoBias(scope + "/o_proj", prefix + ".o_proj", context, c_.width, c_.width);
  }

  // down_proj(act_fn(gate_proj(x)) * up_proj(x)), act_fn = SiLU = x * sigmoid(x).
  std::string Mlp(const std::string& scope, const std::string& prefix, const std::string& x) {
    std::string gate =
        b_.LinearNoBias(scope + "/gate_proj", prefix + ".gate_proj", x, c_.width, c_.intermediate);
    std::string up =
        b_.LinearNoBias(scope + "/up_proj", prefix + ".up_proj", x, c_.width, c_.intermediate);
    std::string act =
        b_.Op(scope + "/act_fn", "Mul", {gate, b_.Op(scope + "/act_fn", "Sigmoid", {gate})});
    std::string h = b_.Op(scope, "Mul", {act, up});
    return b_.LinearNoBias(scope + "/down_proj", prefix + ".down_proj", h, c_.intermediate,
                           c_.width);
  }

  ModelBuilder& b_;
  LlamaConfig c_;
  int64_t head_dim_;
  std::string cos_, sin_, mask_;
};

}  // namespace

// Meta-Llama-3-8B config.json: vocab_size 128256, rope_theta 500000.
void BuildLlama3_8b(ModelBuilder& builder) {
  LlamaWriter(builder, {/*vocab=*/128256, /*rope_theta=*/500000.0}).Write();
}

// Mistral-7B-v0.1 config.json: vocab_size 32000, rope_theta 10000 (sliding_window 4096 equals the
// sequences planned here, so the mask is the full causal one).
void BuildMistral7b(ModelBuilder& builder) {
  LlamaWriter(builder, {/*vocab=*/32000, /*rope_theta=*/10000.0}).Write();
}

}  // namespace memplan::zoo
