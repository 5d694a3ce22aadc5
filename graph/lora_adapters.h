#pragma once
// LoRA (Hu et al. 2021) as PEFT applies it, written into the graph: for each target linear weight
// W (graph/linear_weight.h: every MatMul/Gemm computing y = x W, W read directly or through the
// Transpose torch.onnx writes for nn.Linear), two trainable
// adapters are added, A [in, r] and B [r, out] (PEFT's lora_A.weight [r, in] and lora_B.weight
// [out, r], the same elements), and the node's output becomes
//
//   y = x W  +  (x A) B          x ─► MatMul(W) ─► y_base ─┐
//                                 └─► MatMul(A) ─► h ─► MatMul(B) ─► d ─► Add ─► y
//
// so autograd saves x for A's gradient and the rank-r intermediate h for B's. The new nodes
// follow their base node in node order (the topological order keeps that), as PEFT's forward
// runs them inside the same module. alpha = r (scaling 1) and lora_dropout = 0: PEFT's scaling
// multiply and dropout each cost one more output-sized transient that this graph omits.
//
// Targets are chosen by an ECMAScript regex (std::regex, search semantics) matched against each
// weight's initializer name and the names of the nodes that read it. The default,
// kDefaultLoraTargets, matches attention projections by the names exporters keep: q_proj, k_proj,
// v_proj, o_proj, out_proj, qkv_proj (Llama, Mistral, OPT), query, key, value (BERT), c_attn
// (GPT-2) and attn.c_proj / attention.output.dense. A match of rank 1 (a bias, a norm scale) is
// skipped; a match of rank >= 2 that is not a MatMul/Gemm weight is an error.

#include <cstdint>
#include <string>

#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

inline constexpr const char* kDefaultLoraTargets =
    "(q_proj|k_proj|v_proj|o_proj|out_proj|qkv_proj|query|key|value|c_attn|attn[./_]c_proj|"
    "attention[./_]output[./_]dense)";

struct LoraOptions {
  int64_t rank = 0;     // r >= 1
  std::string targets;  // regex; empty = kDefaultLoraTargets
  // Freeze every parameter the model had (PEFT's default, bias="none"). False keeps what an
  // earlier --train selection left trainable.
  bool freeze_base = true;
};

// Rewrites `graph` with adapters on every target. Errors (one line naming the flag): an invalid
// regex, no target among the weights, a target that is not a 2-D MatMul/Gemm weight, a rank above
// min(in, out) of a target. REQUIRES: shapes propagated.
Status InsertLoraAdapters(Graph& graph, const LoraOptions& options);

}  // namespace memplan
