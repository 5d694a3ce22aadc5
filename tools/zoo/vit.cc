// vit_b16: torchvision vit_b_16 (224x224 input, 16x16 patches, 12 layers, width 768, 12 heads,
// MLP 3072, 1000 classes), input[batch, 3, 224, 224] -> logits[batch, 1000].
//
//   conv_proj (16x16/16) -> reshape [batch, 768, 196] -> permute [batch, 196, 768]
//   -> concat(class_token expanded to the batch, patches) -> + encoder.pos_embedding [1, 197, 768]
//   -> encoder_layer_0 .. 11 -> encoder.ln -> [:, 0] -> heads.head
//   encoder_layer_i:  x + self_attention(ln_1(x)),  then  x + mlp(ln_2(x))
//   mlp:              mlp.0 (Linear) -> mlp.1 (GELU) -> mlp.3 (Linear)
//
// vit_b_16's dropout and attention_dropout are 0.0, so the exporter's Dropout nodes would be
// no-ops that save nothing; the zoo leaves them out. nn.MultiheadAttention's packed in_proj
// weight is written [in, 3 * width] for one MatMul, then Split into q, k, v.

#include <cmath>

#include "tools/zoo/zoo_models.h"

namespace memplan::zoo {
namespace {

struct VitConfig {
  int64_t image = 224;
  int64_t patch = 16;
  int64_t layers = 12;
  int64_t width = 768;
  int64_t heads = 12;
  int64_t mlp = 3072;
  int64_t classes = 1000;
  float layer_norm_epsilon = 1e-6f;
};

class VitWriter {
 public:
  VitWriter(ModelBuilder& builder, const VitConfig& config) : b_(builder), c_(config) {}

  void Write() {
    const int64_t grid = c_.image / c_.patch;
    const int64_t patches = grid * grid;
    std::string image =
        b_.AddInput("input", onnx::TensorProto::FLOAT, {"batch", 3, c_.image, c_.image});

    std::string weight = b_.AddParameter("conv_proj.weight", {c_.width, 3, c_.patch, c_.patch},
                                         Init::UniformFanIn(3 * c_.patch * c_.patch));
    std::string bias =
        b_.AddParameter("conv_proj.bias", {c_.width}, Init::UniformFanIn(3 * c_.patch * c_.patch));
    std::string x =
        b_.Op("/conv_proj", "Conv", {image, weight, bias},
              {IntsAttr("dilations", {1, 1}), IntAttr("group", 1),
               IntsAttr("kernel_shape", {c_.patch, c_.patch}), IntsAttr("pads", {0, 0, 0, 0}),
               IntsAttr("strides", {c_.patch, c_.patch})});
    // _process_input: x.reshape(n, hidden_dim, n_h * n_w).permute(0, 2, 1)
    std::string n = b_.DimOf("", image, 0);
    x = b_.Op("", "Reshape", {x, b_.ShapeTarget("", {n, c_.width, patches})});
    x = b_.Op("", "Transpose", {x}, {IntsAttr("perm", {0, 2, 1})});

    // class_token.expand(n, -1, -1), then cat along the sequence.
    std::string class_token = b_.AddParameter("class_token", {1, 1, c_.width}, Init::Zeros());
    std::string expanded =
        b_.Op("", "Expand", {class_token, b_.ShapeTarget("", {n, int64_t{1}, int64_t{1}})});
    x = b_.Op("", "Concat", {expanded, x}, {IntAttr("axis", 1)});

    std::string pos =
        b_.AddParameter("encoder.pos_embedding", {1, patches + 1, c_.width}, Init::UniformFanIn(1));
    x = b_.Op("/encoder", "Add", {x, pos});
    for (int64_t i = 0; i < c_.layers; ++i) x = EncoderBlock(i, x);
    x = b_.LayerNorm("/encoder/ln", "encoder.ln", x, c_.width, c_.layer_norm_epsilon);

    x = b_.Op("", "Gather", {x, b_.ConstantIntScalar("", 0)}, {IntAttr("axis", 1)});
    x = b_.Gemm("/heads/head", "heads.head", x, c_.width, c_.classes);
    b_.AddOutput(x, onnx::TensorProto::FLOAT, {"batch", c_.classes});
  }

 private:
  std::string SelfAttention(const std::string& scope, const std::string& prefix,
                            const std::string& x) {
    std::string in_weight = b_.AddParameter(prefix + ".in_proj_weight", {c_.width, 3 * c_.width},
                                            Init::UniformFanIn(c_.width));
    std::string in_bias = b_.AddParameter(prefix + ".in_proj_bias", {3 * c_.width}, Init::Zeros());
    std::string qkv = b_.Op(scope, "MatMul", {x, in_weight});
    qkv = b_.Op(scope, "Add", {qkv, in_bias});
    auto [q, k, v, scores] = b_.SplitFusedQkvAndScore(scope, qkv, c_.width, c_.heads);
    std::string probs = b_.Op(scope, "Softmax", {scores}, {IntAttr("axis", -1)});
    std::string context = b_.Op(scope, "MatMul", {probs, v});
    context = b_.MergeHeads(scope, context, c_.width);
    return b_.Linear(scope + "/out_proj", prefix + ".out_proj", context, c_.width, c_.width);
  }

  std::string EncoderBlock(int64_t i, const std::string& x) {
    const std::string name = "encoder_layer_" + std::to_string(i);
    const std::string prefix = "encoder.layers." + name;
    const std::string scope = "/encoder/layers/" + name;
    auto attention = [&](const std::string& h) {
      return SelfAttention(scope + "/self_attention", prefix + ".self_attention", h);
    };
    auto mlp = [&](std::string h) {
      h = b_.Linear(scope + "/mlp/mlp.0", prefix + ".mlp.0", h, c_.width, c_.mlp);
      h = b_.GeluErf(scope + "/mlp/mlp.1", h);
      return b_.Linear(scope + "/mlp/mlp.3", prefix + ".mlp.3", h, c_.mlp, c_.width);
    };
    return b_.PreNormBlock(scope, prefix, x, c_.width, c_.layer_norm_epsilon, attention, mlp);
  }

  ModelBuilder& b_;
  VitConfig c_;
};

}  // namespace

void BuildVitB16(ModelBuilder& builder) { VitWriter(builder, VitConfig{}).Write(); }

}  // namespace memplan::zoo
