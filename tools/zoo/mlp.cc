// mlp: a 784-1024-1024-10 perceptron with ReLU, the zoo's smallest model (MNIST-sized input).
//
//   nn.Sequential-like module with fc1, fc2, fc3 and one shared nn.ReLU:
//   x[batch, 784] -> fc1 -> relu -> fc2 -> relu -> fc3 -> logits[batch, 10]
// Linear layers on rank-2 inputs export as Gemm(x, weight[out, in], bias, transB=1).

#include "tools/zoo/zoo_models.h"

namespace memplan::zoo {

void BuildMlp(ModelBuilder& b) {
  constexpr int64_t kInput = 784, kHidden = 1024, kClasses = 10;
  std::string x = b.AddInput("input", onnx::TensorProto::FLOAT, {"batch", kInput});
  x = b.Gemm("/fc1", "fc1", x, kInput, kHidden);
  x = b.Op("/relu", "Relu", {x});
  x = b.Gemm("/fc2", "fc2", x, kHidden, kHidden);
  x = b.Op("/relu_1", "Relu", {x});
  x = b.Gemm("/fc3", "fc3", x, kHidden, kClasses);
  b.AddOutput(x, onnx::TensorProto::FLOAT, {"batch", kClasses});
}

}  // namespace memplan::zoo
