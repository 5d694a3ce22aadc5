// The PyTorch target for a data-parallel plan: a training script that runs under torchrun, one
// process per GPU, as the per-rank program memplan simulated (docs/multi_gpu.md).
//
//  * ddp: torch DistributedDataParallel with the plan's bucket_cap_mb and
//    gradient_as_bucket_view; no_sync() on all but the last micro-batch of an accumulation (the
//    cost model assumes it).
//  * fsdp / hybrid-shard: FSDP2 (fully_shard) over a 1-D DeviceMesh of every rank, or a 2-D mesh
//    (replicate = nodes, shard = GPUs per node) for hybrid-shard (HSDP). fully_shard is applied
//    to each wrapped unit, then to the root: a module becomes a unit once the parameters it holds
//    outside units already made reach min_num_params, visiting children first (what
//    size_based_auto_wrap_policy does for the other FSDP exports; memplan's units group
//    parameters in forward order up to the same size); with auto_wrap_policy=transformer,
//    fully_shard on every block (the shallowest module whose path ends in an index, memplan's
//    unit). Every micro-batch reduce-scatters, as
//    FSDP2 does by default and as memplan planned.
//  * Mixed precision: autocast plans run torch.autocast with fp32 parameters gathered
//    (MixedPrecisionPolicy() leaves them fp32, as planned); master-weights plans gather half
//    copies of fp32 shards (MixedPrecisionPolicy(param_dtype=half, reduce_dtype=half)); pure
//    plans move the model to half first. fp16 scales the loss (ShardedGradScaler under FSDP).
//
// Each rank reads MICRO_BATCH samples per micro-batch through a DistributedSampler, so one
// optimizer step consumes micro-batch x accumulation x GPUs samples, the plan's global batch.
// Recompute is the PyTorch loop's section (PytorchRecomputeSection: torch.utils.checkpoint per
// planned module, under the selective policy for a node plan), applied before wrapping; an
// activation-offload plan runs forward and loss under save_on_cpu, as the loop does.

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"
#include "analyzer/config_export/fine_tune_text.h"

namespace memplan::config_export {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// How the script runs the plan's precision.
struct PrecisionRecipe {
  bool autocast = false;      // torch.autocast around forward and loss
  bool fsdp_mp_half = false;  // MixedPrecisionPolicy(param_dtype=half, reduce_dtype=half)
  bool pure = false;          // model.to(half) before wrapping
  bool scale = false;         // fp16 loss scaling
};

PrecisionRecipe RecipeOf(const PlanReport& plan) {
  PrecisionRecipe r;
  if (plan.precision == Precision::kFp32) return r;
  const AmpMode mode = plan.amp_mode.value_or(AmpMode::kAutocast);
  r.pure = mode == AmpMode::kPure;
  r.fsdp_mp_half = mode == AmpMode::kMasterWeights;
  r.autocast = mode == AmpMode::kAutocast;
  r.scale = plan.precision == Precision::kFp16 && !r.pure;
  return r;
}

std::string LaunchComment(const PlanReport& plan) {
  const int64_t per_node = plan.Gpus() / plan.Nodes();
  std::string out = "# Launch (torchrun starts one process per GPU";
  if (plan.Nodes() > 1) {
    out += "; run it on each of the " + std::to_string(plan.Nodes()) +
           " machines with its NODE_RANK, 0 to " + std::to_string(plan.Nodes() - 1) + "):\n";
    out += "#   torchrun --nproc-per-node " + std::to_string(per_node) + " --nnodes " +
           std::to_string(plan.Nodes()) +
           " --node-rank NODE_RANK --master-addr HOST --master-port 29500 train.py\n";
  } else {
    out += "):\n";
    out += "#   torchrun --nproc-per-node " + std::to_string(per_node) + " --nnodes 1 train.py\n";
  }
  out += "# where train.py imports this file and calls train(model, dataset, loss_fn,\n";
  out += "# make_scheduler).\n";
  return out;
}

std::string SetupFunction() {
  return R"py(def setup():
    """Joins the process group torchrun describes (RANK, WORLD_SIZE, LOCAL_RANK)."""
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    if dist.get_world_size() != GPUS and dist.get_rank() == 0:
        print(f"memplan planned {GPUS} ranks; running {dist.get_world_size()}: the "
              "per-rank memory and the global batch differ from the plan")
    return device
)py";
}

std::string FsdpWrapFunction(const PlanReport& plan, const PrecisionRecipe& r) {
  const bool hybrid = ShardsWithinNode(plan.data_parallel->strategy);
  std::string out;
  out += "def shard_model(model, device):\n";
  if (hybrid) {
    out += R"py(    """HSDP: a 2-D mesh, replicas across the NODES machines, shards over the GPUs
    of each; fully_shard on each unit, then the root."""
    world = dist.get_world_size()
    replicas = NODES if world % NODES == 0 else 1
    mesh = init_device_mesh(device.type, (replicas, world // replicas),
                            mesh_dim_names=("replicate", "shard"))
)py";
  } else {
    out += R"py(    """FSDP2 over every rank: fully_shard on each unit, then the root."""
    mesh = init_device_mesh(device.type, (dist.get_world_size(),),
                            mesh_dim_names=("shard",))
)py";
  }
  if (r.fsdp_mp_half) {
    const std::string dtype(TorchDtype(plan.precision));
    out += "    # Half copies of the fp32 shards are gathered and reduced; the optimizer updates\n";
    out += "    # the fp32 shards (the plan's master weights).\n";
    out += "    policy = MixedPrecisionPolicy(param_dtype=" + dtype + ", reduce_dtype=" + dtype +
           ")\n";
  } else {
    out += "    # No casting by FSDP: parameters are gathered in their own dtype, as planned.\n";
    out += "    policy = MixedPrecisionPolicy()\n";
  }
  out += "\n";
  if (plan.data_parallel->fsdp_wrap_blocks) {
    // transformer_auto_wrap_policy as FSDP2 scripts write it: fully_shard on every block. A
    // block is what memplan's units are: the shallowest module whose path ends in an index.
    out += R"py(    for name, module in model.named_modules():
        parts = name.split(".")
        if name and parts[-1].isdigit() and not any(p.isdigit() for p in parts[:-1]):
            fully_shard(module, mesh=mesh, mp_policy=policy,
                        reshard_after_forward=RESHARD_AFTER_FORWARD)
)py";
  } else {
    out += R"py(    def wrap_units(module):
        # Parameters held by `module` outside the units made below it.
        held = sum(wrap_units(child) for child in module.children())
        held += sum(p.numel() for p in module.parameters(recurse=False))
        if module is not model and held >= MIN_NUM_PARAMS:
            fully_shard(module, mesh=mesh, mp_policy=policy,
                        reshard_after_forward=RESHARD_AFTER_FORWARD)
            return 0
        return held

    wrap_units(model)
)py";
  }
  out += R"py(    fully_shard(model, mesh=mesh, mp_policy=policy,
                reshard_after_forward=RESHARD_AFTER_FORWARD)
    return model
)py";
  return out;
}

std::string DdpWrapFunction() {
  return R"py(def shard_model(model, device):
    """DDP replicas; gradients all-reduced in buckets of BUCKET_CAP_MB."""
    return DistributedDataParallel(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        bucket_cap_mb=BUCKET_CAP_MB,
        gradient_as_bucket_view=GRADIENT_AS_BUCKET_VIEW,
    )
)py";
}

// The script's header comments: provenance, the strategy over the GPUs, how to launch, torch.
std::string TorchrunHeader(const PlanReport& plan, const ExportOptions& options) {
  const DataParallelOptions& dp = *plan.data_parallel;
  const bool ddp = dp.strategy == ParallelStrategy::kDdp;
  const std::string strategy(ParallelStrategyName(dp.strategy));
  std::string out = "# " + ProvenanceSentence(plan, options) + "\n";
  out += "# " + strategy + " on " + std::to_string(plan.Gpus()) +
         (plan.Gpus() == 1 ? " GPU (" : " GPUs (") + std::to_string(plan.Nodes()) +
         (plan.Nodes() == 1 ? " node" : " nodes") + ", " +
         std::to_string(plan.Gpus() / plan.Nodes()) + " per node): " +
         (ddp ? "DistributedDataParallel"
          : ShardsWithinNode(dp.strategy)
              ? "FSDP2 fully_shard on a 2-D mesh (HSDP: sharded within a node, replicated across)"
              : "FSDP2 fully_shard on a 1-D mesh") +
         ".\n";
  out += LaunchComment(plan);
  if (ddp) {
    out += "# Needs torch >= 2.0 (the hyphenated torchrun options).\n";
  } else {
    out +=
        "# Needs torch >= 2.4 (fully_shard in torch.distributed._composable.fsdp); torch >= 2.6\n";
    out += "# exports it as torch.distributed.fsdp.fully_shard.\n";
  }
  out += "# Provide model, dataset, loss_fn(outputs, targets), make_scheduler(optimizer) and the\n";
  out += "# hyper-parameters below; the rest is the plan memplan simulated per rank.\n";
  return out;
}

// The imports: the standard library the script uses, torch.distributed, the wrapper's module.
std::string TorchrunImports(const PlanReport& plan, const PrecisionRecipe& r, bool ddp) {
  // A node plan's selective policy (PytorchRecomputeSection) needs functools, inspect and re.
  const bool selective = !PytorchRecomputeImports(plan).empty();
  std::string out;
  if (ddp) out += "import contextlib\n";  // no_sync on all but the last micro-batch
  if (selective) out += "import functools\nimport inspect\n";
  out += "import os\n";
  if (selective) out += "import re\n";
  out += "\n";
  out += AllocConfLines(plan, /*imports_os=*/true);
  out += "import torch\n";
  out += "import torch.distributed as dist\n";
  if (ddp) {
    out += "from torch.nn.parallel import DistributedDataParallel\n";
  } else {
    out += "from torch.distributed.device_mesh import init_device_mesh\n";
    if (r.scale)
      out += "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n";
  }
  out += "from torch.utils.checkpoint import checkpoint\n";
  out += "from torch.utils.data import DataLoader\n";
  out += "from torch.utils.data.distributed import DistributedSampler\n";
  out += FineTuneImports(plan);
  if (!ddp) {
    out += "\n";
    out += "try:  # torch >= 2.6\n";
    out += "    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard\n";
    out += "except ImportError:  # torch 2.4, 2.5\n";
    out += "    from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard\n";
  }
  out += "\n";
  return out;
}

// The plan's constants: the group, the batch per rank and the wrapper's settings.
std::string TorchrunConstants(const PlanReport& plan) {
  const DataParallelOptions& dp = *plan.data_parallel;
  std::string out;
  out += "GPUS = " + std::to_string(plan.Gpus()) + "\n";
  out += "NODES = " + std::to_string(plan.Nodes()) + "\n";
  out += "MICRO_BATCH = " + std::to_string(plan.micro_batch) + "  # per rank\n";
  out += "ACCUMULATION_STEPS = " + std::to_string(plan.accumulation_steps) +
         "  # one optimizer step per " + std::to_string(plan.SamplesPerStep()) +
         " samples over all ranks\n";
  if (dp.strategy == ParallelStrategy::kDdp) {
    // DDP's bucket_cap_mb is MiB; a whole number is written as an int, as users write it.
    const std::string cap =
        dp.ddp_bucket_cap_bytes % kMiB == 0
            ? std::to_string(dp.ddp_bucket_cap_bytes / kMiB)
            : PythonFloat(static_cast<double>(dp.ddp_bucket_cap_bytes) / static_cast<double>(kMiB));
    out += "BUCKET_CAP_MB = " + cap + "\n";
    out += std::string("GRADIENT_AS_BUCKET_VIEW = ") +
           (dp.ddp_gradient_as_bucket_view ? "True" : "False") + "\n";
  } else {
    if (!dp.fsdp_wrap_blocks)
      out += "MIN_NUM_PARAMS = " + std::to_string(dp.fsdp_min_unit_parameters) +
             "  # FSDP unit size (size_based_auto_wrap_policy's min_num_params)\n";
    out += std::string("RESHARD_AFTER_FORWARD = ") + (dp.reshard_after_forward ? "True" : "False") +
           "  # False: parameters stay gathered from forward to backward\n";
  }
  return out;
}

// train_one_epoch: the micro-batches of an accumulation, all-reduced (DDP) on the last only.
std::string TorchrunEpochFunction(const PlanReport& plan, const ExportOptions& options,
                                  const PrecisionRecipe& r, bool ddp) {
  std::string out = TrainOneEpochHead(plan, /*commented=*/false);
  out += "        last = (index + 1) % ACCUMULATION_STEPS == 0\n";
  std::string indent = "        ";
  if (ddp) {
    out += "        # All-reduce only on the last micro-batch of an accumulation.\n";
    out += "        with contextlib.nullcontext() if last else model.no_sync():\n";
    indent += "    ";
  }
  // --offload activations: every tensor autograd saves goes to pinned host memory, as in the
  // single-GPU loop (torch.autograd.graph.save_on_cpu).
  std::vector<std::string> contexts;
  if (plan.offload == OffloadMode::kActivations)
    contexts.push_back("torch.autograd.graph.save_on_cpu(pin_memory=True)");
  if (r.autocast)
    contexts.push_back("torch.autocast(device_type=device.type, dtype=" +
                       std::string(TorchDtype(plan.precision)) + ")");
  if (!contexts.empty()) {
    if (plan.offload == OffloadMode::kActivations)
      out += indent + "# Saved tensors go to pinned host memory and come back for backward.\n";
    out += indent + "with ";
    for (size_t i = 0; i < contexts.size(); ++i) out += (i == 0 ? "" : ", ") + contexts[i];
    out += ":\n";
    out += indent + "    loss = loss_fn(model(inputs), targets) / ACCUMULATION_STEPS\n";
  } else {
    out += indent + "loss = loss_fn(model(inputs), targets) / ACCUMULATION_STEPS\n";
  }
  out += indent + (r.scale ? "scaler.scale(loss).backward()\n" : "loss.backward()\n");
  out += "        if not last:\n";
  out += "            continue\n";
  out += OptimizerStepLines(plan, options, r.scale, /*commented=*/false);
  return out;
}

// train(): the process group, the wrapped model, the scaler, the sampler and the epochs.
std::string TorchrunEntryPoint(const PlanReport& plan, const ExportOptions& options,
                               const PrecisionRecipe& r, bool ddp) {
  std::string out = "def train(model, dataset, loss_fn, make_scheduler, epochs=1):\n";
  out += "    device = setup()\n";
  out += PrepareModelLines(plan, r.pure, /*sharded=*/true);
  if (r.scale) {
    // Scaling on the rank's device, the CPU (gloo) included: torch.amp.GradScaler(device_type)
    // is torch >= 2.3, ShardedGradScaler's device argument >= 2.1 (FSDP2 needs newer still).
    if (ddp) {
      out += "    if hasattr(torch.amp, \"GradScaler\"):\n";
      out += "        scaler = torch.amp.GradScaler(device.type)\n";
      out += "    else:  # torch < 2.3 scales on CUDA only\n";
      out += "        scaler = torch.cuda.amp.GradScaler(enabled=device.type == \"cuda\")\n";
    } else {
      out += "    scaler = ShardedGradScaler(device.type)\n";
    }
  } else {
    out += "    scaler = None\n";
  }
  out += "    sampler = DistributedSampler(dataset, shuffle=True, drop_last=True)\n";
  out += DataLoaderLine(options, "sampler=sampler");
  out += "    for epoch in range(epochs):\n";
  out +=
      "        sampler.set_epoch(epoch)  # a different shuffle per epoch, the same on every rank\n";
  out += "        train_one_epoch(model, loader, loss_fn, optimizer, scheduler, scaler, device)\n";
  out += "    dist.destroy_process_group()\n";
  out += "    return model\n";
  return out;
}

}  // namespace

std::string ExportTorchrunScript(const PlanReport& plan, const ExportOptions& options) {
  MEMPLAN_CHECK(plan.data_parallel.has_value());
  const bool ddp = plan.data_parallel->strategy == ParallelStrategy::kDdp;
  const PrecisionRecipe r = RecipeOf(plan);
  std::string out = TorchrunHeader(plan, options);
  out += TorchrunImports(plan, r, ddp);
  out += TorchrunConstants(plan);
  out += ScriptConstantsAndOptimizer(plan, options, PytorchRecomputeSection(plan));
  out += SetupFunction();
  out += "\n\n";
  out += ddp ? DdpWrapFunction() : FsdpWrapFunction(plan, r);
  out += "\n\n";
  out += TorchrunEpochFunction(plan, options, r, ddp);
  out += TorchrunEntryPoint(plan, options, r, ddp);
  return out;
}

}  // namespace memplan::config_export
