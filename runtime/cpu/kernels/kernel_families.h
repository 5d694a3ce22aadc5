#pragma once
// Each kernel family file registers its kernels; kernel_registry.cc calls them all (explicit
// calls instead of static registrars, which a static library would drop at link time).

namespace memplan {

class KernelRegistry;

void RegisterUnaryKernels(KernelRegistry& registry);      // unary.cc: Relu, Gelu, Exp, Cast, ...
void RegisterBinaryKernels(KernelRegistry& registry);     // binary.cc: Add, ..., Pow, Mod, Where
void RegisterMatMulKernels(KernelRegistry& registry);     // matmul.cc: MatMul, Gemm
void RegisterEinsumKernels(KernelRegistry& registry);     // einsum.cc: two-operand Einsum
void RegisterConvKernels(KernelRegistry& registry);       // conv.cc: Conv
void RegisterPoolingKernels(KernelRegistry& registry);    // pooling.cc: MaxPool, AveragePool, ...
void RegisterBatchNormKernels(KernelRegistry& registry);  // batch_norm.cc: BatchNormalization
void RegisterRowNormKernels(KernelRegistry& registry);    // row_norms.cc: LayerNorm, RMSNorm, Skip*
void RegisterGroupNormKernels(KernelRegistry& registry);  // group_norms.cc: GroupNorm, InstanceNorm
void RegisterSoftmaxKernels(KernelRegistry& registry);    // softmax.cc: Softmax, LogSoftmax
void RegisterReductionKernels(KernelRegistry& registry);  // reduction.cc: ReduceMean, ReduceSum
void RegisterGatherKernels(
    KernelRegistry& registry);  // gather.cc: Gather, GatherElements, ScatterND
void RegisterShapeKernels(KernelRegistry& registry);  // shape.cc: Reshape, Transpose, Concat, ...
void RegisterDropoutKernels(
    KernelRegistry& registry);  // dropout.cc: Dropout, Bernoulli, Random*Like
void RegisterMaskingKernels(KernelRegistry& registry);    // masking.cc: Trilu
void RegisterRangeKernels(KernelRegistry& registry);      // range.cc: Range (torch.arange)
void RegisterNonZeroKernels(KernelRegistry& registry);    // non_zero.cc: NonZero (torch.nonzero)
void RegisterLogicKernels(KernelRegistry& registry);      // logic.cc: Equal, Less, ..., Not
void RegisterPaddingKernels(KernelRegistry& registry);    // padding.cc: Pad
void RegisterResizeKernels(KernelRegistry& registry);     // resize.cc: Resize (nearest, linear)
void RegisterRecurrentKernels(KernelRegistry& registry);  // recurrent.cc: LSTM, GRU, RNN
void RegisterSdpaKernels(KernelRegistry& registry);    // sdpa.cc: memplan:ScaledDotProductAttention
void RegisterRotaryKernels(KernelRegistry& registry);  // rotary.cc: RotaryEmbedding
void RegisterGluKernels(KernelRegistry& registry);     // glu.cc: memplan:Glu (F.glu)
void RegisterGatedMlpKernels(KernelRegistry& registry);  // gated_mlp.cc: memplan:SwiGlu, GeGlu
// fused_loss.cc: memplan:FusedLinearCrossEntropy (Liger's fused linear cross entropy)
void RegisterFusedLossKernels(KernelRegistry& registry);

}  // namespace memplan
