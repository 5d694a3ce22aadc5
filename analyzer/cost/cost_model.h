#pragma once
// A roofline estimate of training step time, good enough to *rank* plans (micro-batch sizes,
// precision, recompute), not to predict wall-clock time.
//
// Per kernel:   seconds = max(flops / peak_flops(dtype), bytes / bandwidth) + launch overhead
// where peak_flops is the tensor-core rate (FP16/BF16, or TF32 when enabled) for ops the registry
// marks fp16-safe (MatMul, Gemm, Conv — the ones that run on tensor cores) in a 16-bit dtype, and
// the CUDA-core FP32 rate for everything else; both are scaled by an achievable fraction.
//
// Per node: forward = the op's registry cost (OpSchema::cost, evaluated under the bindings);
// backward = forward x OpSchema::backward_flops_factor (flops and bytes), only for nodes on the
// gradient path. A step of k micro-batches:
//
//   step = k * (forward + backward + recompute) + (k - 1) * accumulate + optimizer
//
// recompute = the forward time of the nodes the plan re-runs in backward; accumulate = adding a
// micro-batch's parameter gradients into the persistent ones (read 2, write 1); optimizer = the
// bytes the optimizer step streams (params, grads, states), bandwidth bound.
//
// Limits (why this ranks but does not predict): no kernel fusion, overlap or stream
// concurrency; every op reaches the same fraction of peak regardless of its shape (small GEMMs
// reach far less); backward bytes are scaled like flops; convolution algorithm choice and
// data-loader, host and communication time are ignored; a 16-bit op is assumed to move half
// the bytes of its fp32 form.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analyzer/cost/gpu_specs.h"
#include "graph/dtype.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

// A node's time as `memplan profile` measured it on a GPU (profiler/profile_json.h): means per
// execution, i.e. per micro-batch at the micro-batch the profile ran.
struct MeasuredNodeTime {
  double forward_seconds = 0;
  double backward_seconds = 0;
  bool has_backward = false;  // false: keep the roofline backward (the profile saw none)
};
// By graph node name.
using MeasuredNodeTimes = std::map<std::string, MeasuredNodeTime, std::less<>>;

struct CostModelOptions {
  // Per-kernel overhead added to every launch: eager PyTorch spends ~5-10 us of CPU dispatch
  // per op and a CUDA launch costs ~3-5 us, which dominates tiny kernels. 5 us is the low end,
  // so kernel-heavy plans are not over-penalised.
  double kernel_launch_seconds = 5e-6;
  // Fraction of the datasheet peak a kernel reaches. Large cuBLAS GEMMs reach 70-90% of the
  // tensor-core peak; elementwise kernels 80-90% of DRAM bandwidth (STREAM-like). One figure
  // each keeps rankings stable; tests set 1.0 to check the pure roofline.
  double compute_efficiency = 0.7;
  double bandwidth_efficiency = 0.8;
  // FP32 MatMul/Conv on TF32 tensor cores. PyTorch >= 1.12 defaults matmuls to full FP32
  // (torch.backends.cuda.matmul.allow_tf32 = False), so off by default.
  bool fp32_uses_tf32 = false;
  // Measured times that replace the roofline for the nodes they name (`analyze --profile`).
  // They were measured at one micro-batch and are used as they are, so they describe plans at
  // that micro-batch; other sizes keep the measured figure too (no scaling is attempted).
  MeasuredNodeTimes measured;
};

// One node's estimate for one micro-batch. Flops/bytes are the evaluated forward cost in the
// node's compute dtype.
struct NodeTime {
  double forward_flops = 0;
  double forward_bytes = 0;
  double forward_seconds = 0;   // 0 for views and shape arithmetic (no kernel runs)
  double backward_seconds = 0;  // 0 when no input needs a gradient
  bool compute_bound = false;   // forward limited by flops rather than bytes
  bool measured = false;        // the times come from CostModelOptions::measured
};

// What the cost model knows about a node before the symbols are bound: its FLOPs and bytes as
// polynomials in the symbols, and what its backward runs. The planner evaluates the times of many
// micro-batch sizes; the op registry's cost rules run once per graph (NodeCosts), and each size
// only evaluates the polynomials.
struct NodeCost {
  NodeId node;
  std::string name;  // for CostModelOptions::measured
  Dim flops, bytes_read, bytes_written;
  DType imported = DType::kUndefined;  // the dtype its tensors have as imported
  bool tensor_core_op = false;         // AMP fp16-safe: runs on tensor cores in 16-bit
  bool has_backward = false;
  double backward_factor = 0;  // backward work as a multiple of forward (frozen slots removed)
};
// The nodes that run a kernel (views and shape arithmetic left out), in topological order.
struct NodeCosts {
  size_t num_nodes = 0;
  std::vector<NodeCost> nodes;
};
Expected<NodeCosts> AnalyzeNodeCosts(const Graph& graph);

// Per-node estimates, indexed by NodeId::index().
// `compute_dtypes`: the dtype each node runs in (the precision plan), indexed by NodeId; empty
// means every node runs in its first output's dtype as imported. REQUIRES: empty or one per
// node. Errors: a symbol the cost needs is unbound, or the arithmetic overflows.
Expected<std::vector<NodeTime>> EstimateNodeTimes(const NodeCosts& costs, const GpuSpec& gpu,
                                                  const Bindings& bindings,
                                                  const std::vector<DType>& compute_dtypes,
                                                  const CostModelOptions& options = {});
// AnalyzeNodeCosts, then the estimates.
Expected<std::vector<NodeTime>> EstimateNodeTimes(const Graph& graph, const GpuSpec& gpu,
                                                  const Bindings& bindings,
                                                  const std::vector<DType>& compute_dtypes,
                                                  const CostModelOptions& options = {});

// What the plan adds on top of per-node times; the planner fills it from its training program.
struct StepCostInputs {
  int64_t accumulation_steps = 1;        // k micro-batches per optimizer step; >= 1
  std::vector<NodeId> recomputed_nodes;  // forward nodes re-run during backward (per micro-batch)
  int64_t gradient_bytes = 0;            // bytes of all parameter gradients (accumulated k-1 times)
  // Bytes the optimizer step reads and writes in total, e.g. SGD with momentum over fp32 params:
  // read param + grad + momentum, write param + momentum = 5 x 4 bytes per parameter.
  int64_t optimizer_bytes = 0;
  int64_t optimizer_kernels = 1;  // launches of the optimizer step (1 for a fused/foreach step)
};

struct StepTimeEstimate {
  // Per micro-batch.
  double forward_seconds = 0;
  double backward_seconds = 0;
  double recompute_seconds = 0;
  // Per step.
  double accumulation_seconds = 0;  // (k - 1) gradient accumulations
  double optimizer_seconds = 0;
  // Data parallel only (the planner adds them, analyzer/cost/collective_cost.h): collective
  // time compute does not hide, and all of it.
  double communication_seconds = 0;
  double communication_total_seconds = 0;
  // --offload only (the planner adds them, analyzer/cost/offload_cost.h): host-link copies the
  // compute does not hide, all of them and their bytes, per step; and the optimizer step on the
  // CPU, which then replaces optimizer_seconds (0).
  double transfer_seconds = 0;
  double transfer_total_seconds = 0;
  int64_t transfer_bytes = 0;
  double host_optimizer_seconds = 0;
  // The total above (communication_seconds and transfer_seconds, not the totals).
  double step_seconds = 0;
};

// Combines node times with the plan. REQUIRES: node_times from EstimateNodeTimes on the graph
// the recomputed node ids refer to; accumulation_steps >= 1.
StepTimeEstimate EstimateStepTime(const std::vector<NodeTime>& node_times,
                                  const StepCostInputs& inputs, const GpuSpec& gpu,
                                  const CostModelOptions& options = {});

// The roofline of one kernel: max(flops / (peak * efficiency), bytes / (bandwidth * efficiency))
// plus the launch overhead. Exposed for tests and for kernels outside the graph.
double RooflineSeconds(double flops, double bytes, double peak_flops_per_second, const GpuSpec& gpu,
                       const CostModelOptions& options);

// The peak the roofline uses for an op in `dtype`; `tensor_core_op` for ops the registry marks
// fp16-safe (AmpCategory::kFp16Safe).
double PeakFlopsPerSecond(const GpuSpec& gpu, DType dtype, bool tensor_core_op,
                          const CostModelOptions& options);

}  // namespace memplan
