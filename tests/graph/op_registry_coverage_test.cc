// Every compute op the registry promises is registered, cites its sources, and has the AMP
// category of torch.autocast's CUDA lists (aten/src/ATen/autocast_mode.cpp).

#include <catch2/catch.hpp>

#include "tests/graph/op_registry_test_helpers.h"

namespace memplan {
namespace {

using testing::Schema;

TEST_CASE("every compute op is registered with citations", "[registry]") {
  const char* ops[] = {"Conv",
                       "ConvTranspose",
                       "BatchNormalization",
                       "InstanceNormalization",
                       "LayerNormalization",
                       "GroupNormalization",
                       "Relu",
                       "LeakyRelu",
                       "Sigmoid",
                       "Tanh",
                       "Clip",
                       "HardSigmoid",
                       "HardSwish",
                       "Gelu",
                       "Erf",
                       "Softmax",
                       "LogSoftmax",
                       "MaxPool",
                       "AveragePool",
                       "GlobalAveragePool",
                       "Gemm",
                       "MatMul",
                       "Add",
                       "Sub",
                       "Mul",
                       "Div",
                       "Pow",
                       "Sqrt",
                       "Reciprocal",
                       "Neg",
                       "Exp",
                       "Log",
                       "Cos",
                       "Sin",
                       "ReduceMean",
                       "ReduceSum",
                       "ReduceMax",
                       "ReduceMin",
                       "ReduceL1",
                       "ReduceL2",
                       "ReduceLogSumExp",
                       "ReduceProd",
                       "ReduceSumSquare",
                       "Max",
                       "Min",
                       "Abs",
                       "Softplus",
                       "Mish",
                       "Elu",
                       "Selu",
                       "Celu",
                       "Sign",
                       "Floor",
                       "Ceil",
                       "Round",
                       "And",
                       "Or",
                       "Xor",
                       "IsNaN",
                       "IsInf",
                       "Dropout",
                       "Pad",
                       "Resize",
                       "Einsum",
                       "SoftmaxCrossEntropyLoss"};
  for (const char* op : ops) {
    INFO(op);
    const OpSchema& s = Schema(op);
    CHECK(s.is_known);
    CHECK_FALSE(s.saved_source.empty());
    CHECK_FALSE(s.amp_source.empty());
    // "ai.onnx" is the same default domain.
    CHECK(OpRegistry::Get().Find(op, "ai.onnx") == &s);
  }
  for (const char* op : {"MseLoss", "SumLoss", "MaxDim", "Variance", "Glu"}) {
    INFO(op);
    CHECK(OpRegistry::Get().Find(op, "memplan") != nullptr);
    CHECK(OpRegistry::Get().Find(op) == nullptr);  // not in the default domain
  }
  CHECK(OpRegistry::Get().Find("Gelu", "com.microsoft") != nullptr);
}

TEST_CASE("AMP categories follow torch.autocast's CUDA lists", "[registry]") {
  // lower_precision_fp: conv*, conv_transpose*, mm, matmul, addmm, linear, einsum.
  for (const char* op : {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum"}) {
    INFO(op);
    CHECK(Schema(op).amp == AmpCategory::kFp16Safe);
  }
  // fp32: exp, log, reciprocal, pow, layer_norm, group_norm, mse_loss, nll_loss;
  // fp32_set_opt_dtype: softmax, log_softmax, sum.
  for (const char* op :
       {"Softmax", "LogSoftmax", "LayerNormalization", "GroupNormalization", "ReduceSum", "Exp",
        "Log", "Pow", "Reciprocal", "SoftmaxCrossEntropyLoss"}) {
    INFO(op);
    CHECK(Schema(op).amp == AmpCategory::kFp32Required);
  }
  CHECK(Schema("MseLoss", "memplan").amp == AmpCategory::kFp32Required);
  CHECK(Schema("SumLoss", "memplan").amp == AmpCategory::kFp32Required);
  // Not in any CUDA list: batch_norm, instance_norm, mean, amax, sqrt, activations, pools.
  for (const char* op : {"BatchNormalization", "InstanceNormalization", "ReduceMean", "ReduceMax",
                         "Sqrt", "Relu", "Gelu", "Add", "Mul", "MaxPool", "Dropout", "Pad"}) {
    INFO(op);
    CHECK(Schema(op).amp == AmpCategory::kFollowInputs);
  }
}

TEST_CASE("backward FLOP factors: 2 for contractions", "[registry]") {
  for (const char* op : {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum"}) {
    INFO(op);
    CHECK(Schema(op).backward_flops_factor == 2.0);
  }
  for (const char* op : {"Relu", "Add", "Mul", "Softmax", "LayerNormalization", "MaxPool"}) {
    INFO(op);
    CHECK(Schema(op).backward_flops_factor >= 1.0);
    CHECK(Schema(op).backward_flops_factor <= 2.0);
  }
}

}  // namespace
}  // namespace memplan
