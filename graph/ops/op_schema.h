#pragma once
// One entry per ONNX op type: the single place that knows an op. The importer asks it for output
// shapes (where ONNX inference leaves gaps), the analyzer for FLOPs/bytes, what backward saves and
// the AMP category, the runtime for which inputs get gradients. Nothing else hard-codes op facts.

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/dim.h"
#include "graph/dtype.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

// A view's element strides over its storage, one per dim, as torch keeps them (a Transpose
// permutes them, a broadcasting Expand sets 0). Empty: the dense row-major layout of a fresh
// tensor.
using Strides = std::vector<Dim>;

// What a rule sees of one input or output.
struct TensorInfo {
  bool present = true;  // false for an omitted optional input/output
  DType dtype = DType::kUndefined;
  Shape shape = Shape::Unknown();
  ValueKind kind = ValueKind::kIntermediate;
  std::optional<std::vector<Dim>> contents;         // symbolic contents of small int tensors
  std::optional<std::vector<double>> float_values;  // Value::float_values
  // Its layout when it is a view (empty: dense row-major). Only the derivation knows it (it
  // decides the views); MakeOpContext leaves it empty.
  Strides strides;

  Dim Bytes() const { return TensorBytes(shape.NumElements(), dtype); }
};

// A node's input or output infos, whose indexed reads are bounds-checked: rules read them by
// ONNX position (`inputs[1]` is Gather's indices) and trust the arity the importer checked, but
// ops libonnx does not know (other domains, newer opsets) arrive unchecked, and a hostile node
// may have fewer. A read past the end throws std::out_of_range, which shape propagation turns
// into an error naming the node (graph/shape_propagation.cc) instead of reading past a vector.
class TensorInfoList : public std::vector<TensorInfo> {
 public:
  using std::vector<TensorInfo>::vector;
  TensorInfoList(std::vector<TensorInfo> infos) : std::vector<TensorInfo>(std::move(infos)) {}
  const TensorInfo& operator[](size_t i) const { return at(i); }
  TensorInfo& operator[](size_t i) { return at(i); }
};

struct OpContext {
  const Node& node;
  TensorInfoList inputs;
  TensorInfoList outputs;          // empty while inferring shapes; filled for cost/saved rules
  SymbolTable* symbols = nullptr;  // for fresh symbols in shape rules; null elsewhere

  const Attributes& attrs() const { return node.attributes; }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i].present; }
};

// Builds the context of `node` from the graph's current value infos (outputs included).
OpContext MakeOpContext(const Graph& graph, NodeId node, SymbolTable* symbols = nullptr);

// Returns one TensorInfo per node output (shape, dtype and, for shape arithmetic, contents).
// An error names the node and what is wrong with its inputs/attributes.
using ShapeRule = std::function<Expected<std::vector<TensorInfo>>(const OpContext&)>;

// Forward cost, symbolic in the graph's symbols so it is evaluated per micro-batch.
struct OpCost {
  Dim flops;
  Dim bytes_read;
  Dim bytes_written;
};
using CostRule = std::function<OpCost(const OpContext&)>;

// A tensor that autograd keeps from forward for this op's backward.
struct SavedTensor {
  enum class Source { kInput, kOutput, kExtra };
  Source source = Source::kInput;
  int index = 0;  // the input/output slot for kInput/kOutput
  // kExtra: a buffer forward creates only for backward (BatchNorm mean/invstd, Dropout mask,
  // MaxPool indices). Its dtype and shape are given here.
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;
};
using SavedRule = std::function<std::vector<SavedTensor>(const OpContext&)>;

// A kExtra that is a contiguous copy of input `input`: forward copies the input into it and
// backward reads it in the input's place. torch's matmul reshapes its 3-D+ operands for mm/bmm;
// a reshape that cannot view one copies it, and autograd saves the copy, not the operand.
SavedTensor SaveContiguousCopy(const OpContext& ctx, int input);
// The input a kExtra named by SaveContiguousCopy copies; nullopt for any other extra.
std::optional<int> ContiguousCopyInput(const std::string& saved_name);

// Which inputs receive a gradient (true per input slot). Integer inputs never do.
using GradientRule = std::function<std::vector<bool>(const OpContext&)>;

// Extra bytes backward needs while it runs (beyond input-gradients), e.g. a conv workspace.
using WorkspaceRule = std::function<Dim(const OpContext&)>;

// torch.autocast-style category of an op under mixed precision.
enum class AmpCategory {
  kFp16Safe,      // runs in fp16/bf16 (MatMul, Gemm, Conv...)
  kFp32Required,  // needs fp32 (Softmax, norms' statistics, Exp/Log, reductions, losses)
  kFollowInputs,  // runs in the widest dtype of its inputs
};

struct OpSchema {
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  ShapeRule infer_shapes;
  CostRule cost;                     // default: flops = output elements, bytes = inputs + outputs
  SavedRule saved_for_backward;      // default: nothing saved
  GradientRule gradient_inputs;      // default: every present floating input
  WorkspaceRule backward_workspace;  // default: 0
  // Extra bytes forward needs while it runs beyond its outputs and saved tensors, freed at the
  // forward step's End (the chunked logits tile of a fused linear cross entropy). Default: 0.
  WorkspaceRule forward_workspace;
  // Input gradients forward already computed and saved: {input slot, name of a kExtra saved
  // tensor}. Backward returns that saved tensor as the slot's gradient instead of allocating one
  // (Liger's fused linear cross entropy computes grad_input and grad_weight in forward; its
  // backward only scales them in place). Empty for every op whose backward computes gradients.
  std::vector<std::pair<int, std::string>> gradients_from_saved;
  double backward_flops_factor = 1.0;  // backward FLOPs as a multiple of forward FLOPs
  AmpCategory amp = AmpCategory::kFollowInputs;
  // True when every output is a view of input 0's storage (Reshape, Squeeze, Split...):
  // the simulator allocates nothing for it and keeps input 0's storage alive while the view lives
  // (a saved chunk of torch.split keeps its whole input alive).
  bool is_view = false;
  // For a view: each output views only part of input 0 (Split: torch.split / chunk). The
  // input's gradient is then a new tensor (split_backward writes the output gradients into it),
  // not a view of an output's gradient as a Reshape's is.
  bool view_is_partial = false;
  // For a view: whether this node is one. Null = always. Gather with a scalar index is torch's
  // select (a view, ViT's class token x[:, 0]); with an index tensor it is a gather (a copy).
  std::function<bool(const OpContext&)> view_applies;
  // For a view: each output's strides given input 0's (spelled out, never empty), or nullopt
  // when torch cannot view it and copies instead: a reshape whose strides computeStride refuses
  // (a Reshape or Flatten of a Transpose, a broadcasting Expand or an inner-axis Slice, as HF's
  // repeat_kv and nn.MultiheadAttention's packed q, k, v are). Null = the outputs keep input 0's
  // strides (Identity). Rules in graph/ops/view_layout.h.
  std::function<std::optional<std::vector<Strides>>(const OpContext&, const Strides& input)>
      view_strides;
  // The layout a node's outputs are created in, for ops that do not write them dense row-major
  // (null: all row-major). Each entry spelled out; an empty one is row-major. Flash and
  // memory-efficient attention write [B, S, H, D] and return it transposed to [B, H, S, D], so the
  // Transpose back and the Reshape after it are views (HF's attn_output.transpose(1, 2).reshape).
  std::function<std::vector<Strides>(const OpContext&)> output_strides;
  // True for an elementwise op torch tags pointwise (torch.Tag.pointwise: add, mul, gelu, where,
  // _to_copy, ...): under torch.compile AOTAutograd's min-cut partitioner may recompute it in
  // backward, fused into the backward kernel that reads it, instead of saving its output
  // (torch/_functorch/partitioners.py get_default_op_list: pointwise_ops() are recomputable and
  // fusible; mm, convolution, the norms' and softmax's kernels and random ops are not).
  bool pointwise = false;
  // What backward reads once Inductor has decomposed it, where that is smaller than
  // saved_for_backward: kExtra tensors computed from the eager saved tensors (ReLU's
  // threshold_backward(grad, result, 0) becomes where(result <= 0, 0, grad), which needs only a
  // bool mask). The partitioner keeps them instead when that is the cheaper cut
  // (analyzer/derivation/compiled_partition.h). Null: backward reads the eager saved tensors.
  SavedRule saved_when_compiled;
  // True when training draws random numbers (Dropout, the fused attention's dropout): the
  // executor seeds it per node and micro-batch, and verify can run it as the identity.
  bool stochastic = false;
  // True when training normalises over the batch (BatchNormalization): k micro-batches of m then
  // differ from one batch of k*m, so gradient accumulation is not exactly one large batch.
  bool couples_batch = false;
  // True for a conversion to a dtype the node names (Cast's `to`: torch's .to(dtype)). Its output
  // has that dtype whatever a mixed-precision regime computes in, and a conversion to the dtype
  // its input already has returns the input itself (torch's .to returns self): a view.
  bool converts_dtype = false;
  // True when the output depends on input 0's shape only, never its values (Shape, Size): it is
  // a constant of the symbols even when input 0 is computed at run time.
  bool reads_only_shape = false;
  // How the value of a node computed from constants alone is found before any step runs:
  // kComputed (every op but three) folds it with the op's own kernel; Constant holds it in an
  // attribute (kLiteral: torch's literal, no tensor of the program), ConstantOfShape fills the
  // shape its input holds (kFilledShape), Range is an arithmetic sequence (kSequence).
  // runtime/constant_values.h evaluates the three on the host.
  enum class HostValue { kComputed, kLiteral, kFilledShape, kSequence };
  HostValue host_value = HostValue::kComputed;
  // True for a normalisation into a distribution over the attribute `axis` (Softmax,
  // LogSoftmax): a loss reading it takes that axis as its classes.
  bool normalises_over_axis = false;
  // True when output axis i is input axis perm[i] (Transpose; `perm` reversed when absent).
  bool permutes_axes = false;
  // The input slot whose integer values index the rows of input 0 (Gather's indices, as torch's
  // embedding looks up token ids); -1 for none.
  int row_index_input = -1;
  // The input slots that hold a layer's trained weights when they are initializers (Conv's W and
  // B, MatMul's B, a norm's scale and shift). Constant-producing exporters (paddle2onnx,
  // tf2onnx) write them as Constant nodes; the importer turns a Constant read only through these
  // slots into a parameter (graph/constant_weights.h).
  std::vector<int> weight_inputs;
  // The input slots torch takes as Python numbers, not tensors (Dropout's ratio and
  // training_mode: F.dropout(x, p: float, training: bool)). An exporter may still write them as
  // one-element tensors (the dynamo exporter lifts them into initializers); no precision
  // placement casts them and they never decide a node's dtype: they are read as stored.
  std::vector<int> scalar_argument_inputs;
  // True for a layer that maps its input linearly by a weight (Conv, ConvTranspose, MatMul, Gemm):
  // a constant vector added to its output is that layer's bias (paddle's conv2d + elementwise_add,
  // TensorFlow's MatMul + BiasAdd).
  bool is_linear_layer = false;
  // The input slot of a bias added per output channel (axis 1 of the output: Conv's and
  // ConvTranspose's B); -1 for none. A batch norm reading the output subtracts the per-channel
  // batch mean, which cancels that bias.
  int channel_bias_input = -1;
  // True when the output is an elementwise sum or difference of the inputs (Add, Sub): a table
  // read only this way is added to the activations (a positional table), never multiplied.
  bool adds_inputs = false;
  // Where the saved-for-backward and AMP facts come from (PyTorch derivatives.yaml, autocast
  // lists); SetSaved and SetAmp set each with its fact.
  std::string saved_source;
  std::string amp_source;
  bool is_known = true;  // false only for the conservative entry used for unknown ops
  // The fewest inputs (by position) a node of this op may have. The importer checks arity
  // against libonnx's schema, which this build's ONNX lacks for newer opsets' ops and for other
  // domains' (RotaryEmbedding, RMSNormalization, ORT's contrib ops): those state it here.
  // 0 = no declared minimum.
  size_t min_inputs = 0;

  // A fact and the citation that justifies it are set together, so no schema states one without
  // the other. SetSaved: saved_for_backward with saved_source, the derivatives.yaml formula it
  // follows (DerivativesSource); a null rule saves nothing.
  void SetSaved(std::string source, SavedRule rule = nullptr) {
    saved_source = std::move(source);
    saved_for_backward = std::move(rule);
  }
  // SetAmp: amp with amp_source, the autocast list that puts the op in that category
  // (AutocastSource).
  void SetAmp(AmpCategory category, std::string source) {
    amp = category;
    amp_source = std::move(source);
  }

  // Whether input `slot` is one of scalar_argument_inputs.
  bool IsScalarArgument(size_t slot) const {
    return std::find(scalar_argument_inputs.begin(), scalar_argument_inputs.end(),
                     static_cast<int>(slot)) != scalar_argument_inputs.end();
  }

  // Whether this node's outputs are views of input 0 (is_view, where view_applies allows).
  bool IsViewFor(const OpContext& ctx) const {
    return is_view && (!view_applies || view_applies(ctx));
  }
};

}  // namespace memplan
