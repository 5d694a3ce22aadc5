#pragma once
// Import fusions: exporters write one PyTorch op as several ONNX nodes when the model's opset has
// no op for it, and memplan would then charge saved-for-backward bytes node by node, where
// autograd keeps what the fused op's backward needs (docs/saved_for_backward.md, "Fusions at
// import"). The importer (graph/onnx_import.cc) walks this table once, in order, on the
// onnx::ModelProto before it becomes a Graph; each entry rewrites every exact occurrence of its
// pattern into one node of an op the registry (graph/ops) knows:
//
//   entry            exported as                                        fused into
//   layer_norm       ReduceMean, Sub, Pow(2), ReduceMean, Add(eps), Sqrt,  LayerNormalization
//                    Div, Mul(gamma) [, Add(beta)]  (below opset 17)
//   rms_norm         Pow(2) | Mul(x,x), ReduceMean, Add(eps), Sqrt,       RMSNormalization
//                    Reciprocal | Div(1,.), Mul(x,.) | Div(x,.), Mul(w)    (opset 23)   [formulas]
//   group_norm       Reshape(x, [0,G,-1]), InstanceNormalization(ones,    GroupNormalization
//                    zeros), Reshape(Shape(x)), Mul(Unsqueeze(w)),        (per-channel w, b)
//                    Add(Unsqueeze(b))  (nn.GroupNorm below opset 18)
//   erf_gelu         Div(sqrt2), Erf, Add(1), Mul(x), Mul(0.5)            com.microsoft Gelu
//                    (or Mul(0.5) on 1 + erf first: the dynamo exporter)
//   erf_gelu_formula the same with Mul(x, 0.5) first, as ESM's gelu        com.microsoft Gelu
//                                                                               [formulas]
//   tanh_gelu        Mul(x,x), Mul(x,.), Mul(0.044715), Add(x), Mul(sqrt(2/pi)), Tanh,
//                    Add(1), Mul(x), Mul(0.5)  (F.gelu(approximate="tanh"))  Gelu approximate=tanh
//   tanh_gelu_torchlib the same with Pow(x, 3) and x * (0.5 * gate)      Gelu approximate=tanh
//                    (F.gelu(approximate="tanh"), dynamo exporter, opset < 20)
//   tanh_gelu_formula  the same with Pow(x, 3), as GPT-2's gelu_new       Gelu approximate=tanh
//                                                                               [formulas]
//   silu             Sigmoid(x), Mul(x, .)                                Swish (opset 24)
//   hard_swish       HardSigmoid(x; 1/6, 0.5), Mul(x, .)                  HardSwish (opset 14)
//   zero_dropout     Dropout with constant ratio 0 (mask unused)          Identity
//   pad_avg_pool     Pad(constant 0, spatial axes), AveragePool (no pads)  AveragePool with pads,
//                    (nn.AvgPool2d(padding=p), count_include_pad=True)      count_include_pad=1
//   variance         ReduceMean(keepdims=1), Sub, Mul(d, d), ReduceMean    memplan:Variance
//                    (torch.var / var_mean / std)
//   variance_formula the same with Pow(d, 2) (written by hand)         memplan:Variance [formulas]
//   max_dim          ReduceMax over one axis [+ ArgMax beside it]         memplan:MaxDim
//                    (torch.max(x, dim): keepdims=0 or an ArgMax)
//   glu              Split(x, 2 halves), Sigmoid(b), Mul(a, .)  (F.glu)   memplan:Glu
//   swiglu           Swish(a) (the silu entry's), Mul(., b)               memplan:SwiGlu [liger]
//                    (a LLaMA MLP's silu(gate) * up, as Liger's kernel)
//   geglu            Gelu(a; approximate tanh) (the tanh_gelu entries'),  memplan:GeGlu [liger]
//                    Mul(., b)  (Gemma's gelu_pytorch_tanh(gate) * up, as Liger's kernel)
//
// A pattern matches only where the rewrite is exact: every constant has its exact value, every
// intermediate feeds only the next node of the pattern and is not a graph output, weights are
// initializers of the normalised shape's rank. Anything else is left as it is. LayerNorm runs
// before RMSNorm because a LayerNorm's tail (from Pow on) is an RMSNorm of x - mean.
//
// Entries marked [formulas] match what a user writes by hand in PyTorch (LLaMA's RMSNorm, GPT-2's
// gelu_new), which eager autograd runs op by op and saves for node by node, as memplan plans the
// unfused chain; they are applied only under FusionSet::kAll (graph/fusion/fusion_set.h).
// Entries marked [liger] are what Liger Kernel's autograd functions replace (rms_norm is both: its
// kernel saves X, W and the fp32 rstd, as RMSNormalization is planned); they are applied under
// FusionSet::kLiger, which applies no other [formulas] entry.
// torch 1.13 exports F.gelu(approximate="tanh") with the cube as Mul(x, Mul(x, x)) and gelu_new
// with Pow(x, 3), so the two are told apart; the dynamo exporter writes F.gelu's cube as a Pow too,
// but with the half on the gate (x * (0.5 * gate)), where gelu_new halves x first; nn.SiLU and a
// hand-written x * sigmoid(x) export the same nodes, and the fusion assumes nn.SiLU (what
// EfficientNet, SwiGLU's F.silu and torchvision use).

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/fusion/fusion_set.h"

namespace memplan {

class ProtoIndex;

// One occurrence of a pattern, found by an entry's matcher.
struct FusionMatch {
  std::vector<int> nodes;  // every node of the pattern (indices into the graph): removed
  int last = -1;  // the node producing the pattern's output: the fused node takes its place
  // The replacement: op_type, domain, inputs, outputs and attributes. Its name is given by the
  // table: the scope of the last node's name plus "/" + op_type, made unique.
  onnx::NodeProto fused;
};

using FusionMatcher = std::optional<FusionMatch> (*)(const ProtoIndex& index, int node);

struct FusionEntry {
  const char* name;  // "layer_norm": reports and tests name entries by it
  FusionSet set;     // kFusedOps: applied by default; kAll / kLiger: only when asked for
  // Tries the pattern anchored at node `node` (each matcher documents its anchor op).
  FusionMatcher match;
  // The default-domain op every occurrence is anchored at: a graph without one has nothing to
  // match, and the entry costs no index of it (a 100,000-initializer model).
  const char* anchor_op;
  // Liger Kernel replaces the pattern too (FusionSet::kLiger applies the entry).
  bool liger_kernel = false;
};

// Whether `set` applies `entry`: kFusedOps entries under every set but kNone, kAll entries under
// kAll, and under kLiger the kFusedOps entries and those Liger replaces.
bool FusionSetApplies(FusionSet set, const FusionEntry& entry);

// The table, in the order it is applied.
const std::vector<FusionEntry>& FusionTable();

// How many nodes each entry formed (entries that formed none are absent).
struct FusionCounts {
  std::map<std::string, int> by_entry;
  int total() const;
};

// Rewrites `model` in place with the entries `set` includes. Constant nodes and initializers that
// only fed fused patterns are removed; a fused node in a domain the model does not import adds
// that domain (version 1) to its opset imports.
FusionCounts FuseImportPatterns(onnx::ModelProto& model, FusionSet set = FusionSet::kFusedOps);

// Applies one entry (tests; FuseImportPatterns applies each in turn). Returns how many nodes it
// formed.
int ApplyFusion(onnx::ModelProto& model, const FusionEntry& entry);

// The table entry called `name`; REQUIRES: it exists.
const FusionEntry& FusionEntryNamed(const std::string& name);

}  // namespace memplan
