#include "analyzer/pipeline/plan_request.h"

#include <algorithm>
#include <vector>

#include "analyzer/config_export/export_defaults.h"
#include "analyzer/cost/gpu_specs.h"
#include "analyzer/parallel/data_parallel_options.h"
#include "analyzer/parallel/engine_options.h"
#include "analyzer/parallel/tensor_parallel.h"
#include "analyzer/planning/planner.h"
#include "analyzer/precision/precision_placement.h"
#include "analyzer/simulation/allocator_config.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/vocabulary/loss_dtype.h"
#include "analyzer/vocabulary/offload_hooks.h"
#include "analyzer/vocabulary/offload_mode.h"
#include "analyzer/vocabulary/optimizer_impl.h"
#include "graph/bind_symbols.h"

namespace memplan {
namespace {

// "a,b" -> {"a", "b"}; "" -> {}. Empty items are kept, so "a,,b" is refused where it is read.
std::vector<std::string> CommaSeparated(const std::string& text) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

// --loss-output a,b: one loss term per value; --loss: one kind for all, or one per output.
Status ResolveLossFlags(const PlanArguments& flags, ProgramOptions& program) {
  program.loss_outputs = CommaSeparated(flags.Text("loss_output"));
  const std::vector<std::string> losses = CommaSeparated(flags.Text("loss"));
  if (losses.size() <= 1) {
    MEMPLAN_TRY(program.loss, ParseLossKind(flags.Text("loss")));
    return OkStatus();
  }
  if (losses.size() != program.loss_outputs.size())
    return MakeError("--loss names " + std::to_string(losses.size()) + " losses for " +
                     std::to_string(program.loss_outputs.size()) +
                     " --loss-output values: name one loss, or one per loss output");
  for (const std::string& loss : losses) {
    MEMPLAN_TRY(LossKind kind, ParseLossKind(loss));
    program.output_losses.push_back(kind);
  }
  program.loss = program.output_losses.front();
  return OkStatus();
}

}  // namespace

PlanArguments::PlanArguments() {
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    if (spec.analysis_flag) continue;
    if (spec.type == PlanFlagType::kText || spec.type == PlanFlagType::kPositiveInt)
      text.emplace(std::string(spec.key), std::string(spec.cli_default));
    if (spec.type == PlanFlagType::kSwitch) switches.emplace(std::string(spec.key), false);
  }
}

bool& PlanArguments::Switch(std::string_view key) {
  auto it = switches.find(key);
  MEMPLAN_CHECK(it != switches.end());
  return it->second;
}

bool PlanArguments::Switch(std::string_view key) const {
  auto it = switches.find(key);
  MEMPLAN_CHECK(it != switches.end());
  return it->second;
}

std::string& PlanArguments::Text(std::string_view key) {
  auto it = text.find(key);
  MEMPLAN_CHECK(it != text.end());
  return it->second;
}

const std::string& PlanArguments::Text(std::string_view key) const {
  auto it = text.find(key);
  MEMPLAN_CHECK(it != text.end());
  return it->second;
}

namespace {

// --reserve: a memory size (analyzer/text/memory_size.h) or zero in any of its spellings ("0",
// "0G", "0.0GiB"), which ParseMemorySize refuses because a GPU cannot be empty.
Expected<int64_t> ParseReserveSize(const std::string& text) {
  const std::string number = text.substr(0, text.find_first_not_of("0123456789."));
  if (number.find('0') != std::string::npos &&
      number.find_first_not_of("0.") == std::string::npos) {
    // The unit must still be one ParseMemorySize knows: "1<unit>" checks it.
    MEMPLAN_TRY(int64_t unit, ParseMemorySize("1" + text.substr(number.size())));
    (void)unit;
    return int64_t{0};
  }
  return ParseMemorySize(text);
}

std::string ArgumentOf(std::string_view key) { return std::string(PlanFlagWithKey(key).argument); }

// The enumerator `text` names in `table`, with the CLI's message for a choice flag:
// "--recompute: expected none, all, sqrt, optimal or auto, got 'some'".
template <class Enum, size_t N>
Expected<Enum> ParseFlagChoice(const NameTable<Enum, N>& table, const PlanArguments& flags,
                               std::string_view key) {
  const std::string& text = flags.Text(key);
  for (const NamedValue<Enum>& entry : table)
    if (entry.name == text) return entry.value;
  return MakeError(ArgumentOf(key) + ": expected " + JoinNames(table, ", ", " or ") + ", got '" +
                   text + "'");
}

Expected<std::optional<int64_t>> OptionalPositive(const PlanArguments& flags,
                                                  std::string_view key) {
  const std::string& text = flags.Text(key);
  if (text.empty()) return std::optional<int64_t>();
  MEMPLAN_TRY(int64_t value, ParsePositiveInt(text, ArgumentOf(key)));
  if (value > kMaxPlannedBatch)
    return MakeError(ArgumentOf(key) + ": at most 2^62 samples, got " + text);
  return std::optional<int64_t>(value);
}

// A bare number is bytes (analyzer/text/memory_size.h), so `--gpu 24` would plan for 24 bytes and
// `--gpu 3090` for 3,090. No GPU has less than a mebibyte: a bare number below that is a size
// without its unit or a model number, and the message says which was likely meant: the known GPU
// names that contain the number, and the number in GiB where that is a plausible GPU size.
Status RejectBareTinyGpuSize(const std::string& text) {
  constexpr int64_t kLargestPlausibleGiB = 1024;  // no single GPU has a tebibyte
  if (text.empty() || text.size() > 7 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return OkStatus();
  const int64_t value = std::stoll(text);
  if (value >= kMiB) return OkStatus();
  std::vector<std::string> meant;
  if (value > 0 && value <= kLargestPlausibleGiB) meant.push_back(text + "G (" + text + " GiB)");
  for (const GpuSpec& gpu : KnownGpus())
    if (gpu.name.find(text) != std::string::npos) meant.push_back(gpu.name);
  std::string message =
      "--gpu " + text + ": a bare number is bytes, and no GPU has " + text + " bytes";
  for (size_t i = 0; i < meant.size(); ++i)
    message += (i == 0 ? "; did you mean " : " or ") + meant[i];
  return MakeError(message + (meant.empty() ? " (write a size like 24G or a GPU name)" : "?"));
}

// --gpus, --parallel, --nodes into planner.program.data_parallel (docs/multi_gpu.md).
Status ResolveDataParallel(const PlanArguments& flags, PlanRequest& request) {
  MEMPLAN_TRY(std::optional<int64_t> gpus, OptionalPositive(flags, "gpus"));
  MEMPLAN_TRY(std::optional<int64_t> nodes, OptionalPositive(flags, "nodes"));
  MEMPLAN_TRY(std::optional<int64_t> tp, OptionalPositive(flags, "tp"));
  const std::string& parallel = flags.Text("parallel");
  const std::string& engine_options = flags.Text("engine_options");
  if (!gpus) {
    if (!parallel.empty() || nodes || !engine_options.empty() || tp)
      return MakeError("--parallel, --nodes, --tp and --engine-options need --gpus N");
    return OkStatus();
  }
  DataParallelOptions dp;
  dp.ranks = *gpus;
  dp.nodes = nodes.value_or(1);
  if (dp.nodes > dp.ranks || dp.ranks % dp.nodes != 0) {
    return MakeError("--nodes " + std::to_string(dp.nodes) + " must divide --gpus " +
                     std::to_string(dp.ranks) + " (the same number of GPUs on every node)");
  }
  if (tp && *tp > 1) {
    // Megatron places a tensor-parallel group on the GPUs of one node: its all-reduces sit on
    // the critical path of every block and need the intra-node link.
    const int64_t per_node = dp.ranks / dp.nodes;
    if (per_node % *tp != 0) {
      return MakeError("--tp " + std::to_string(*tp) + " must divide the " +
                       std::to_string(per_node) +
                       " GPUs of a node (--gpus / --nodes): a tensor-parallel group stays "
                       "within one node");
    }
    request.tensor_parallel = *tp;
    dp.ranks /= *tp;  // data-parallel replicas, each of tp GPUs
    if (dp.ranks == 1) {
      if ((!parallel.empty() && parallel != "auto") || !engine_options.empty()) {
        return MakeError("--gpus " + std::to_string(*gpus) + " --tp " + std::to_string(*tp) +
                         " leaves one model replica: no data parallelism for --parallel or "
                         "--engine-options to set");
      }
      return OkStatus();
    }
  }
  if (parallel.empty() || parallel == "auto") {
    request.parallel_auto = true;
  } else {
    bool known = false;
    for (const NamedValue<ParallelStrategy>& entry : kParallelStrategyNames) {
      if (entry.name != parallel) continue;
      dp.strategy = entry.value;
      known = true;
    }
    if (!known) {
      return MakeError("--parallel: expected " + JoinNames(kParallelStrategyNames, ", ", ", ") +
                       " or auto, got '" + parallel + "'");
    }
  }
  if (Status applied = ApplyEngineOptions(engine_options, dp); !applied.ok())
    return MakeError("--engine-options: " + applied.error().message);
  request.planner.program.data_parallel = dp;
  return OkStatus();
}

// --offload into planner.program.offload (analyzer/derivation/host_offload.h). One GPU only;
// activations offload plans no recompute (there is no activation left on the GPU to drop).
// torchtune's hooks (--offload-hooks torchtune*) also run under module recompute, as the recipes
// pair enable_activation_offloading with enable_activation_checkpointing (non-reentrant);
// Unsloth's (--offload-hooks unsloth) only with reentrant module recompute, which it is.
Status ResolveOffload(const PlanArguments& flags, PlanRequest& request) {
  MEMPLAN_TRY(OffloadMode mode, ParseFlagChoice(kOffloadModeNames, flags, "offload"));
  request.planner.program.offload.mode = mode;
  MEMPLAN_TRY(OffloadHooks hooks, ParseFlagChoice(kOffloadHooksNames, flags, "offload_hooks"));
  request.planner.program.offload.hooks = hooks;
  if (hooks != OffloadHooks::kSaveOnCpu && mode != OffloadMode::kActivations)
    return MakeError("--offload-hooks " + flags.Text("offload_hooks") +
                     " moves saved activations; it needs --offload activations");
  if (mode == OffloadMode::kNone) return OkStatus();
  const std::string flag = "--offload " + flags.Text("offload");
  if (request.planner.program.data_parallel)
    return MakeError(flag + " is planned for one GPU; with --gpus it is not modelled yet");
  if (mode == OffloadMode::kActivations && IsTorchtuneHooks(hooks)) {
    if (request.search.recompute == RecomputeChoice::kAuto) {
      request.search.recompute = RecomputeChoice::kNone;
    } else if (request.search.recompute != RecomputeChoice::kNone &&
               (request.search.recompute != RecomputeChoice::kAll ||
                request.search.recompute_unit != RecomputeUnit::kModule ||
                request.planner.program.recompute_reentrant)) {
      return MakeError(flag + " --offload-hooks " + flags.Text("offload_hooks") +
                       " is planned without recompute or with torchtune's activation "
                       "checkpointing: --recompute all --recompute-unit module (non-reentrant)");
    }
  } else if (mode == OffloadMode::kActivations && hooks == OffloadHooks::kUnsloth) {
    // use_gradient_checkpointing="unsloth" is UnslothCheckpointFunction: reentrant checkpointing
    // of every decoder layer (unsloth_checkpoint forces use_reentrant=True).
    if (request.search.recompute != RecomputeChoice::kAll ||
        request.search.recompute_unit != RecomputeUnit::kModule ||
        !request.planner.program.recompute_reentrant) {
      return MakeError(flag +
                       " --offload-hooks unsloth is Unsloth's reentrant checkpointing of every "
                       "layer: add --recompute all --recompute-unit module --recompute-reentrant");
    }
  } else if (mode == OffloadMode::kActivations) {
    if (request.search.recompute == RecomputeChoice::kAuto) {
      request.search.recompute = RecomputeChoice::kNone;
    } else if (request.search.recompute != RecomputeChoice::kNone) {
      return MakeError(flag + " keeps no saved tensor on the GPU, so --recompute " +
                       flags.Text("recompute") + " has nothing to drop; use --recompute none");
    }
  }
  return OkStatus();
}

// --train, --freeze, --lora, --lora-targets, --base-dtype (docs/finetuning.md).
Status ResolveFineTuningFlags(const PlanArguments& flags, PlanRequest& request) {
  FineTuneOptions& f = request.finetune;
  if (!flags.Text("train").empty()) f.selection.train = flags.Text("train");
  if (!flags.Text("freeze").empty()) f.selection.freeze = flags.Text("freeze");
  if (!flags.Text("lora").empty()) {
    MEMPLAN_TRY(int64_t rank, ParsePositiveInt(flags.Text("lora"), "--lora"));
    f.lora = LoraOptions{rank, flags.Text("lora_targets"), /*freeze_base=*/true};
  } else if (!flags.Text("lora_targets").empty()) {
    return MakeError("--lora-targets needs --lora RANK");
  }
  if (flags.Text("base_dtype").empty()) return OkStatus();
  auto base = ParseFlagChoice(kBaseDTypeNames, flags, "base_dtype");
  if (!base.ok()) return base.error();
  if (!f.changes_graph())
    return MakeError("--base-dtype stores frozen weights; give --lora, --train or --freeze");
  // A 16-bit base must be the 16-bit format the plan computes in: fp16 weights under bf16
  // autocast (or the reverse) would be cast on every use, which no framework does.
  const Precision precision = request.planner.program.precision;
  const bool fixed_precision = FixedPrecision(request.search.precision).has_value();
  if (fixed_precision && ((*base == BaseDType::kFp16 && precision == Precision::kBf16) ||
                          (*base == BaseDType::kBf16 && precision == Precision::kFp16)))
    return MakeError("--base-dtype " + flags.Text("base_dtype") + " cannot pair with --precision " +
                     std::string(PrecisionName(precision)) + "; use the same 16-bit format");
  // With --precision auto a 16-bit base computes in its own format, as it would in PyTorch
  // (the search does not try the other 16-bit format or fp32 over a 16-bit copy).
  if (!fixed_precision && (*base == BaseDType::kFp16 || *base == BaseDType::kBf16)) {
    const bool fp16 = *base == BaseDType::kFp16;
    request.search.precision = fp16 ? PrecisionChoice::kFp16 : PrecisionChoice::kBf16;
    request.planner.program.precision = fp16 ? Precision::kFp16 : Precision::kBf16;
  }
  request.planner.program.base_dtype = *base;
  return OkStatus();
}

// --loss-dtype, --loss-chunks, --optimizer-in-backward, --compile (issue 40; docs/finetuning.md).
Status ResolveRecipeFlags(const PlanArguments& flags, PlanRequest& request) {
  ProgramOptions& program = request.planner.program;
  MEMPLAN_TRY(program.loss_dtype, ParseFlagChoice(kLossDTypeNames, flags, "loss_dtype"));
  MEMPLAN_TRY(std::optional<int64_t> chunks, OptionalPositive(flags, "loss_chunks"));
  program.loss_chunks = chunks.value_or(0);
  if (program.loss_chunks > 0 && request.fused_loss)
    return MakeError("--loss-chunks and --fused-loss: the fused loss has no logits to chunk");
  if (program.loss_outputs.size() > 1 && request.fused_loss)
    return MakeError(
        "--fused-loss fuses one LM head with its cross entropy; with several "
        "--loss-output values drop --fused-loss");
  program.optimizer_in_backward = flags.Switch("optimizer_in_backward");
  program.compile = flags.Switch("compile");
  // The micro-batch is the whole batch: torchtune refuses gradient_accumulation_steps > 1.
  const PlannerOptions& p = request.planner;
  if (program.optimizer_in_backward && p.global_batch &&
      (!p.micro_batch || *p.micro_batch != *p.global_batch))
    return MakeError(
        "--optimizer-in-backward steps each parameter inside backward, so gradients cannot "
        "accumulate over micro-batches (torchtune refuses gradient_accumulation_steps > 1 with "
        "optimizer_in_bwd): drop --global-batch or make it the --micro-batch");
  return OkStatus();
}

}  // namespace

void SetExportRegime(std::optional<ExportTarget> target, PlanRequest& request) {
  std::optional<ParallelStrategy> strategy;
  if (request.planner.program.data_parallel && !request.parallel_auto)
    strategy = request.planner.program.data_parallel->strategy;
  const RegimeChoice given = request.regime_given;
  ApplyExportRegime(target, strategy, given, request.planner.program);
  request.strategy_regime = [target, given](ParallelStrategy s, ProgramOptions& program) {
    ApplyExportRegime(target, s, given, program);
  };
  if (target)
    for (ParallelStrategy s : ExportTargetExcludedStrategies(*target))
      request.parallel_excluded.push_back(s);
}

namespace {

// --gpu and --cuda-context: the device planned for.
Status ResolveGpuFlags(const PlanArguments& flags, bool require_gpu, PlannerOptions& p) {
  if (flags.Text("gpu").empty()) {
    if (require_gpu)
      return MakeError("--gpu is required (a size like 24G or a name like A100-80GB)");
    return OkStatus();
  }
  MEMPLAN_RETURN_IF_ERROR(RejectBareTinyGpuSize(flags.Text("gpu")));
  MEMPLAN_TRY(p.gpu, ResolveGpu(flags.Text("gpu")));
  if (!flags.Text("cuda_context").empty()) {
    Status context = SetCudaContext(p.gpu, flags.Text("cuda_context"));
    if (!context.ok()) return MakeError("--cuda-context: " + context.error().message);
  }
  return OkStatus();
}

// --global-batch, --micro-batch (or --batch) and --reserve.
Status ResolveBatchFlags(const PlanArguments& flags, PlanRequest& request) {
  PlannerOptions& p = request.planner;
  MEMPLAN_TRY(p.global_batch, OptionalPositive(flags, "global_batch"));
  MEMPLAN_TRY(p.micro_batch, OptionalPositive(flags, "micro_batch"));
  if (request.analysis.batch) {
    if (p.micro_batch && *p.micro_batch != *request.analysis.batch)
      return MakeError("--batch and --micro-batch disagree; give one of them");
    p.micro_batch = request.analysis.batch;
  }
  if (!flags.Text("reserve").empty()) {
    // No reserve is a valid choice: the whole budget after the context is the planner's.
    auto reserve = ParseReserveSize(flags.Text("reserve"));
    if (!reserve.ok()) return MakeError("--reserve: " + reserve.error().message);
    p.reserve_bytes = *reserve;
  }
  return OkStatus();
}

// --precision and --amp-mode.
Status ResolvePrecisionFlags(const PlanArguments& flags, PlanRequest& request) {
  PlannerOptions& p = request.planner;
  MEMPLAN_TRY(request.search.precision, ParseFlagChoice(kPrecisionChoiceNames, flags, "precision"));
  if (std::optional<Precision> fixed = FixedPrecision(request.search.precision))
    p.program.precision = *fixed;
  // --amp-mode: the regime of a mixed plan; autocast unless given (what exports run).
  p.program.amp_mode = kDefaultCliAmpMode;
  if (flags.Text("amp_mode").empty()) return OkStatus();
  MEMPLAN_TRY(p.program.amp_mode, ParseFlagChoice(kAmpModeNames, flags, "amp_mode"));
  if (request.search.precision == PrecisionChoice::kFp32)
    return MakeError("--amp-mode " + flags.Text("amp_mode") +
                     " needs mixed precision (--precision fp16, bf16 or auto); fp32 has no "
                     "AMP regime");
  if (p.program.amp_mode == AmpMode::kPure && request.search.precision == PrecisionChoice::kFp16)
    return MakeError(
        "--amp-mode pure keeps bf16 parameters (model.to(torch.bfloat16)); fp16 "
        "parameters cannot be loss-scaled by GradScaler: use --precision bf16");
  return OkStatus();
}

// --headroom and --knee: how close to the budget the search may go.
Status ResolveSearchMargins(const PlanArguments& flags, PlannerOptions& p) {
  // --headroom: 5% of the budget unless given.
  p.headroom.fraction = kDefaultCliHeadroomFraction;
  if (!flags.Text("headroom").empty()) {
    auto headroom = ParseHeadroom(flags.Text("headroom"));
    if (!headroom.ok()) return MakeError("--headroom: " + headroom.error().message);
    p.headroom = *headroom;
  }
  // --knee: the throughput knee within 2% of the best samples/s unless given (0: the largest).
  p.knee_tolerance = kDefaultCliKneeTolerance;
  if (!flags.Text("knee").empty()) {
    auto knee = ParseKneeTolerance(flags.Text("knee"));
    if (!knee.ok()) return MakeError("--knee: " + knee.error().message);
    p.knee_tolerance = *knee;
  }
  return OkStatus();
}

// --optimizer, --optimizer-impl, the loss flags and --zero-grad.
Status ResolveOptimizerFlags(const PlanArguments& flags, ProgramOptions& program) {
  MEMPLAN_TRY(program.optimizer, ParseOptimizerKind(flags.Text("optimizer")));
  // --optimizer-impl: torch.optim's default on CUDA (foreach) unless given; `analyze --export
  // deepspeed` plans DeepSpeed's fused Adam instead (tools/memplan/analyze_command.cc).
  program.optimizer_impl = kDefaultCliOptimizerImpl;
  if (!flags.Text("optimizer_impl").empty()) {
    MEMPLAN_TRY(program.optimizer_impl,
                ParseFlagChoice(kOptimizerImplNames, flags, "optimizer_impl"));
  }
  MEMPLAN_RETURN_IF_ERROR(ResolveLossFlags(flags, program));
  MEMPLAN_TRY(program.zero_grad, ParseZeroGradMode(flags.Text("zero_grad")));
  return OkStatus();
}

// --allocator and --alloc-conf (expandable_segments:True is the expandable model).
Status ResolveAllocatorFlags(const PlanArguments& flags, PlannerOptions& p) {
  MEMPLAN_TRY(p.allocator, ParseAllocatorKind(flags.Text("allocator")));
  if (flags.Text("alloc_conf").empty()) return OkStatus();
  // --alloc-conf: PyTorch's own option text; expandable_segments:True is the expandable model.
  Expected<AllocatorConfig> config = ParseAllocatorConfig(flags.Text("alloc_conf"));
  if (!config.ok()) return MakeError("--alloc-conf: " + config.error().message);
  p.alloc_config = *config;
  if (config->expandable_segments) {
    if (p.allocator == AllocatorKind::kExact)
      return MakeError(
          "--alloc-conf expandable_segments:True plans reserved bytes; --allocator exact "
          "plans live bytes: give one of them");
    if (config->caching.max_split_size != INT64_MAX || config->caching.roundup_power2_divisions > 1)
      return MakeError(
          "--alloc-conf: max_split_size_mb and roundup_power2_divisions with "
          "expandable_segments:True are not modelled; give expandable_segments:True alone");
    p.allocator = AllocatorKind::kExpandable;
  } else if (p.allocator != AllocatorKind::kCaching) {
    return MakeError("--alloc-conf " + flags.Text("alloc_conf") +
                     " sets the caching allocator's options; --allocator " +
                     flags.Text("allocator") + " does not use them");
  }
  return OkStatus();
}

// --clip-grad, --recompute, --recompute-unit and --recompute-reentrant.
Status ResolveRecomputeFlags(const PlanArguments& flags, PlanRequest& request) {
  ProgramOptions& program = request.planner.program;
  program.clip_gradients = flags.Switch("clip_grad");
  MEMPLAN_TRY(request.search.recompute, ParseFlagChoice(kRecomputeChoiceNames, flags, "recompute"));
  MEMPLAN_TRY(request.search.recompute_unit,
              ParseFlagChoice(kRecomputeUnitNames, flags, "recompute_unit"));
  program.recompute_reentrant = flags.Switch("recompute_reentrant");
  if (program.recompute_reentrant && request.search.recompute_unit == RecomputeUnit::kNode)
    return MakeError(
        "--recompute-reentrant: reentrant torch.utils.checkpoint re-runs whole modules; use "
        "--recompute-unit module (or auto)");
  if (request.search.recompute_unit == RecomputeUnit::kModule &&
      request.search.recompute == RecomputeChoice::kSqrt)
    return MakeError(
        "--recompute-unit module: --recompute sqrt places node-level segments, which "
        "no module checkpoint expresses; use --recompute all, optimal or auto");
  return OkStatus();
}

// --attention, --fused-loss, the recipe flags, --fusions, the placement overrides, --loss-scaling,
// data parallel, offload and fine-tuning.
Status ResolveFeatureFlags(const PlanArguments& flags, PlanRequest& request) {
  ProgramOptions& program = request.planner.program;
  MEMPLAN_TRY(request.attention, ParseFlagChoice(kAttentionModeNames, flags, "attention"));
  request.fused_loss = flags.Switch("fused_loss");
  MEMPLAN_RETURN_IF_ERROR(ResolveRecipeFlags(flags, request));
  MEMPLAN_TRY(request.fusions, ParseFlagChoice(kFusionSetNames, flags, "fusions"));
  MEMPLAN_TRY(request.search.force_fp32,
              ParseOpList(flags.Text("fp32_ops"), ArgumentOf("fp32_ops")));
  MEMPLAN_TRY(request.search.force_fp16,
              ParseOpList(flags.Text("fp16_ops"), ArgumentOf("fp16_ops")));
  if (!flags.Text("loss_scaling").empty()) {
    auto scaling = ParseLossScaling(flags.Text("loss_scaling"));
    if (!scaling.ok()) return MakeError("--loss-scaling: " + scaling.error().message);
    program.loss_scaling = *scaling;
  }
  MEMPLAN_RETURN_IF_ERROR(ResolveDataParallel(flags, request));
  MEMPLAN_RETURN_IF_ERROR(ResolveOffload(flags, request));
  if (program.compile && program.offload.mode == OffloadMode::kActivations)
    return MakeError(
        "--compile and --offload activations: the partitioner's saved set under activation "
        "offloading is not planned yet; plan one of them");
  return ResolveFineTuningFlags(flags, request);
}

// What the GPU leaves once every flag is read: memory for training, bf16 for a pure plan, a
// headroom of at most half the budget.
Status CheckBudgetFlags(const PlanArguments& flags, const PlanRequest& request) {
  const PlannerOptions& p = request.planner;
  // The planner says the same without naming a flag; the CLI names --reserve.
  if (!flags.Text("gpu").empty() &&
      p.gpu.memory_bytes - p.gpu.context_bytes - p.reserve_bytes <= 0) {
    return MakeError("no memory left for training: GPU " + p.gpu.name + " has " +
                     std::to_string(p.gpu.memory_bytes) + " bytes, the CUDA context takes " +
                     std::to_string(p.gpu.context_bytes) + " and --reserve " +
                     std::to_string(p.reserve_bytes));
  }
  if (p.program.amp_mode == AmpMode::kPure && request.search.precision == PrecisionChoice::kAuto &&
      !flags.Text("gpu").empty() && !p.gpu.supports_bf16 && !p.gpu.is_generic)
    return MakeError("--amp-mode pure needs bf16, which " + p.gpu.name +
                     " lacks; use --amp-mode autocast or master-weights");
  if (!flags.Text("gpu").empty()) {
    const int64_t budget = p.gpu.memory_bytes - p.gpu.context_bytes - p.reserve_bytes;
    if (p.headroom.BytesOf(budget) > budget / 2)
      return MakeError("--headroom " + flags.Text("headroom") + " is more than half of the " +
                       FormatBytes(budget) + " budget");
  }
  return OkStatus();
}

}  // namespace

// Each part reads its flags in the order their errors are checked: the first bad flag is the one
// reported.
Expected<PlanRequest> ResolvePlanFlags(const PlanArguments& flags, bool require_gpu) {
  PlanRequest request;
  MEMPLAN_TRY(request.analysis, ResolveAnalysisFlags(flags.analysis));
  MEMPLAN_RETURN_IF_ERROR(ResolveGpuFlags(flags, require_gpu, request.planner));
  MEMPLAN_RETURN_IF_ERROR(ResolveBatchFlags(flags, request));
  MEMPLAN_RETURN_IF_ERROR(ResolvePrecisionFlags(flags, request));
  MEMPLAN_RETURN_IF_ERROR(ResolveSearchMargins(flags, request.planner));
  MEMPLAN_RETURN_IF_ERROR(ResolveOptimizerFlags(flags, request.planner.program));
  MEMPLAN_RETURN_IF_ERROR(ResolveAllocatorFlags(flags, request.planner));
  MEMPLAN_RETURN_IF_ERROR(ResolveRecomputeFlags(flags, request));
  MEMPLAN_RETURN_IF_ERROR(ResolveFeatureFlags(flags, request));
  // A strategy is planned in its engine's regime where the user left it open (a ZeRO stage:
  // DeepSpeed's master weights and FusedAdam); `analyze --export` refines it for its target.
  request.regime_given = {
      .amp_mode_given = !flags.Text("amp_mode").empty(),
      .optimizer_impl_given = !flags.Text("optimizer_impl").empty(),
      .wrap_policy_given =
          flags.Text("engine_options").find("auto_wrap_policy") != std::string::npos};
  SetExportRegime(std::nullopt, request);
  MEMPLAN_RETURN_IF_ERROR(CheckBudgetFlags(flags, request));
  return request;
}

}  // namespace memplan
