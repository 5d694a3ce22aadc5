#pragma once
// The language-model head that makes a loss's logits, as torch.onnx and the zoo write it. Two
// rewrites read it: --fused-loss (fused_loss_plan.h: head and loss become Liger's fused node) and
// --loss-chunks (chunked_loss_plan.h: the head runs once per chunk of tokens, as torchtune's
// chunked_output does).
//
// Recognised heads (logits = the value the loss reads, [batch, classes] or [batch, seq, vocab]):
//
//   MatMul(h, W)               W a parameter [H, V]
//   MatMul(h, Transpose(W))    W a parameter [V, H], perm (1, 0): a tied head (GPT-2's wte) or
//                              nn.Linear without bias (LLaMA's lm_head)
//   Add(MatMul(h, ·), b)       b a parameter [V]: nn.Linear with bias on [B, S, H]
//   Gemm(h, W, b?)             transB = 1, no transA, alpha = beta = 1: nn.Linear on [B, H]
//
// The product before a bias Add must be read by nothing else.

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "graph/graph.h"

namespace memplan {

struct LmHeadMatch {
  // Node indices of the head: the MatMul or Gemm, the bias Add, and the Transpose when nothing
  // else reads its output (a rewrite that reads the weight itself can drop it).
  std::set<size_t> nodes;
  ValueId input;      // h [..., H]
  ValueId weight;     // W, [H, V] or [V, H] (transposed)
  ValueId bias;       // b [V], or invalid
  ValueId projected;  // what the MatMul or Gemm reads as its weight operand (W or Transpose(W))
  bool transposed = false;  // weight is [V, H]
  // The Transpose node when the weight is read through one (index into the graph's nodes).
  std::optional<size_t> transpose;
  std::string head;  // "MatMul", "MatMul(Transpose)", "MatMul+Add", "MatMul(Transpose)+Add", "Gemm"
  size_t anchor = 0;  // the node that makes the logits
  int64_t hidden = 0;
  int64_t vocab = 0;
};

// The head that makes `logits`, or nullopt (shapes checked: h [..., H] of the logits' rank, the
// logits [..., V], the bias [V]).
std::optional<LmHeadMatch> MatchLmHead(const Graph& graph, ValueId logits);

// A name no value or node of `graph` has: `base`, else `base_1`, `base_2`, ...
std::string FreshName(const Graph& graph, const std::string& base);

}  // namespace memplan
