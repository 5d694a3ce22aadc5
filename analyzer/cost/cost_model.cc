#include "analyzer/cost/cost_model.h"

#include <algorithm>
#include <cmath>

#include "analyzer/derivation/view_aliasing.h"
#include "graph/ops/op_registry.h"
#include "graph/trainable_parameters.h"

namespace memplan {
namespace {

// The dtype a node's tensors have as imported: its first present output's, else input 0's.
DType ImportedDType(const Graph& graph, const Node& node) {
  for (ValueId out : node.outputs)
    if (out.valid()) return graph.value(out).dtype;
  for (ValueId in : node.inputs)
    if (in.valid()) return graph.value(in).dtype;
  return DType::kUndefined;
}

// Shape arithmetic (Shape, Gather on shapes, Concat of dims...) produces only constants: the
// importer folds it and no kernel runs on the GPU for it.
bool IsShapeArithmetic(const Graph& graph, const Node& node) {
  bool any_output = false;
  for (ValueId out : node.outputs) {
    if (!out.valid()) continue;
    any_output = true;
    if (graph.value(out).kind != ValueKind::kConstant) return false;
  }
  return any_output;
}

Expected<double> EvaluateAsDouble(const Dim& dim, const Bindings& bindings) {
  MEMPLAN_TRY(int64_t value, dim.Evaluate(bindings));
  return static_cast<double>(value);
}

// Kernel launches of a node's backward: one per multiple of the forward work (MatMul's factor 2
// is the two GEMMs for dA and dB), at least one.
double BackwardLaunches(double backward_flops_factor) {
  return std::max(1.0, std::ceil(backward_flops_factor));
}

}  // namespace

double PeakFlopsPerSecond(const GpuSpec& gpu, DType dtype, bool tensor_core_op,
                          const CostModelOptions& options) {
  if (tensor_core_op) {
    if (dtype == DType::kFloat16) return gpu.fp16_flops_per_second;
    // Without BF16 tensor cores (Volta, Turing) bf16 runs on the CUDA cores.
    if (dtype == DType::kBFloat16 && gpu.supports_bf16) return gpu.fp16_flops_per_second;
    if (dtype == DType::kFloat32 && options.fp32_uses_tf32) return gpu.tf32_flops_per_second;
  }
  return gpu.fp32_flops_per_second;
}

double RooflineSeconds(double flops, double bytes, double peak_flops_per_second, const GpuSpec& gpu,
                       const CostModelOptions& options) {
  MEMPLAN_CHECK(peak_flops_per_second > 0 && gpu.memory_bytes_per_second > 0);
  double compute = flops / (peak_flops_per_second * options.compute_efficiency);
  double memory = bytes / (gpu.memory_bytes_per_second * options.bandwidth_efficiency);
  return std::max(compute, memory) + options.kernel_launch_seconds;
}

Expected<std::vector<NodeTime>> EstimateNodeTimes(const Graph& graph, const GpuSpec& gpu,
                                                  const Bindings& bindings,
                                                  const std::vector<DType>& compute_dtypes,
                                                  const CostModelOptions& options) {
  MEMPLAN_CHECK(compute_dtypes.empty() || compute_dtypes.size() == graph.num_nodes());
  MEMPLAN_TRY(NodeCosts costs, AnalyzeNodeCosts(graph));
  return EstimateNodeTimes(costs, gpu, bindings, compute_dtypes, options);
}

Expected<NodeCosts> AnalyzeNodeCosts(const Graph& graph) {
  MEMPLAN_TRY(std::vector<NodeId> order, graph.TopologicalOrder());
  const OpRegistry& registry = OpRegistry::Get();

  // A value needs a gradient when it is a parameter or computed from one: only nodes on that
  // path run a backward.
  std::vector<bool> needs_grad(graph.num_values(), false);
  for (const Value& v : graph.values())
    if (IsTrainedParameter(v)) needs_grad[v.id.index()] = true;

  // Views move no bytes; a reshape that copies a strided view does (ViewAliasing decides).
  const ViewAliasing views = DecideViews(graph, registry, order);
  NodeCosts costs;
  costs.num_nodes = graph.num_nodes();
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    const OpSchema& schema = registry.FindOrUnknown(node.op_type, node.domain);
    OpContext ctx = MakeOpContext(graph, id);

    bool has_backward = false;
    std::vector<bool> gets_gradient = schema.gradient_inputs(ctx);
    // Gradient slots whose input is a frozen parameter: backward skips that product (a frozen
    // Linear computes only dX), so its FLOPs shrink by that share of the gradient slots.
    int gradient_slots = 0;
    int frozen_slots = 0;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      ValueId in = node.inputs[i];
      if (!in.valid() || i >= gets_gradient.size() || !gets_gradient[i]) continue;
      if (needs_grad[in.index()]) has_backward = true;
      if (!IsFloating(graph.value(in).dtype)) continue;
      ++gradient_slots;
      if (graph.value(in).frozen && graph.value(in).kind == ValueKind::kParameter) ++frozen_slots;
    }
    for (ValueId out : node.outputs)
      if (out.valid() && has_backward && IsFloating(graph.value(out).dtype))
        needs_grad[out.index()] = true;

    if (views.node_is_view[id.index()] || IsShapeArithmetic(graph, node)) continue;

    OpCost cost = schema.cost(ctx);
    NodeCost& c = costs.nodes.emplace_back();
    c.node = id;
    c.name = node.name;
    c.flops = std::move(cost.flops);
    c.bytes_read = std::move(cost.bytes_read);
    c.bytes_written = std::move(cost.bytes_written);
    c.imported = ImportedDType(graph, node);
    c.tensor_core_op = schema.amp == AmpCategory::kFp16Safe;
    c.has_backward = has_backward;
    if (has_backward) {
      double factor = schema.backward_flops_factor;
      if (frozen_slots > 0 && gradient_slots > frozen_slots)
        factor *= static_cast<double>(gradient_slots - frozen_slots) / gradient_slots;
      c.backward_factor = factor;
    }
  }
  return costs;
}

Expected<std::vector<NodeTime>> EstimateNodeTimes(const NodeCosts& costs, const GpuSpec& gpu,
                                                  const Bindings& bindings,
                                                  const std::vector<DType>& compute_dtypes,
                                                  const CostModelOptions& options) {
  MEMPLAN_CHECK(compute_dtypes.empty() || compute_dtypes.size() == costs.num_nodes);
  std::vector<NodeTime> times(costs.num_nodes);
  for (const NodeCost& c : costs.nodes) {
    const NodeId id = c.node;
    MEMPLAN_TRY(double flops, EvaluateAsDouble(c.flops, bindings));
    MEMPLAN_TRY(double bytes_read, EvaluateAsDouble(c.bytes_read, bindings));
    MEMPLAN_TRY(double bytes_written, EvaluateAsDouble(c.bytes_written, bindings));
    double bytes = bytes_read + bytes_written;

    DType imported = c.imported;
    DType compute = compute_dtypes.empty() ? imported : compute_dtypes[id.index()];
    // The registry's bytes are in the imported dtype; a node moved to fp16 moves half of them.
    if (IsFloating(imported) && IsFloating(compute) && ByteSize(imported) > 0)
      bytes *= static_cast<double>(ByteSize(compute)) / static_cast<double>(ByteSize(imported));

    double peak = PeakFlopsPerSecond(gpu, compute, c.tensor_core_op, options);
    NodeTime& t = times[id.index()];
    t.forward_flops = flops;
    t.forward_bytes = bytes;
    t.forward_seconds = RooflineSeconds(flops, bytes, peak, gpu, options);
    t.compute_bound = flops / (peak * options.compute_efficiency) >
                      bytes / (gpu.memory_bytes_per_second * options.bandwidth_efficiency);
    if (c.has_backward) {
      const double factor = c.backward_factor;
      t.backward_seconds = RooflineSeconds(flops * factor, bytes * factor, peak, gpu, options) +
                           (BackwardLaunches(factor) - 1) * options.kernel_launch_seconds;
    }
    if (auto m = options.measured.find(c.name); m != options.measured.end()) {
      t.forward_seconds = m->second.forward_seconds;
      if (c.has_backward && m->second.has_backward) t.backward_seconds = m->second.backward_seconds;
      t.measured = true;
    }
  }
  return times;
}

StepTimeEstimate EstimateStepTime(const std::vector<NodeTime>& node_times,
                                  const StepCostInputs& inputs, const GpuSpec& gpu,
                                  const CostModelOptions& options) {
  MEMPLAN_CHECK(inputs.accumulation_steps >= 1);
  StepTimeEstimate e;
  for (const NodeTime& t : node_times) {
    e.forward_seconds += t.forward_seconds;
    e.backward_seconds += t.backward_seconds;
  }
  for (NodeId id : inputs.recomputed_nodes) {
    MEMPLAN_CHECK(id.valid() && id.index() < node_times.size());
    e.recompute_seconds += node_times[id.index()].forward_seconds;
  }
  double k = static_cast<double>(inputs.accumulation_steps);
  // Adding a micro-batch's gradients into the persistent ones reads both and writes one.
  if (inputs.gradient_bytes > 0 && inputs.accumulation_steps > 1) {
    double per_accumulation = RooflineSeconds(0, 3.0 * static_cast<double>(inputs.gradient_bytes),
                                              gpu.fp32_flops_per_second, gpu, options);
    e.accumulation_seconds = (k - 1) * per_accumulation;
  }
  if (inputs.optimizer_bytes > 0) {
    e.optimizer_seconds =
        static_cast<double>(inputs.optimizer_bytes) /
            (gpu.memory_bytes_per_second * options.bandwidth_efficiency) +
        static_cast<double>(inputs.optimizer_kernels) * options.kernel_launch_seconds;
  }
  e.step_seconds = k * (e.forward_seconds + e.backward_seconds + e.recompute_seconds) +
                   e.accumulation_seconds + e.optimizer_seconds;
  return e;
}

}  // namespace memplan
