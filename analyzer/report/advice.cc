#include "analyzer/report/advice.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/text/memory_size.h"
#include "graph/model_summary.h"
#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

// The layers that normalise over the batch (the registry's couples_batch: BatchNormalization).
int64_t CountBatchCoupledLayers(const Graph& graph) {
  const OpRegistry& registry = OpRegistry::Get();
  return std::count_if(graph.nodes().begin(), graph.nodes().end(), [&](const Node& n) {
    return registry.FindOrUnknown(n.op_type, n.domain).couples_batch;
  });
}

// Layers with a per-channel bias (Conv's) whose only consumer normalises over the batch (BN):
// BN subtracts the batch mean per channel, which cancels any per-channel constant the bias adds.
struct RedundantBias {
  int64_t convs = 0;
  int64_t bias_elements = 0;
  int64_t flops_per_micro_batch = 0;  // one add per conv output element
};

RedundantBias FindRedundantConvBias(const Graph& graph, const Bindings& bindings) {
  const OpRegistry& registry = OpRegistry::Get();
  RedundantBias r;
  for (const Node& n : graph.nodes()) {
    const int slot = registry.FindOrUnknown(n.op_type, n.domain).channel_bias_input;
    if (slot < 0 || n.inputs.size() <= static_cast<size_t>(slot) || !n.inputs[slot].valid())
      continue;
    if (n.outputs.empty() || !n.outputs[0].valid()) continue;
    const Value& out = graph.value(n.outputs[0]);
    if (out.consumers.size() != 1) continue;
    const Node& consumer = graph.node(out.consumers[0]);
    if (!registry.FindOrUnknown(consumer.op_type, consumer.domain).couples_batch) continue;
    const Value& bias = graph.value(n.inputs[slot]);
    if (bias.kind != ValueKind::kParameter) continue;
    ++r.convs;
    r.bias_elements += bias.shape.NumElements().Evaluate(bindings).ok()
                           ? *bias.shape.NumElements().Evaluate(bindings)
                           : 0;
    auto elements = out.shape.NumElements().Evaluate(bindings);
    if (elements.ok()) r.flops_per_micro_batch += *elements;
  }
  return r;
}

// Bytes per parameter element the plan keeps: every parameter copy, its gradient and its
// optimizer states, read off the program (not assumed).
int64_t BytesPerParameterElement(const TrainingPlan& plan, const Graph& graph) {
  int64_t bytes = 0;
  int64_t elements = 0;
  for (const ParameterBuffers& p : plan.program.parameters) {
    auto size = [&](BufferId id) {
      return id.valid() && id.index() < plan.simulation.buffer_bytes.size()
                 ? plan.simulation.buffer_bytes[id.index()]
                 : 0;
    };
    bytes += size(p.master) + size(p.working) + size(p.gradient);
    for (BufferId s : p.optimizer_states) bytes += size(s);
    auto n = graph.value(p.value).shape.NumElements().Evaluate(plan.bindings);
    if (n.ok()) elements += *n;
  }
  return elements > 0 ? bytes / elements : 0;
}

// BatchNorm normalises over the micro-batch, whatever the accumulation.
std::optional<AdviceItem> BatchNormAdvice(const Graph& graph, const TrainingPlan& plan,
                                          const AdviceOptions& options) {
  const int64_t m = plan.chosen.micro_batch;
  const int64_t k = plan.chosen.accumulation_steps;
  const int64_t g = plan.chosen.global_batch;
  const int64_t batchnorms = CountBatchCoupledLayers(graph);
  if (batchnorms == 0 || (k == 1 && m >= options.batchnorm_min_samples)) return std::nullopt;
  const int64_t target = std::min(g, options.batchnorm_min_samples);
  std::ostringstream s;
  s << "BatchNorm (" << batchnorms << " layers) normalises over the micro-batch m=" << m
    << (k > 1 ? ", not the global batch G=" + std::to_string(g) : std::string()) << ": its "
    << "statistics see " << m << " samples. ";
  if (m >= target) {
    s << "That is enough for stable statistics (>= " << options.batchnorm_min_samples
      << " samples, Wu & He 2018); accumulation does not change them.";
    return AdviceItem{"batchnorm-accumulation", s.str()};
  }
  s << "Raise m to at least " << target << " (BN degrades below ~" << options.batchnorm_min_samples
    << " samples per batch, Wu & He 2018); ";
  if (plan.micro_batch_fixed) {
    // A fixed m is not searched, so the largest that fits is not known here.
    s << "try --micro-batch " << target << " (memplan says whether it fits). ";
  } else if (plan.largest_fitting_micro_batch >= target) {
    s << "m=" << target << " fits this budget (--micro-batch " << target << "). ";
  } else {
    s << "m=" << target
      << " does not fit (largest that fits: m=" << plan.largest_fitting_micro_batch << "). ";
  }
  s << "Or replace BatchNorm with GroupNorm, or use SyncBatchNorm across GPUs.";
  return AdviceItem{"batchnorm-accumulation", s.str()};
}

// The learning rate the plan's effective batch asks for.
AdviceItem LearningRateAdvice(const TrainingPlan& plan) {
  const int64_t m = plan.chosen.micro_batch;
  const int64_t k = plan.chosen.accumulation_steps;
  const int64_t g = plan.chosen.global_batch;
  std::ostringstream s;
  if (plan.global_batch_requested && plan.global_batch_exact) {
    const int64_t ranks = plan.program.data_parallel_ranks;
    const std::string on_each =
        ranks > 1 ? " on each of " + std::to_string(ranks) + " GPUs" : std::string();
    if (k == 1)
      s << "One micro-batch of m=" << m << on_each
        << " per optimizer step is the global batch G=" << g
        << " (no accumulation): keep the learning rate tuned for batch " << g << ".";
    else
      s << "k=" << k << " micro-batches of m=" << m << on_each
        << " reproduce the global batch G=" << g
        << " exactly (loss divided by k): keep the learning rate tuned for batch " << g << ".";
  } else if (plan.global_batch_requested) {
    const int64_t ranks = plan.program.data_parallel_ranks;
    s << "The effective batch is m*k" << (ranks > 1 ? "*GPUs" : "") << "=" << m << "*" << k
      << (ranks > 1 ? "*" + std::to_string(ranks) : std::string()) << "=" << g
      << ", not the requested " << plan.requested_global_batch << ": scale the learning rate by "
      << g << "/" << plan.requested_global_batch
      << " (linear scaling rule, Goyal et al. 2017) or choose a "
      << "global batch divisible by a micro-batch that fits.";
  } else if (plan.knee) {
    // The knee trains a smaller batch than the largest that fits: its learning rate differs.
    const int64_t top = plan.largest_within_headroom;
    s << "The effective batch is " << g << " (the throughput knee, no accumulation; the "
      << "largest micro-batch "
      << (plan.largest_fitting_micro_batch > top ? "under the headroom" : "that fits")
      << " is m=" << top << "). If your learning rate was tuned "
      << "for batch B, scale it linearly to lr*" << g << "/B with warm-up (Goyal et al. "
      << "2017), lr*" << top << "/B at --micro-batch " << top
      << ", or pass --global-batch B to reproduce B with accumulation.";
  } else {
    s << "The effective batch is " << g
      << (plan.micro_batch_fixed ? " (fixed by --micro-batch, no accumulation). If"
                                 : " (the largest micro-batch that fits, no accumulation). If")
      << " your learning rate was tuned for batch B, scale it linearly to "
      << "lr*" << g << "/B with warm-up (Goyal et al. 2017), or pass --global-batch B to "
      << "reproduce B with accumulation.";
  }
  return {"learning-rate", s.str()};
}

// Clipping and schedulers under accumulation, or clipping under fp16 loss scaling.
void StepOrderAdvice(const TrainingPlan& plan, bool runs, std::vector<AdviceItem>& advice) {
  const int64_t k = plan.chosen.accumulation_steps;
  if (runs && k > 1) {
    std::ostringstream s;
    s << "Clip gradients once per optimizer step, after the last of the k=" << k
      << " micro-batches";
    if (plan.chosen.precision == Precision::kFp16) s << " and after scaler.unscale_(optimizer)";
    s << "; clipping each micro-batch's partial gradient clips the wrong quantity.";
    advice.push_back({"clip-after-accumulation", s.str()});
    std::ostringstream t;
    t << "Learning-rate schedulers and warm-up count optimizer steps, not micro-batches: call "
      << "scheduler.step() once every " << k << " micro-batches (an epoch of N samples has N/"
      << plan.chosen.global_batch << " optimizer steps).";
    advice.push_back({"scheduler-steps", t.str()});
  } else if (plan.chosen.precision == Precision::kFp16) {
    advice.push_back({"clip-after-unscale",
                      "With fp16 loss scaling, call scaler.unscale_(optimizer) before clipping "
                      "so the threshold applies to the true gradient."});
  }
}

}  // namespace

std::vector<AdviceItem> AdvisePlan(const Graph& graph, const TrainingPlan& plan,
                                   const AdviceOptions& options) {
  std::vector<AdviceItem> advice;
  // Batch-size advice is about a plan that runs: when nothing fits there is no micro-batch to
  // tune, and naming "the largest micro-batch that fits" would contradict the verdict.
  const bool runs = plan.feasible;
  if (runs) {
    if (std::optional<AdviceItem> batchnorm = BatchNormAdvice(graph, plan, options))
      advice.push_back(std::move(*batchnorm));
    advice.push_back(LearningRateAdvice(plan));
  }
  StepOrderAdvice(plan, runs, advice);

  RedundantBias bias = FindRedundantConvBias(graph, plan.bindings);
  if (bias.convs > 0) {
    const int64_t per_element = BytesPerParameterElement(plan, graph);
    std::ostringstream s;
    s << bias.convs << " Conv layers feed BatchNorm and carry a bias that BatchNorm's mean "
      << "subtraction cancels: construct them with bias=False to save " << bias.bias_elements
      << " parameters (" << FormatBytes(bias.bias_elements * per_element)
      << " with gradients and optimizer state) and " << bias.flops_per_micro_batch
      << " FLOPs per micro-batch.";
    advice.push_back({"conv-bias-before-batchnorm", s.str()});
  }
  return advice;
}

std::vector<std::string> InferenceExportWarnings(const Graph& graph, const Bindings& bindings) {
  std::vector<std::string> warnings;
  for (const std::string& w : SummarizeModel(graph, bindings).warnings) {
    if (w.find("inference export") != std::string::npos) warnings.push_back(w);
  }
  return warnings;
}

}  // namespace memplan
