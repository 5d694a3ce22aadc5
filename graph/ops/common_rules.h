#pragma once
// Small pieces shared by the compute-op families (elementwise, matmul, conv, norms, pools,
// reductions, resampling, losses): building SavedTensor entries, "does this input require a
// gradient", I/O-byte costs, and reading constant integer inputs.
//
// FLOP conventions used by every family (a multiply-add counts as 2 FLOPs):
//   * MatMul/Gemm: 2*M*N*K per batch (+ M*N for Gemm's bias); Einsum: 2 * product of all index
//     sizes for two or more operands, the product for one;
//   * Conv: 2*N*Cout*prod(out spatial)*(Cin/groups)*prod(kernel) (+ N*Cout*prod(out) for bias);
//     ConvTranspose: 2*N*Cin*prod(in spatial)*(Cout/groups)*prod(kernel) (+ bias);
//   * elementwise: the per-element costs below, per output element;
//   * normalisations: kNormalizationFlopsPerElement per input element; softmax-like ops
//     kSoftmaxFlopsPerElement;
//   * pools: kernel size per output element; reductions: 1 per input element.
// Bytes read/written are the sizes of the present inputs/outputs whose shapes are known.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/ops/op_schema.h"

namespace memplan {

// Per-element FLOP estimates. Arithmetic (add, mul, compare, clamp, sqrt as one instruction) is 1;
// transcendental functions (exp, log, erf, tanh, sigmoid) are polynomial/range-reduction
// sequences, counted as kTranscendentalFlops; exact Gelu = x * 0.5 * (1 + erf(x/sqrt 2)).
inline constexpr int64_t kSimpleFlops = 1;
inline constexpr int64_t kTranscendentalFlops = 4;
inline constexpr int64_t kGeluFlops = kTranscendentalFlops + 4;
inline constexpr int64_t kHardActivationFlops = 3;       // HardSigmoid: mul, add, clamp
inline constexpr int64_t kSoftmaxFlopsPerElement = 5;    // max, sub, exp(~), sum, div
inline constexpr int64_t kBatchNormFlopsPerElement = 5;  // sum, sum of squares, normalise, affine
inline constexpr int64_t kNormalizationFlopsPerElement = 8;  // two-pass stats + normalise + affine

// Backward FLOPs as a multiple of forward: a GEMM-like op needs one GEMM per input gradient.
inline constexpr double kContractionBackwardFactor = 2.0;
inline constexpr double kElementwiseBackwardFactor = 1.0;
inline constexpr double kTwoGradientElementwiseBackwardFactor = 2.0;
inline constexpr double kNormalizationBackwardFactor = 2.0;

// Where the saved-for-backward facts come from (verified against these files and, for torch
// 1.13, by reading grad_fn._saved_* attributes; see docs/saved_for_backward.md).
inline constexpr const char* kDerivativesYaml = "pytorch tools/autograd/derivatives.yaml";
// The AMP categories: torch.autocast's CUDA op lists.
inline constexpr const char* kAutocastLists =
    "pytorch aten/src/ATen/autocast_mode.cpp TORCH_LIBRARY_IMPL(aten, AutocastCUDA)";
// An OpSchema's saved_source / amp_source: the file above, then what it says about the op.
std::string DerivativesSource(std::string_view what);
std::string AutocastSource(std::string_view what);
// What AutocastSource says of an op on none of its lists (AmpCategory::kFollowInputs).
inline constexpr const char* kNotAutocastListed = "not listed, runs in its input's dtype";
inline constexpr const char* kNotAutocastListedForCuda =
    "not listed for CUDA, runs in its input's dtype";

// Pools, Pad and Resize: each output element reads a small window of input 0 (a pool's window,
// the element a pad copies, the taps an interpolation weighs), so backward scatters the output
// gradient back elementwise (kElementwiseBackwardFactor), and they run in their input's dtype (on
// autocast's CPU lists, none of its CUDA ones). They differ in shape, cost, what backward keeps
// (`saved_rule`, what derivatives.yaml says; kept by `saved`, null: nothing) and which inputs
// receive a gradient (null: the default).
OpSchema WindowedSchema(const char* op_type, ShapeRule infer_shapes, CostRule cost,
                        const char* saved_rule, SavedRule saved = nullptr,
                        GradientRule gradient_inputs = nullptr);

SavedTensor SaveInput(int index);
SavedTensor SaveOutput(int index);
// A buffer forward allocates only for backward (statistics, masks, indices).
SavedTensor SaveExtra(std::string name, DType dtype, Shape shape);

// Whether autograd would track a gradient for this tensor: a present floating parameter or
// activation. Graph inputs (images, labels) and constants never require grad in PyTorch; an
// activation computed only from inputs is assumed to (the analyzer may know better).
bool RequiresGrad(const TensorInfo& tensor);
bool InputRequiresGrad(const OpContext& ctx, size_t input);

// A saved-for-backward rule that keeps the same tensors whatever the node (convolution's input
// and weight, a pool's input); SaveNothing keeps none.
SavedRule AlwaysSave(std::vector<SavedTensor> saved);
SavedRule SaveNothing();
// Input 0, then each of the optional inputs `optional` the node has (a norm's scale and bias, a
// loss's label).
std::vector<SavedTensor> SaveInput0AndPresent(const OpContext& ctx,
                                              std::initializer_list<int> optional);

// Autograd records no node (so saves nothing) for an op none of whose inputs requires grad.
SavedRule WhenDifferentiable(SavedRule rule);

// A gradient_inputs rule: the inputs at `slots` receive a gradient when they require one; the
// others (attention masks, position ids) never do.
GradientRule GradientsAtSlots(std::vector<size_t> slots);
// A gradient_inputs rule for ops differentiable only in their data input: input 0 receives a
// gradient whenever it is a present floating tensor, whatever its kind; the others (labels,
// axes, sizes, scales) never do. Losses, reductions and resampling ops share it.
GradientRule GradientOnlyForFloatingInput0();
// A gradient_inputs rule for ops trained in a prefix of their inputs (a norm's data, scale and
// bias): each present floating, non-constant input at slot <= `last_slot` receives a gradient; the
// later ones (BatchNorm's running statistics) never do.
GradientRule GradientsForFloatingInputsThrough(size_t last_slot);

// The dtype PyTorch's CUDA kernels use for normalisation statistics (mean, invstd/rstd): the
// accumulate type, float32 for fp16/bf16/fp32 inputs and float64 for float64 ones.
DType StatisticsDType(DType input);

// Cost with the given FLOPs and the bytes of every present, shaped input and output.
OpCost IoCost(const OpContext& ctx, Dim flops);
// FLOPs = flops_per_element * elements of output 0 (0 when its shape is unknown).
OpCost PerOutputElementCost(const OpContext& ctx, int64_t flops_per_element);
// FLOPs = flops_per_element * elements of input `input` (0 when its shape is unknown).
OpCost PerInputElementCost(const OpContext& ctx, int64_t flops_per_element, size_t input = 0);

// The same as cost rules, for ops whose per-element FLOPs are fixed at registration.
CostRule PerOutputElementCostRule(int64_t flops_per_element);
CostRule PerInputElementCostRule(int64_t flops_per_element);

// The values of a small integer tensor whose contents fold to constants; nullopt otherwise.
std::optional<std::vector<int64_t>> ConstantInts(const TensorInfo& tensor);

// One TensorInfo per node output; omitted optional outputs are marked not present.
std::vector<TensorInfo> EmptyOutputs(const OpContext& ctx);

// Input `index`, or an error naming the node when it is missing.
Expected<const TensorInfo*> RequiredInput(const OpContext& ctx, size_t index);

// The query, key and value inputs (slots 0, 1, 2) of an attention op, all of one rank, 3 or 4.
struct QkvInputs {
  const TensorInfo* q = nullptr;
  const TensorInfo* k = nullptr;
  const TensorInfo* v = nullptr;
  size_t rank = 0;
};

// Reads QkvInputs for ai.onnx Attention and memplan's fused SDPA alike: nullopt when a shape is
// unknown; an error when an input is missing or they are not all 3D or all 4D. `names` is how the
// op's spec calls the three ("Q, K and V"), for the error.
Expected<std::optional<QkvInputs>> ReadQkvInputs(const OpContext& ctx, const std::string& names);

// EmptyOutputs with output 0 in input 0's dtype and its shape left for the rule to fill; an error
// naming the node when input 0 is missing. Pad, Resize, reductions and pools start from it.
Expected<std::vector<TensorInfo>> OutputInInput0DType(const OpContext& ctx);
// The same with output 0 also of input 0's shape, for the ops that keep their input's shape (unary
// elementwise ops, softmax, norms, dropout); later outputs are left to the op's own rule.
Expected<std::vector<TensorInfo>> OutputLikeInput0(const OpContext& ctx);

// A fresh symbol for a dim no rule can express (e.g. a strided window over a symbolic size);
// nullopt when the context has no symbol table (cost/saved rules never need one).
std::optional<Dim> FreshDim(const OpContext& ctx, const char* prefix);

}  // namespace memplan
