#pragma once
// Which parameters are nn.Linear weights: the one place LoRA (graph/lora_adapters.h) and the
// quantised base storage (analyzer/program/frozen_weight_storage.h) decide what a "linear layer"
// is.
//
// A 2-D weight W is a linear weight when every use computes x W: W is input 1 of a MatMul, or
// input 1 (B) of a Gemm with transA = 0 (transB = 1 reads W as [out, in]), either directly or
// through a 2-D Transpose, as torch.onnx exports nn.Linear on inputs of rank > 2
// (W[out, in] -> Transpose -> MatMul). All uses must agree on (in, out).

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/graph.h"

namespace memplan {

struct LinearWeightUse {
  int64_t input_features = 0;
  int64_t output_features = 0;
  std::vector<NodeId> products;  // the MatMul/Gemm nodes that compute x W, in node order
  // W is stored [out, in] (torch's nn.Linear layout: read through a Transpose or Gemm's transB)
  // rather than [in, out]. Taken from the first use; the others agree on (in, out).
  bool stored_out_by_in = false;
};

// nullopt when `weight` is not 2-D with constant dims or some use is not a linear product.
std::optional<LinearWeightUse> AsLinearWeight(const Graph& graph, ValueId weight);

}  // namespace memplan
