#pragma once
// Each family file registers its ops; op_registry.cc calls them all (explicit calls instead of
// static registrars, which a static library would drop at link time).

namespace memplan {

class OpRegistry;

void RegisterShapeOps(OpRegistry& registry);        // shape_ops.cc: Shape, Constant, Reshape, ...
void RegisterElementwiseOps(OpRegistry& registry);  // elementwise_ops.cc: Add, Relu, Gelu, ...
void RegisterMatMulOps(OpRegistry& registry);       // matmul_ops.cc: MatMul, Gemm, Einsum
void RegisterConvOps(OpRegistry& registry);         // conv_ops.cc: Conv, ConvTranspose
void RegisterNormalizationOps(OpRegistry& registry);  // normalization_ops.cc
void RegisterPoolingOps(OpRegistry& registry);      // pooling_ops.cc
void RegisterReductionOps(OpRegistry& registry);    // reduction_ops.cc: Reduce*, Softmax, ...
void RegisterResamplingOps(OpRegistry& registry);   // resampling_ops.cc: Pad, Resize
void RegisterLossOps(OpRegistry& registry);  // loss_ops.cc: SoftmaxCrossEntropyLoss, memplan losses

}  // namespace memplan
