#include "graph/linear_weight.h"

#include <algorithm>
#include <utility>

namespace memplan {
namespace {

// (in, out) of the product `n` computing x V with V = input 1 of dims [rows, cols], and whether
// the product reads V transposed (Gemm's transB); nullopt when `n` is not such a product.
struct Product {
  std::pair<int64_t, int64_t> dims;
  bool transposes_operand = false;
};
std::optional<Product> ProductDims(const Graph& graph, NodeId n, ValueId v, int64_t rows,
                                   int64_t cols) {
  const Node& node = graph.node(n);
  if ((node.op_type != "MatMul" && node.op_type != "Gemm") || !node.domain.empty() ||
      node.inputs.size() < 2 || node.inputs[1] != v || node.inputs[0] == v ||
      node.outputs.empty() || !node.outputs[0].valid())
    return std::nullopt;
  if (node.op_type == "Gemm") {
    if (node.attributes.GetInt("transA", 0) != 0) return std::nullopt;
    if (node.attributes.GetInt("transB", 0) != 0) return Product{{cols, rows}, true};
  }
  return Product{{rows, cols}, false};
}

bool IsTwoDimTranspose(const Node& node) {
  if (node.op_type != "Transpose" || !node.domain.empty() || node.outputs.size() != 1 ||
      !node.outputs[0].valid())
    return false;
  const std::vector<int64_t> perm = node.attributes.GetInts("perm", {1, 0});
  return perm == std::vector<int64_t>{1, 0};
}

}  // namespace

std::optional<LinearWeightUse> AsLinearWeight(const Graph& graph, ValueId weight) {
  const Value& w = graph.value(weight);
  if (!w.shape.known || w.shape.rank() != 2 || w.consumers.empty()) return std::nullopt;
  const std::optional<int64_t> d0 = w.shape.dims[0].constant_value();
  const std::optional<int64_t> d1 = w.shape.dims[1].constant_value();
  if (!d0 || !d1) return std::nullopt;
  LinearWeightUse use;
  std::optional<std::pair<int64_t, int64_t>> dims;
  auto add = [&](NodeId n, ValueId v, int64_t rows, int64_t cols, bool through_transpose) {
    std::optional<Product> these = ProductDims(graph, n, v, rows, cols);
    if (!these || (dims && *dims != these->dims)) return false;
    if (!dims) use.stored_out_by_in = these->transposes_operand != through_transpose;
    dims = these->dims;
    use.products.push_back(n);
    return true;
  };
  for (NodeId n : w.consumers) {
    const Node& node = graph.node(n);
    if (IsTwoDimTranspose(node) && node.inputs.size() == 1) {
      const Value& t = graph.value(node.outputs[0]);
      if (t.consumers.empty()) return std::nullopt;
      for (NodeId m : t.consumers)
        if (!add(m, t.id, *d1, *d0, true)) return std::nullopt;
      continue;
    }
    if (!add(n, weight, *d0, *d1, false)) return std::nullopt;
  }
  std::sort(use.products.begin(), use.products.end());
  use.products.erase(std::unique(use.products.begin(), use.products.end()), use.products.end());
  use.input_features = dims->first;
  use.output_features = dims->second;
  return use;
}

}  // namespace memplan
