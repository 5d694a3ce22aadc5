#include "tools/memplan/plan_flags.h"

#include "analyzer/memory_size.h"
#include "analyzer/precision/precision_placement.h"
#include "graph/bind_symbols.h"

namespace memplan::cli {

void AddPlanFlags(CLI::App& command, PlanFlags& flags) {
  AddAnalysisFlags(command, flags.analysis);
  command.add_option("--gpu", flags.gpu,
                     "the GPU: a memory size (24G = 24 GiB, 80GB = 80e9 bytes) or a name "
                     "(A100-80GB, H100, RTX3090, ...)");
  command.add_option("--global-batch", flags.global_batch,
                     "target batch per optimizer step (micro-batch x accumulation steps); default: "
                     "the largest micro-batch that fits, without accumulation");
  command.add_option("--micro-batch", flags.micro_batch,
                     "fix the micro-batch instead of searching (what-if); same as --batch");
  command.add_option("--reserve", flags.reserve, "memory to keep free on the GPU, e.g. 1G");
  command
      .add_option("--precision", flags.precision,
                  "fp32 | fp16 | bf16 (mixed precision, placed per node) | auto (fp32 and the "
                  "GPU's fastest 16-bit format, whichever plans faster)")
      ->capture_default_str();
  command.add_option("--optimizer", flags.optimizer, "sgd | momentum | adam | adamw | adafactor");
  command.add_option("--loss", flags.loss, "auto | cross_entropy | mse | sum");
  command.add_option("--zero-grad", flags.zero_grad, "set_to_none | zero");
  command.add_option("--allocator", flags.allocator,
                     "caching (PyTorch's CUDA caching allocator) | exact (live bytes)");
  command
      .add_option("--recompute", flags.recompute,
                  "none | all | sqrt | optimal | auto (optimal when the budget or the global "
                  "batch needs it, none otherwise)")
      ->capture_default_str();
  command.add_option("--fp32-ops", flags.fp32_ops,
                     "comma list of op types or node names forced to fp32 in mixed precision");
  command.add_option("--fp16-ops", flags.fp16_ops,
                     "comma list of op types or node names forced to fp16/bf16");
  command.add_option("--loss-scaling", flags.loss_scaling,
                     "none | dynamic | static:<scale> (or a bare scale such as 1024); default: "
                     "dynamic for fp16, none for bf16");
  command.add_flag("--clip-grad", flags.clip, "plan for gradient-norm clipping");
}

namespace {

Expected<std::optional<int64_t>> OptionalPositive(const std::string& text, std::string_view flag) {
  if (text.empty()) return std::optional<int64_t>();
  MEMPLAN_TRY(int64_t value, ParsePositiveInt(text, flag));
  return std::optional<int64_t>(value);
}

}  // namespace

Expected<PlanRequest> ResolvePlanFlags(const PlanFlags& flags, bool require_gpu) {
  PlanRequest request;
  MEMPLAN_TRY(request.analysis, ResolveAnalysisFlags(flags.analysis));
  PlannerOptions& p = request.planner;
  if (flags.gpu.empty()) {
    if (require_gpu)
      return MakeError("--gpu is required (a size like 24G or a name like A100-80GB)");
  } else {
    MEMPLAN_TRY(p.gpu, ResolveGpu(flags.gpu));
  }
  MEMPLAN_TRY(p.global_batch, OptionalPositive(flags.global_batch, "--global-batch"));
  MEMPLAN_TRY(p.micro_batch, OptionalPositive(flags.micro_batch, "--micro-batch"));
  if (request.analysis.batch) {
    if (p.micro_batch && *p.micro_batch != *request.analysis.batch)
      return MakeError("--batch and --micro-batch disagree; give one of them");
    p.micro_batch = request.analysis.batch;
  }
  if (!flags.reserve.empty()) {
    auto reserve = ParseMemorySize(flags.reserve);
    if (!reserve.ok()) return MakeError("--reserve: " + reserve.error().message);
    p.reserve_bytes = *reserve;
  }
  MEMPLAN_TRY(request.search.precision, ParsePrecisionChoice(flags.precision));
  if (flags.precision != "auto") {
    MEMPLAN_TRY(p.program.precision, ParsePrecision(flags.precision));
  }
  MEMPLAN_TRY(p.program.optimizer, ParseOptimizerKind(flags.optimizer));
  MEMPLAN_TRY(p.program.loss, ParseLossKind(flags.loss));
  MEMPLAN_TRY(p.program.zero_grad, ParseZeroGradMode(flags.zero_grad));
  MEMPLAN_TRY(p.allocator, ParseAllocatorKind(flags.allocator));
  p.program.clip_gradients = flags.clip;
  MEMPLAN_TRY(request.search.recompute, ParseRecomputeChoice(flags.recompute));
  MEMPLAN_TRY(request.search.force_fp32, ParseOpList(flags.fp32_ops, "--fp32-ops"));
  MEMPLAN_TRY(request.search.force_fp16, ParseOpList(flags.fp16_ops, "--fp16-ops"));
  if (!flags.loss_scaling.empty()) {
    auto scaling = ParseLossScaling(flags.loss_scaling);
    if (!scaling.ok()) return MakeError("--loss-scaling: " + scaling.error().message);
    p.program.loss_scaling = *scaling;
  }
  return request;
}

Status BindPlanSymbols(const Graph& graph, PlanRequest& request) {
  MEMPLAN_TRY(Bindings bindings, BindSymbols(graph, /*batch=*/std::nullopt, request.analysis.dims));
  request.planner.bindings = std::move(bindings);
  return OkStatus();
}

}  // namespace memplan::cli
