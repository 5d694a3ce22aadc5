// resnet18 / resnet50: torchvision's ResNet (v1.5: the stride sits on the 3x3 conv of a
// bottleneck), 224x224 RGB input, 1000 classes.
//
//   conv1 7x7/2 -> bn1 -> relu -> maxpool 3x3/2 -> layer1..layer4 -> avgpool -> flatten -> fc
//   BasicBlock (resnet18):  conv3x3 -> bn -> relu -> conv3x3 -> bn -> (+ identity) -> relu
//   Bottleneck (resnet50):  conv1x1 -> bn -> relu -> conv3x3 -> bn -> relu -> conv1x1 -> bn
//                           -> (+ identity) -> relu, expansion 4
//   A block's identity is downsample.0 (conv1x1, stride) + downsample.1 (bn) when the stride or
//   the width changes.
//
// BatchNormalization is written in training mode (training_mode=1) as a training export does.
// Its running_mean / running_var are float initializers but buffers, not parameters: they are
// named "<module>.running_mean" / "<module>.running_var" and only ever appear as inputs 3 and 4
// of a BatchNormalization node.

#include <array>

#include "tools/zoo/zoo_models.h"

namespace memplan::zoo {
namespace {

// torchvision's BatchNorm2d defaults.
constexpr float kBatchNormEpsilon = 1e-5f;
constexpr float kBatchNormMomentum = 0.1f;  // ONNX momentum = 1 - PyTorch momentum

struct ResNetConfig {
  bool bottleneck;
  std::array<int, 4> blocks_per_stage;
};

class ResNetWriter {
 public:
  explicit ResNetWriter(ModelBuilder& builder) : b_(builder) {}

  void Write(const ResNetConfig& config) {
    constexpr int64_t kClasses = 1000;
    std::string x = b_.AddInput("input", onnx::TensorProto::FLOAT, {"batch", 3, 224, 224});
    x = Conv("/conv1", "conv1", x, 3, 64, /*kernel=*/7, /*stride=*/2);
    x = BatchNorm("/bn1", "bn1", x, 64);
    x = b_.Op("/relu", "Relu", {x});
    x = b_.Op("/maxpool", "MaxPool", {x},
              {IntsAttr("kernel_shape", {3, 3}), IntsAttr("pads", {1, 1, 1, 1}),
               IntsAttr("strides", {2, 2}), IntAttr("ceil_mode", 0)});

    const int64_t expansion = config.bottleneck ? 4 : 1;
    int64_t in_channels = 64;
    for (int stage = 0; stage < 4; ++stage) {
      const int64_t width = int64_t{64} << stage;
      const std::string layer = "layer" + std::to_string(stage + 1);
      for (int block = 0; block < config.blocks_per_stage[static_cast<size_t>(stage)]; ++block) {
        const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
        const std::string prefix = layer + "." + std::to_string(block);
        const std::string scope = "/" + layer + "/" + prefix;
        x = config.bottleneck ? Bottleneck(scope, prefix, x, in_channels, width, stride)
                              : BasicBlock(scope, prefix, x, in_channels, width, stride);
        in_channels = width * expansion;
      }
    }

    x = b_.Op("/avgpool", "GlobalAveragePool", {x});
    x = b_.Op("", "Flatten", {x}, {IntAttr("axis", 1)});
    x = b_.Gemm("/fc", "fc", x, in_channels, kClasses);
    b_.AddOutput(x, onnx::TensorProto::FLOAT, {"batch", kClasses});
  }

 private:
  // nn.Conv2d(bias=False) with padding kernel/2, as every torchvision ResNet conv.
  std::string Conv(const std::string& scope, const std::string& prefix, const std::string& x,
                   int64_t in, int64_t out, int64_t kernel, int64_t stride) {
    std::string weight = b_.AddParameter(prefix + ".weight", {out, in, kernel, kernel},
                                         Init::UniformFanIn(in * kernel * kernel));
    const int64_t pad = kernel / 2;
    return b_.Op(scope, "Conv", {x, weight},
                 {IntsAttr("dilations", {1, 1}), IntAttr("group", 1),
                  IntsAttr("kernel_shape", {kernel, kernel}),
                  IntsAttr("pads", {pad, pad, pad, pad}), IntsAttr("strides", {stride, stride})});
  }

  std::string BatchNorm(const std::string& scope, const std::string& prefix, const std::string& x,
                        int64_t channels) {
    std::string scale = b_.AddParameter(prefix + ".weight", {channels}, Init::Ones());
    std::string bias = b_.AddParameter(prefix + ".bias", {channels}, Init::Zeros());
    std::string mean = b_.AddFloatBuffer(prefix + ".running_mean", {channels}, Init::Zeros());
    std::string var = b_.AddFloatBuffer(prefix + ".running_var", {channels}, Init::Ones());
    // Training mode has three outputs: Y and the updated running mean / variance (unused by the
    // graph, exactly as a training export leaves them).
    return b_
        .AddNode(scope, "BatchNormalization", {x, scale, bias, mean, var}, /*num_outputs=*/3,
                 {FloatAttr("epsilon", kBatchNormEpsilon),
                  FloatAttr("momentum", 1.0f - kBatchNormMomentum), IntAttr("training_mode", 1)})
        .front();
  }

  // conv -> bn pairs are torchvision's conv<k> / bn<k>.
  std::string ConvBn(const std::string& scope, const std::string& prefix, int k,
                     const std::string& x, int64_t in, int64_t out, int64_t kernel,
                     int64_t stride) {
    const std::string index = std::to_string(k);
    std::string y =
        Conv(scope + "/conv" + index, prefix + ".conv" + index, x, in, out, kernel, stride);
    return BatchNorm(scope + "/bn" + index, prefix + ".bn" + index, y, out);
  }

  std::string Identity(const std::string& scope, const std::string& prefix, const std::string& x,
                       int64_t in, int64_t out, int64_t stride) {
    if (stride == 1 && in == out) return x;
    std::string y = Conv(scope + "/downsample/downsample.0", prefix + ".downsample.0", x, in, out,
                         /*kernel=*/1, stride);
    return BatchNorm(scope + "/downsample/downsample.1", prefix + ".downsample.1", y, out);
  }

  std::string BasicBlock(const std::string& scope, const std::string& prefix, const std::string& x,
                         int64_t in, int64_t width, int64_t stride) {
    std::string y = ConvBn(scope, prefix, 1, x, in, width, 3, stride);
    y = b_.Op(scope + "/relu", "Relu", {y});
    y = ConvBn(scope, prefix, 2, y, width, width, 3, 1);
    std::string identity = Identity(scope, prefix, x, in, width, stride);
    y = b_.Op(scope, "Add", {y, identity});
    return b_.Op(scope + "/relu_1", "Relu", {y});
  }

  std::string Bottleneck(const std::string& scope, const std::string& prefix, const std::string& x,
                         int64_t in, int64_t width, int64_t stride) {
    const int64_t out = width * 4;
    std::string y = ConvBn(scope, prefix, 1, x, in, width, 1, 1);
    y = b_.Op(scope + "/relu", "Relu", {y});
    y = ConvBn(scope, prefix, 2, y, width, width, 3, stride);
    y = b_.Op(scope + "/relu_1", "Relu", {y});
    y = ConvBn(scope, prefix, 3, y, width, out, 1, 1);
    std::string identity = Identity(scope, prefix, x, in, out, stride);
    y = b_.Op(scope, "Add", {y, identity});
    return b_.Op(scope + "/relu_2", "Relu", {y});
  }

  ModelBuilder& b_;
};

}  // namespace

void BuildResNet18(ModelBuilder& builder) {
  ResNetWriter(builder).Write({/*bottleneck=*/false, {2, 2, 2, 2}});
}

void BuildResNet50(ModelBuilder& builder) {
  ResNetWriter(builder).Write({/*bottleneck=*/true, {3, 4, 6, 3}});
}

}  // namespace memplan::zoo
