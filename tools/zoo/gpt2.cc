// gpt2_small / gpt2_xl: Hugging Face GPT2Model with a language-model head tied to the token
// embedding (GPT2LMHeadModel), input_ids[batch, seq] -> logits[batch, seq, vocab].
//
//   wte(input_ids) + wpe(arange(seq)) -> drop -> h.0 .. h.{n-1} -> ln_f -> lm_head (= wte^T)
//   block h.i:  x + attn(ln_1(x)),  then  x + mlp(ln_2(x))
//   attn:       c_attn -> split q,k,v -> heads -> softmax(where(causal, q k^T / sqrt(d), min))
//               -> attn_dropout -> @ v -> merge heads -> c_proj -> resid_dropout
//   mlp:        c_fc -> gelu -> c_proj -> dropout
//
// Conv1D weights are [in, out] in HF's state_dict already, so MatMul uses them directly. The LM
// head is the same "wte.weight" initializer again (Transpose -> MatMul), so the parameter count
// counts it once, as GPT2LMHeadModel.num_parameters() does. HF's activation is gelu_new (the tanh
// approximation); the zoo writes the exact Erf form, which has the same memory behaviour.
// The causal mask is the bool buffer "h.<i>.attn.bias" [1, 1, n_positions, n_positions], sliced
// to [.., key_len - query_len : key_len, :key_len] from Shape sub-graphs as HF's code does.

#include <cmath>
#include <limits>

#include "tools/zoo/zoo_models.h"

namespace memplan::zoo {
namespace {

struct Gpt2Config {
  int64_t layers;
  int64_t width;  // n_embd
  int64_t heads;
  int64_t vocab = 50257;
  int64_t positions = 1024;  // n_positions
  float dropout = 0.1f;      // resid_pdrop = embd_pdrop = attn_pdrop
  float layer_norm_epsilon = 1e-5f;
};

class Gpt2Writer {
 public:
  Gpt2Writer(ModelBuilder& builder, const Gpt2Config& config) : b_(builder), c_(config) {}

  void Write() {
    std::string ids = b_.AddInput("input_ids", onnx::TensorProto::INT64, {"batch", "seq"});
    std::string wte = b_.AddParameter("wte.weight", {c_.vocab, c_.width}, Init::UniformFanIn(1));
    std::string wpe =
        b_.AddParameter("wpe.weight", {c_.positions, c_.width}, Init::UniformFanIn(1));

    // position_ids = torch.arange(0, input_shape[-1]).unsqueeze(0)
    std::string seq = b_.DimOf("", ids, 1);
    std::string positions =
        b_.Op("", "Range", {b_.ConstantIntScalar("", 0), seq, b_.ConstantIntScalar("", 1)});
    positions = b_.Op("", "Unsqueeze", {positions, b_.ConstantInts("", {0})});

    std::string tokens = b_.Op("/wte", "Gather", {wte, ids}, {IntAttr("axis", 0)});
    std::string places = b_.Op("/wpe", "Gather", {wpe, positions}, {IntAttr("axis", 0)});
    std::string x = b_.Op("", "Add", {tokens, places});
    x = b_.Dropout("/drop", x, c_.dropout);

    for (int64_t i = 0; i < c_.layers; ++i) x = Block(i, x);

    x = b_.LayerNorm("/ln_f", "ln_f", x, c_.width, c_.layer_norm_epsilon);
    std::string wte_t = b_.Op("/lm_head", "Transpose", {wte}, {IntsAttr("perm", {1, 0})});
    std::string logits = b_.Op("/lm_head", "MatMul", {x, wte_t});
    b_.AddOutput(logits, onnx::TensorProto::FLOAT, {"batch", "seq", c_.vocab});
  }

 private:
  std::string Block(int64_t i, const std::string& x) {
    const std::string prefix = "h." + std::to_string(i);
    const std::string scope = "/" + prefix;
    auto attention = [&](const std::string& h) {
      return Attention(scope + "/attn", prefix + ".attn", h);
    };
    auto mlp = [&](std::string h) {
      h = b_.Linear(scope + "/mlp/c_fc", prefix + ".mlp.c_fc", h, c_.width, 4 * c_.width);
      h = b_.GeluErf(scope + "/mlp/act", h);
      h = b_.Linear(scope + "/mlp/c_proj", prefix + ".mlp.c_proj", h, 4 * c_.width, c_.width);
      return b_.Dropout(scope + "/mlp/dropout", h, c_.dropout);
    };
    return b_.PreNormBlock(scope, prefix, x, c_.width, c_.layer_norm_epsilon, attention, mlp);
  }

  std::string Attention(const std::string& scope, const std::string& prefix, const std::string& x) {
    std::string qkv = b_.Linear(scope + "/c_attn", prefix + ".c_attn", x, c_.width, 3 * c_.width);
    auto [q, k, v, scores] = b_.SplitFusedQkvAndScore(scope, qkv, c_.width, c_.heads);

    // causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
    std::string mask =
        b_.AddBoolBuffer(prefix + ".bias", {1, 1, c_.positions, c_.positions}, Init::CausalMask());
    std::string query_length = b_.DimOf(scope, q, 2);
    std::string key_length = b_.DimOf(scope, k, 3);
    std::string start = b_.Op(scope, "Sub", {key_length, query_length});
    auto as_1d = [&](const std::string& scalar) {
      return b_.Op(scope, "Unsqueeze", {scalar, b_.ConstantInts(scope, {0})});
    };
    std::string key_end = as_1d(key_length);
    mask = b_.Op(
        scope, "Slice",
        {mask, as_1d(start), key_end, b_.ConstantInts(scope, {2}), b_.ConstantInts(scope, {1})});
    mask = b_.Op(scope, "Slice",
                 {mask, b_.ConstantInts(scope, {0}), key_end, b_.ConstantInts(scope, {3}),
                  b_.ConstantInts(scope, {1})});
    std::string lowest = b_.ConstantFloatScalar(scope, std::numeric_limits<float>::lowest());
    scores = b_.Op(scope, "Where", {mask, scores, lowest});

    std::string probs = b_.Op(scope, "Softmax", {scores}, {IntAttr("axis", -1)});
    probs = b_.Dropout(scope + "/attn_dropout", probs, c_.dropout);
    std::string context = b_.Op(scope, "MatMul", {probs, v});
    context = b_.MergeHeads(scope, context, c_.width);

    std::string out = b_.Linear(scope + "/c_proj", prefix + ".c_proj", context, c_.width, c_.width);
    return b_.Dropout(scope + "/resid_dropout", out, c_.dropout);
  }

  ModelBuilder& b_;
  Gpt2Config c_;
};

}  // namespace

void BuildGpt2Small(ModelBuilder& builder) {
  Gpt2Writer(builder, {/*layers=*/12, /*width=*/768, /*heads=*/12}).Write();
}

void BuildGpt2Xl(ModelBuilder& builder) {
  Gpt2Writer(builder, {/*layers=*/48, /*width=*/1600, /*heads=*/25}).Write();
}

}  // namespace memplan::zoo
