#pragma once
// Each family file registers its ops; op_registry.cc calls them all (explicit calls instead of
// static registrars, which a static library would drop at link time).

#include <cstdint>

namespace memplan {

class OpRegistry;
struct OpContext;

void RegisterShapeOps(OpRegistry& registry);          // shape_ops.cc: Shape, Constant, Reshape, ...
void RegisterElementwiseOps(OpRegistry& registry);    // elementwise_ops.cc: Add, Relu, Gelu, ...
void RegisterMatMulOps(OpRegistry& registry);         // matmul_ops.cc: MatMul, Gemm, Einsum
void RegisterRecurrentOps(OpRegistry& registry);      // recurrent_ops.cc: LSTM, GRU, RNN
void RegisterConvOps(OpRegistry& registry);           // conv_ops.cc: Conv, ConvTranspose
void RegisterNormalizationOps(OpRegistry& registry);  // normalization_ops.cc
void RegisterPoolingOps(OpRegistry& registry);        // pooling_ops.cc
void RegisterReductionOps(OpRegistry& registry);      // reduction_ops.cc: Reduce*, Softmax, ...
void RegisterResamplingOps(OpRegistry& registry);     // resampling_ops.cc: Pad, Resize
void RegisterLossOps(OpRegistry& registry);  // loss_ops.cc: SoftmaxCrossEntropyLoss, memplan losses
void RegisterMaskingOps(OpRegistry& registry);      // masking_ops.cc: Mod, Trilu, Bernoulli
void RegisterGeluVariantOps(OpRegistry& registry);  // gelu_variants_ops.cc: FastGelu, BiasGelu
void RegisterRmsNormOps(OpRegistry& registry);      // rms_norm_ops.cc: RMSNormalization, Skip*Norm
void RegisterAttentionOps(OpRegistry& registry);    // attention_ops.cc: Attention, RotaryEmbedding
void RegisterSdpaOps(OpRegistry& registry);       // sdpa_ops.cc: memplan:ScaledDotProductAttention
void RegisterFusedLossOps(OpRegistry& registry);  // fused_loss_ops.cc: memplan:FusedLinear...

// FLOPs per element of ai.onnx Gelu: its `approximate` attribute picks erf or tanh
// (gelu_variants_ops.cc, beside the com.microsoft forms).
int64_t GeluFlopsPerElement(const OpContext& ctx);

}  // namespace memplan
