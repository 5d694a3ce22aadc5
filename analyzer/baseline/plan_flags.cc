#include "analyzer/baseline/plan_flags.h"

#include "analyzer/baseline/json_file.h"

namespace memplan {

// Help texts are the CLI's; they live here so a flag is declared in one place.
const std::array<PlanFlagSpec, 45> kPlanFlagTable = {{
    {.key = "batch",
     .argument = "--batch",
     .type = PlanFlagType::kPositiveInt,
     .analysis_flag = true,
     .integer = &PlanFlags::batch},
    {.key = "global_batch",
     .argument = "--global-batch",
     .type = PlanFlagType::kPositiveInt,
     .help = "target batch per optimizer step (micro-batch x accumulation steps); default: the "
             "largest micro-batch that fits, without accumulation",
     .help_position = 1,
     .integer = &PlanFlags::global_batch},
    {.key = "micro_batch",
     .argument = "--micro-batch",
     .type = PlanFlagType::kPositiveInt,
     .help = "fix the micro-batch instead of searching (what-if); same as --batch",
     .help_position = 2,
     .integer = &PlanFlags::micro_batch},
    {.key = "dims", .argument = "--dim", .type = PlanFlagType::kDims, .analysis_flag = true},
    {.key = "batch_dim",
     .argument = "--batch-dim",
     .type = PlanFlagType::kText,
     .analysis_flag = true,
     .text = &PlanFlags::batch_dim},
    {.key = "gpu",
     .argument = "--gpu",
     .type = PlanFlagType::kText,
     .help = "the GPU: a memory size (24G = 24 GiB, 80GB = 80e9 bytes) or a name (A100-80GB, "
             "H100, RTX3090, ...)",
     .help_position = 0,
     .text = &PlanFlags::gpu},
    {.key = "reserve",
     .argument = "--reserve",
     .type = PlanFlagType::kText,
     .help = "memory to keep free on the GPU, e.g. 1G",
     .help_position = 3,
     .text = &PlanFlags::reserve},
    {.key = "precision",
     .argument = "--precision",
     .type = PlanFlagType::kText,
     .cli_default = "auto",
     .help_shows_default = true,
     .help = "fp32 | fp16 | bf16 (mixed precision, placed per node) | auto (fp32 and the GPU's "
             "fastest 16-bit format, whichever plans faster)",
     .help_position = 4,
     .text = &PlanFlags::precision},
    {.key = "optimizer",
     .argument = "--optimizer",
     .type = PlanFlagType::kText,
     .cli_default = "adam",
     .help = "sgd | momentum | adam | adamw | adafactor",
     .help_position = 5,
     .text = &PlanFlags::optimizer},
    {.key = "optimizer_impl",
     .argument = "--optimizer-impl",
     .type = PlanFlagType::kText,
     .help = "how torch.optim's Adam/AdamW/SGD step runs: foreach (PyTorch's default on CUDA: "
             "Adam holds sqrt(exp_avg_sq) of every parameter at once; default) | fused (no "
             "intermediate; DeepSpeed plans) | for-loop (foreach=False: one parameter at a time)",
     .help_position = 28,
     .text = &PlanFlags::optimizer_impl},
    {.key = "loss",
     .argument = "--loss",
     .type = PlanFlagType::kText,
     .cli_default = "auto",
     .help = "auto | cross_entropy | mse | sum; with several --loss-output values, one for "
             "all or one per output (cross_entropy,mse)",
     .help_position = 6,
     .text = &PlanFlags::loss},
    {.key = "loss_output",
     .argument = "--loss-output",
     .type = PlanFlagType::kText,
     .help = "the graph value the loss reads (default: the first graph output); a "
             "floating-point output. Several, comma-separated, train several heads: the loss "
             "is the sum of one term per value",
     .help_position = 32,
     .text = &PlanFlags::loss_output},
    {.key = "zero_grad",
     .argument = "--zero-grad",
     .type = PlanFlagType::kText,
     .cli_default = "set_to_none",
     .help = "set_to_none | zero",
     .help_position = 7,
     .text = &PlanFlags::zero_grad},
    {.key = "allocator",
     .argument = "--allocator",
     .type = PlanFlagType::kText,
     .cli_default = "caching",
     .help = "caching (PyTorch's CUDA caching allocator) | expandable (the same with "
             "expandable_segments:True) | exact (live bytes)",
     .help_position = 8,
     .text = &PlanFlags::allocator},
    {.key = "alloc_conf",
     .argument = "--alloc-conf",
     .type = PlanFlagType::kText,
     .help = "PYTORCH_CUDA_ALLOC_CONF the run sets, modelled and written into the exports: "
             "expandable_segments:True | max_split_size_mb:N | roundup_power2_divisions:N, "
             "comma-separated",
     .help_position = 38,
     .text = &PlanFlags::alloc_conf},
    {.key = "recompute",
     .argument = "--recompute",
     .type = PlanFlagType::kText,
     .cli_default = "auto",
     .help_shows_default = true,
     .help = "none | all | sqrt | optimal | auto (optimal when the budget or the global batch "
             "needs it, none otherwise)",
     .help_position = 9,
     .text = &PlanFlags::recompute},
    {.key = "recompute_unit",
     .argument = "--recompute-unit",
     .type = PlanFlagType::kText,
     .cli_default = "auto",
     .help_shows_default = true,
     .help = "what recompute chooses: node (any node set) | module (whole blocks such as h.5, "
             "each one torch.utils.checkpoint: what the exports run) | auto (module when node "
             "names carry module scopes and --recompute is not sqrt, node otherwise)",
     .help_position = 10,
     .text = &PlanFlags::recompute_unit},
    {.key = "fp32_ops",
     .argument = "--fp32-ops",
     .type = PlanFlagType::kText,
     .help = "comma list of op types or node names forced to fp32 in mixed precision",
     .help_position = 11,
     .text = &PlanFlags::fp32_ops},
    {.key = "fp16_ops",
     .argument = "--fp16-ops",
     .type = PlanFlagType::kText,
     .help = "comma list of op types or node names forced to fp16/bf16",
     .help_position = 12,
     .text = &PlanFlags::fp16_ops},
    {.key = "loss_scaling",
     .argument = "--loss-scaling",
     .type = PlanFlagType::kText,
     .help = "none | dynamic | static:<scale> (or a bare scale such as 1024); default: dynamic "
             "for fp16, none for bf16",
     .help_position = 13,
     .text = &PlanFlags::loss_scaling},
    {.key = "clip_grad",
     .argument = "--clip-grad",
     .type = PlanFlagType::kSwitch,
     .help = "plan for gradient-norm clipping",
     .help_position = 14,
     .flag = &PlanFlags::clip_grad},
    {.key = "amp_mode",
     .argument = "--amp-mode",
     .type = PlanFlagType::kText,
     .help = "mixed-precision regime: autocast (fp32 parameters and gradients, per-op casts; "
             "default) | master-weights (half parameters and gradients + fp32 masters, as "
             "DeepSpeed) | pure (bf16 parameters, gradients and optimizer state)",
     .help_position = 15,
     .text = &PlanFlags::amp_mode},
    {.key = "headroom",
     .argument = "--headroom",
     .type = PlanFlagType::kText,
     .help = "memory the recommended micro-batch leaves unused below the budget: a percentage "
             "of it (default 5%) or a size (1G); 0 recommends the largest that fits",
     .help_position = 16,
     .text = &PlanFlags::headroom},
    // issue 43: the recommended micro-batch is the throughput knee (analyzer/planning/planner.h).
    {.key = "knee",
     .argument = "--knee",
     .type = PlanFlagType::kText,
     .cli_default = "2%",
     .help_shows_default = true,
     .help = "without --global-batch, recommend the smallest power-of-two micro-batch whose "
             "samples/s is within this share of the best (the largest that fits is shown "
             "beside it); 0 recommends the largest",
     .help_position = 39,
     .text = &PlanFlags::knee},
    // Data parallelism (analyzer/parallel/, docs/multi_gpu.md).
    {.key = "gpus",
     .argument = "--gpus",
     .type = PlanFlagType::kPositiveInt,
     .help = "data-parallel ranks (GPUs); the plan is per rank and the global batch is "
             "micro-batch x accumulation x GPUs",
     .help_position = 17,
     .integer = &PlanFlags::gpus},
    {.key = "parallel",
     .argument = "--parallel",
     .type = PlanFlagType::kText,
     .help = "ddp | zero1 | zero2 | zero3 | fsdp | hybrid-shard | auto (the fastest that "
             "fits; the default with --gpus)",
     .help_position = 18,
     .text = &PlanFlags::parallel},
    {.key = "nodes",
     .argument = "--nodes",
     .type = PlanFlagType::kPositiveInt,
     .help = "machines the --gpus span (collectives then cross the inter-node link); default 1",
     .help_position = 19,
     .integer = &PlanFlags::nodes},
    {.key = "engine_options",
     .argument = "--engine-options",
     .type = PlanFlagType::kText,
     .help = "engine settings of a --gpus plan, as the engines name them: "
             "bucket_cap_mb=50,reshard_after_forward=false (docs/multi_gpu.md)",
     .help_position = 30,
     .text = &PlanFlags::engine_options},
    {.key = "tp",
     .argument = "--tp",
     .type = PlanFlagType::kPositiveInt,
     .help = "tensor-parallel GPUs per model replica (Megatron-style: attention heads and MLP "
             "hidden units split T ways); needs --gpus N, a multiple of T (docs/multi_gpu.md)",
     .help_position = 31,
     .integer = &PlanFlags::tp},
    {.key = "attention",
     .argument = "--attention",
     .type = PlanFlagType::kText,
     .cli_default = "auto",
     .help_shows_default = true,
     .help = "eager | sdpa (recognised attention as PyTorch 2's scaled_dot_product_attention "
             "flash kernel: no S x S tensor saved) | auto (sdpa where attention is recognised)",
     .help_position = 20,
     .text = &PlanFlags::attention},
    {.key = "fused_loss",
     .argument = "--fused-loss",
     .type = PlanFlagType::kSwitch,
     .help = "plan the LM head and cross entropy as Liger's fused linear cross entropy "
             "(use_liger_kernel): chunked, no [batch, seq, vocab] logits; exit 2 without a head",
     .help_position = 29,
     .flag = &PlanFlags::fused_loss},
    // Recipes (analyzer/precision/loss_precision.h, docs/finetuning.md).
    {.key = "loss_dtype",
     .argument = "--loss-dtype",
     .type = PlanFlagType::kText,
     .cli_default = "auto",
     .help_shows_default = true,
     .help = "dtype the loss computes in: auto (fp32 under autocast and master weights; pure "
             "half keeps the logits' dtype unless the graph casts them to float) | fp32 (HF's "
             "logits.float()) | bf16 | fp16",
     .help_position = 33,
     .text = &PlanFlags::loss_dtype},
    {.key = "loss_chunks",
     .argument = "--loss-chunks",
     .type = PlanFlagType::kPositiveInt,
     .help = "torchtune's CEWithChunkedOutputLoss: cross entropy over this many chunks of "
             "tokens (torchtune: 8), each upcast to fp32 on its own",
     .help_position = 34,
     .integer = &PlanFlags::loss_chunks},
    {.key = "optimizer_in_backward",
     .argument = "--optimizer-in-backward",
     .type = PlanFlagType::kSwitch,
     .help = "torchtune's optimizer_in_bwd: step each parameter and free its gradient as soon "
             "as backward accumulated it (no accumulation, clipping or loss scaling)",
     .help_position = 35,
     .flag = &PlanFlags::optimizer_in_backward},
    {.key = "compile",
     .argument = "--compile",
     .type = PlanFlagType::kSwitch,
     .help = "torch.compile (Inductor): plan the saved set AOTAutograd's min-cut partitioner "
             "keeps (cheap pointwise chains recomputed in backward, ReLU's bool mask)",
     .help_position = 36,
     .flag = &PlanFlags::compile},
    {.key = "recompute_reentrant",
     .argument = "--recompute-reentrant",
     .type = PlanFlagType::kSwitch,
     .help = "checkpointed modules run torch.utils.checkpoint(use_reentrant=True): each re-run "
             "whole in backward, its recomputed outputs held through its inner backward (HF "
             "gradient_checkpointing_kwargs use_reentrant)",
     .help_position = 40,
     .flag = &PlanFlags::recompute_reentrant},
    {.key = "cuda_context",
     .argument = "--cuda-context",
     .type = PlanFlagType::kText,
     .cli_default = "lazy",
     .help_shows_default = true,
     .help = "the CUDA context the budget loses: lazy (CUDA_MODULE_LOADING=LAZY, PyTorch's "
             "default since CUDA 11.7) | eager (CUDA < 11.7 or LAZY unset) | a size (1.3G)",
     .help_position = 37,
     .text = &PlanFlags::cuda_context},
    // Host memory (analyzer/derivation/host_offload.h, docs/finetuning.md).
    {.key = "offload",
     .argument = "--offload",
     .type = PlanFlagType::kText,
     .cli_default = "none",
     .help_shows_default = true,
     .help = "what lives in pinned host memory: none | optimizer (DeepSpeed ZeRO-Offload: "
             "optimizer state and the parameter copies it updates, a CPU optimizer step) | "
             "optimizer+params (ZeRO-3 offload_param / FSDP CPUOffload: parameters too, "
             "fetched per block) | activations (torch.autograd.graph.save_on_cpu)",
     .help_position = 27,
     .text = &PlanFlags::offload},
    {.key = "offload_hooks",
     .argument = "--offload-hooks",
     .type = PlanFlagType::kText,
     .cli_default = "save-on-cpu",
     .help_shows_default = true,
     .help = "with --offload activations, whose hooks move the saved tensors: save-on-cpu "
             "(torch.autograd.graph.save_on_cpu: all of them) | torchtune "
             "(OffloadActivations(use_streams=False): >= 1024 bytes, no nn.Parameter, not the "
             "output head nor the loss; with module recompute the checkpointed blocks' inputs) "
             "| torchtune-streams (enable_activation_offloading: the copies on a second stream) "
             "| unsloth (use_gradient_checkpointing=\"unsloth\", with --recompute all "
             "--recompute-unit module --recompute-reentrant: each layer's input hidden states "
             "over 2 MiB but the last layer's)",
     .help_position = 41,
     .text = &PlanFlags::offload_hooks},
    // Fine-tuning (docs/finetuning.md).
    {.key = "train",
     .argument = "--train",
     .type = PlanFlagType::kText,
     .help = "train only the parameters whose name matches this ECMAScript regex (searched "
             "anywhere in the name); the rest are frozen",
     .help_position = 21,
     .text = &PlanFlags::train},
    {.key = "freeze",
     .argument = "--freeze",
     .type = PlanFlagType::kText,
     .help = "freeze the parameters whose name matches this regex (no gradient, no optimizer "
             "state)",
     .help_position = 22,
     .text = &PlanFlags::freeze},
    {.key = "lora",
     .argument = "--lora",
     .type = PlanFlagType::kPositiveInt,
     .help = "add LoRA adapters of this rank to the --lora-targets weights and freeze the base",
     .help_position = 23,
     .integer = &PlanFlags::lora},
    {.key = "lora_targets",
     .argument = "--lora-targets",
     .type = PlanFlagType::kText,
     .help = "regex over weight and node names choosing the LoRA targets (default: the "
             "attention projections q/k/v/o_proj, query/key/value, c_attn, ...)",
     .help_position = 24,
     .text = &PlanFlags::lora_targets},
    {.key = "base_dtype",
     .argument = "--base-dtype",
     .type = PlanFlagType::kText,
     .help = "storage of the frozen weights: fp32 | bf16 | fp16 | int8 | nf4 (QLoRA 4-bit)",
     .help_position = 25,
     .text = &PlanFlags::base_dtype},
    // Import (graph/fusion/fusion_table.h).
    {.key = "fusions",
     .argument = "--fusions",
     .type = PlanFlagType::kText,
     .cli_default = "ops",
     .help_shows_default = true,
     .help = "ops (exporters' decompositions of LayerNorm, GELU, SiLU, Hardswish and p=0 Dropout "
             "become the op PyTorch runs) | all (also hand-written RMSNorm and gelu_new, as fused "
             "kernels run them) | liger (ops, with RMSNorm and silu(gate) * up as Liger Kernel's "
             "functions: HF use_liger_kernel=True) | none (the graph as exported)",
     .help_position = 26,
     .text = &PlanFlags::fusions},
}};

const PlanFlagSpec& PlanFlagWithKey(std::string_view key) {
  for (const PlanFlagSpec& spec : kPlanFlagTable)
    if (spec.key == key) return spec;
  MEMPLAN_UNREACHABLE("no plan flag with this key");
  return kPlanFlagTable[0];
}

namespace {

std::string KnownKeys() {
  std::string keys;
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    if (!keys.empty()) keys += ", ";
    keys += spec.key;
  }
  return keys;
}

Expected<int64_t> PositiveInt(const nlohmann::json& value, const std::string& what) {
  if (!IsInt64(value) || value.get<int64_t>() < 1)
    return MakeError(what + " must be an integer >= 1");
  return value.get<int64_t>();
}

Expected<std::string> NonEmptyString(const nlohmann::json& value, const std::string& what) {
  if (!value.is_string() || value.get<std::string>().empty())
    return MakeError(what + " must be a non-empty string");
  return value.get<std::string>();
}

Status ReadFlag(const PlanFlagSpec& spec, const nlohmann::json& value, const std::string& what,
                PlanFlags& result) {
  switch (spec.type) {
    case PlanFlagType::kPositiveInt: {
      MEMPLAN_TRY(result.*spec.integer, PositiveInt(value, what));
      break;
    }
    case PlanFlagType::kText: {
      MEMPLAN_TRY(result.*spec.text, NonEmptyString(value, what));
      break;
    }
    case PlanFlagType::kDims:
      if (!value.is_object()) return MakeError(what + " must be an object of name: size");
      for (const auto& [name, size] : value.items()) {
        MEMPLAN_TRY(result.dims[name], PositiveInt(size, what + " '" + name + "'"));
      }
      break;
    case PlanFlagType::kSwitch:
      if (!value.is_boolean()) return MakeError(what + " must be true or false");
      result.*spec.flag = value.get<bool>();
      break;
  }
  return OkStatus();
}

}  // namespace

Expected<PlanFlags> PlanFlagsFromJson(const nlohmann::json& flags, const std::string& where) {
  if (!flags.is_object()) return MakeError(where + "'flags' must be an object");
  PlanFlags result;
  for (const auto& [key, value] : flags.items()) {
    const PlanFlagSpec* spec = nullptr;
    for (const PlanFlagSpec& s : kPlanFlagTable)
      if (s.key == key) spec = &s;
    if (spec == nullptr)
      return MakeError(where + "unknown flag '" + key + "' (known: " + KnownKeys() + ")");
    MEMPLAN_RETURN_IF_ERROR(ReadFlag(*spec, value, where + "flag '" + key + "'", result));
  }
  return result;
}

nlohmann::ordered_json PlanFlagsToJson(const PlanFlags& flags) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    const std::string key(spec.key);
    switch (spec.type) {
      case PlanFlagType::kPositiveInt:
        if (flags.*spec.integer) out[key] = *(flags.*spec.integer);
        break;
      case PlanFlagType::kText:
        if (flags.*spec.text) out[key] = *(flags.*spec.text);
        break;
      case PlanFlagType::kDims:
        if (!flags.dims.empty()) {
          nlohmann::ordered_json dims = nlohmann::ordered_json::object();
          for (const auto& [name, size] : flags.dims) dims[name] = size;
          out[key] = dims;
        }
        break;
      case PlanFlagType::kSwitch:
        if (flags.*spec.flag) out[key] = true;
        break;
    }
  }
  return out;
}

std::string PlanFlagsAsArguments(const PlanFlags& flags) {
  std::string out;
  auto add = [&out](std::string_view argument, const std::string& value) {
    if (!out.empty()) out += ' ';
    out += argument;
    if (!value.empty()) out += " " + value;
  };
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    switch (spec.type) {
      case PlanFlagType::kPositiveInt:
        if (flags.*spec.integer) add(spec.argument, std::to_string(*(flags.*spec.integer)));
        break;
      case PlanFlagType::kText:
        if (flags.*spec.text) add(spec.argument, *(flags.*spec.text));
        break;
      case PlanFlagType::kDims:
        for (const auto& [name, size] : flags.dims)
          add(spec.argument, name + "=" + std::to_string(size));
        break;
      case PlanFlagType::kSwitch:
        if (flags.*spec.flag) add(spec.argument, "");
        break;
    }
  }
  return out;
}

}  // namespace memplan
