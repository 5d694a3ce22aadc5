#pragma once
// `--fused-loss` applied to a loaded graph, and what the plan reports about it (`plan.fused_loss`
// in JSON, one "Loss" line in text). The fused op is graph/ops/fused_loss_op.h (Liger Kernel's
// fused linear cross entropy); this finds the LM head that feeds the cross-entropy loss and
// replaces head + loss with it.
//
// The heads it recognises are lm_head_match.h's (logits = the graph output the loss reads,
// [batch, classes] or [batch, seq, vocab]).
//
// The logits, every tensor between h and them, and the Transpose must be read by nothing else.
// After the rewrite the graph output is the fused node's scalar loss, the class ids are a new
// graph input (`labels`, int64, the logits' shape without the class axis, fed with the
// micro-batch as the label is), and the program's loss is the identity-like SumLoss on that
// scalar (REQUIRES the caller to plan it so: FusedLossPlan::program_loss). Parameters keep their
// gradient and optimizer state; the logits and what the unfused loss saves (its log-softmax) are
// gone, and forward saves grad_input [BT, H] and grad_weight [V, H] (+ grad_bias [V]) instead.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/vocabulary/loss_kind.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

struct FusedLossPlan {
  bool requested = false;  // --fused-loss given
  // Set when the head was fused (requested and found).
  std::string node;                   // the fused node's name
  std::vector<std::string> replaced;  // the head nodes it replaces, in graph order
  std::string head;                   // "MatMul", "MatMul(Transpose)", "MatMul+Add" or "Gemm"
  std::string weight;                 // the head's weight parameter
  bool bias = false;
  // The node's shapes, symbolic: rows BT (product of the logits' leading dims), H and V.
  Dim rows;
  int64_t hidden = 0;
  int64_t vocab = 0;

  bool fused() const { return !node.empty(); }
  // The loss the program appends to the graph output: kSum of the fused scalar when fused (the
  // cross entropy is inside the node), `requested_loss` otherwise.
  LossKind ProgramLoss(LossKind requested_loss) const {
    return fused() ? LossKind::kSum : requested_loss;
  }
  // Liger's chunk rows (fused_loss::ChunkRows) under `bindings`; nullopt when not fused or a
  // symbol of BT is unbound.
  std::optional<int64_t> ChunkRowsAt(const Bindings& bindings) const;
};

// Rewrites `graph` when `requested` (otherwise unchanged, an empty plan). `loss` is the --loss
// request: auto (resolved as the program would) or cross_entropy. `dims`: the --dim bindings
// (not the batch); with them the logits tile is planned with cdiv(rows per sample, cdiv(V, H))
// rows per sample (the node's kTileRowsPerSample attribute), without them per term of BT
// (graph/ops/fused_loss_ops.cc). Errors (bad input, one line each, prefixed "--fused-loss: "):
// the loss is not cross entropy, the logits are not [batch, classes] / [batch, seq, vocab] or are
// read by another node, or no recognised LM head produces them; `model` names the file.
Expected<FusedLossPlan> ApplyFusedLoss(Graph& graph, bool requested, LossKind loss,
                                       const Bindings& dims, const std::string& model);

// The keys the plan object gets (docs/json_schema.md): "fused_loss": bool, and when fused
// "fused_loss_chunk_rows" (Liger's chunk under `bindings`) and "fused_loss_head": {"node",
// "head", "weight", "bias", "replaced": [...]}.
nlohmann::ordered_json FusedLossPlanToJson(const FusedLossPlan& plan, const Bindings& bindings);

// The text report's line (without the row label), empty when not fused:
// "fused linear cross entropy (Liger): head /lm_head/MatMul, logits never materialised, chunk
// 8 of 32 rows" (the head's last node; the chunk under `bindings`).
std::string FusedLossPlanText(const FusedLossPlan& plan, const Bindings& bindings);

}  // namespace memplan
