// bert_base: Hugging Face BertModel (bert-base-uncased config) with its pooler.
// Inputs input_ids, token_type_ids, attention_mask [batch, seq]; outputs last_hidden_state
// [batch, seq, 768] and pooler_output [batch, 768].
//
//   embeddings: word(input_ids) + token_type(token_type_ids) + position(arange(seq))
//               -> LayerNorm -> dropout
//   layer.i:    self-attention (query/key/value, scores / sqrt(64) + extended mask, softmax,
//               dropout, @ value) -> output.dense -> dropout -> LayerNorm(+ residual)
//               -> intermediate.dense -> gelu -> output.dense -> dropout -> LayerNorm(+ residual)
//   pooler:     tanh(dense(hidden[:, 0]))
//   extended mask = (1 - attention_mask[:, None, None, :]) * finfo(float32).min
//
// Linear weights are stored [in, out] for MatMul (as constant-folded exports store them); the
// pooler sees a rank-2 input and so is a Gemm with the state_dict's [out, in] weight.

#include <cmath>
#include <limits>

#include "tools/zoo/zoo_models.h"

namespace memplan::zoo {
namespace {

struct BertConfig {
  int64_t layers = 12;
  int64_t width = 768;  // hidden_size
  int64_t heads = 12;
  int64_t ffn = 3072;  // intermediate_size
  int64_t vocab = 30522;
  int64_t positions = 512;  // max_position_embeddings
  int64_t token_types = 2;  // type_vocab_size
  float dropout = 0.1f;     // hidden_dropout_prob = attention_probs_dropout_prob
  float layer_norm_epsilon = 1e-12f;
};

class BertWriter {
 public:
  BertWriter(ModelBuilder& builder, const BertConfig& config) : b_(builder), c_(config) {}

  void Write() {
    std::string ids = b_.AddInput("input_ids", onnx::TensorProto::INT64, {"batch", "seq"});
    std::string types = b_.AddInput("token_type_ids", onnx::TensorProto::INT64, {"batch", "seq"});
    std::string mask = b_.AddInput("attention_mask", onnx::TensorProto::INT64, {"batch", "seq"});

    std::string extended = ExtendedMask(mask);
    std::string x = Embeddings(ids, types);
    for (int64_t i = 0; i < c_.layers; ++i) x = Layer(i, x, extended);
    b_.AddOutput(x, onnx::TensorProto::FLOAT, {"batch", "seq", c_.width});

    std::string first =
        b_.Op("/pooler", "Gather", {x, b_.ConstantIntScalar("/pooler", 0)}, {IntAttr("axis", 1)});
    std::string pooled = b_.Gemm("/pooler/dense", "pooler.dense", first, c_.width, c_.width);
    pooled = b_.Op("/pooler/activation", "Tanh", {pooled});
    b_.AddOutput(pooled, onnx::TensorProto::FLOAT, {"batch", c_.width});
  }

 private:
  std::string ExtendedMask(const std::string& mask) {
    std::string m = b_.Op("", "Unsqueeze", {mask, b_.ConstantInts("", {1})});
    m = b_.Op("", "Unsqueeze", {m, b_.ConstantInts("", {2})});
    m = b_.Op("", "Cast", {m}, {IntAttr("to", onnx::TensorProto::FLOAT)});
    m = b_.Op("", "Sub", {b_.ConstantFloatScalar("", 1.0f), m});
    return b_.Op("", "Mul", {m, b_.ConstantFloatScalar("", std::numeric_limits<float>::lowest())});
  }

  std::string Embeddings(const std::string& ids, const std::string& types) {
    const std::string scope = "/embeddings";
    std::string word = b_.AddParameter("embeddings.word_embeddings.weight", {c_.vocab, c_.width},
                                       Init::UniformFanIn(1));
    std::string position = b_.AddParameter("embeddings.position_embeddings.weight",
                                           {c_.positions, c_.width}, Init::UniformFanIn(1));
    std::string token_type = b_.AddParameter("embeddings.token_type_embeddings.weight",
                                             {c_.token_types, c_.width}, Init::UniformFanIn(1));

    std::string seq = b_.DimOf(scope, ids, 1);
    std::string positions = b_.Op(
        scope, "Range", {b_.ConstantIntScalar(scope, 0), seq, b_.ConstantIntScalar(scope, 1)});
    positions = b_.Op(scope, "Unsqueeze", {positions, b_.ConstantInts(scope, {0})});

    std::string x = b_.Op(scope + "/word_embeddings", "Gather", {word, ids}, {IntAttr("axis", 0)});
    std::string t = b_.Op(scope + "/token_type_embeddings", "Gather", {token_type, types},
                          {IntAttr("axis", 0)});
    x = b_.Op(scope, "Add", {x, t});
    std::string p = b_.Op(scope + "/position_embeddings", "Gather", {position, positions},
                          {IntAttr("axis", 0)});
    x = b_.Op(scope, "Add", {x, p});
    x = b_.LayerNorm(scope + "/LayerNorm", "embeddings.LayerNorm", x, c_.width,
                     c_.layer_norm_epsilon);
    return b_.Dropout(scope + "/dropout", x, c_.dropout);
  }

  std::string SelfAttention(const std::string& scope, const std::string& prefix,
                            const std::string& x, const std::string& extended_mask) {
    std::string q = b_.Linear(scope + "/query", prefix + ".query", x, c_.width, c_.width);
    std::string k = b_.Linear(scope + "/key", prefix + ".key", x, c_.width, c_.width);
    std::string v = b_.Linear(scope + "/value", prefix + ".value", x, c_.width, c_.width);
    k = b_.SplitHeads(scope, k, c_.heads, c_.width / c_.heads, /*is_key=*/true);
    v = b_.SplitHeads(scope, v, c_.heads, c_.width / c_.heads, /*is_key=*/false);
    q = b_.SplitHeads(scope, q, c_.heads, c_.width / c_.heads, /*is_key=*/false);

    std::string scores = b_.Op(scope, "MatMul", {q, k});
    const float head_dim_sqrt = std::sqrt(static_cast<float>(c_.width / c_.heads));
    scores = b_.Op(scope, "Div", {scores, b_.ConstantFloatScalar(scope, head_dim_sqrt)});
    scores = b_.Op(scope, "Add", {scores, extended_mask});
    std::string probs = b_.Op(scope, "Softmax", {scores}, {IntAttr("axis", -1)});
    probs = b_.Dropout(scope + "/dropout", probs, c_.dropout);
    std::string context = b_.Op(scope, "MatMul", {probs, v});
    return b_.MergeHeads(scope, context, c_.width);
  }

  // BertSelfOutput / BertOutput: dense -> dropout -> LayerNorm(hidden + input).
  std::string DenseDropoutNorm(const std::string& scope, const std::string& prefix,
                               const std::string& h, const std::string& residual, int64_t in) {
    std::string y = b_.Linear(scope + "/dense", prefix + ".dense", h, in, c_.width);
    y = b_.Dropout(scope + "/dropout", y, c_.dropout);
    y = b_.Op(scope, "Add", {y, residual});
    return b_.LayerNorm(scope + "/LayerNorm", prefix + ".LayerNorm", y, c_.width,
                        c_.layer_norm_epsilon);
  }

  std::string Layer(int64_t i, const std::string& x, const std::string& extended_mask) {
    const std::string prefix = "encoder.layer." + std::to_string(i);
    const std::string scope = "/encoder/layer." + std::to_string(i);
    std::string context =
        SelfAttention(scope + "/attention/self", prefix + ".attention.self", x, extended_mask);
    std::string attended = DenseDropoutNorm(scope + "/attention/output",
                                            prefix + ".attention.output", context, x, c_.width);
    std::string h = b_.Linear(scope + "/intermediate/dense", prefix + ".intermediate.dense",
                              attended, c_.width, c_.ffn);
    h = b_.GeluErf(scope + "/intermediate/intermediate_act_fn", h);
    return DenseDropoutNorm(scope + "/output", prefix + ".output", h, attended, c_.ffn);
  }

  ModelBuilder& b_;
  BertConfig c_;
};

}  // namespace

void BuildBertBase(ModelBuilder& builder) { BertWriter(builder, BertConfig{}).Write(); }

}  // namespace memplan::zoo
