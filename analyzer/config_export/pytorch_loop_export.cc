// A plain PyTorch training loop that runs the plan: micro-batches from the DataLoader,
// accumulation over k micro-batches (loss / k), autocast on the device train() is given +
// GradScaler for fp16 on the given device (autocast alone for bf16), the plan's optimizer over
// hyper-parameter constants the user sets (export_text.h), clipping of the unscaled gradients
// after the k-th micro-batch only, one scheduler step per optimizer step, and
// torch.utils.checkpoint on the planned modules (checkpoint_modules.h explains how ONNX node
// names become module paths): whole modules for a module plan, a selective policy on torch >= 2.4
// for a node plan (selective_recompute.h).

#include <string>
#include <vector>

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"
#include "analyzer/config_export/fine_tune_text.h"
#include "analyzer/config_export/selective_recompute.h"

namespace memplan::config_export {
namespace {

// A node-level plan recomputes single nodes, which a whole-module checkpoint cannot express: on
// torch >= 2.4 each module runs under a selective policy that recomputes the ATen ops of the
// plan's nodes in it and saves every other op's output (selective_recompute.h); older torch falls
// back to checkpointing the whole modules.
std::string SelectivePolicySection(const PlanReport& plan) {
  std::string out;
  out += R"py(# The plan recomputes single nodes, not whole modules. On torch >= 2.4 each module
# above runs under torch.utils.checkpoint with a selective policy
# (create_selective_checkpoint_contexts): the ATen ops of the plan's recomputed nodes in
# it are recomputed in backward (PREFER_RECOMPUTE) and every other op's output is saved
# (MUST_SAVE). A policy keys on the op, not the node: every call of a listed op inside
# the module is recomputed. Older torch has no such policy and falls back to
# checkpointing the whole modules, which recomputes every op in them: a lower peak and
# a longer step than the plan's.
TORCH_VERSION = tuple(int(part) for part in re.findall(r"\d+", torch.__version__)[:2])
SELECTIVE_CHECKPOINT = TORCH_VERSION >= (2, 4)
if SELECTIVE_CHECKPOINT:
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    CACHE_ENTRY_MUTATION = (
        {"allow_cache_entry_mutation": True}
        if "allow_cache_entry_mutation"
        in inspect.signature(create_selective_checkpoint_contexts).parameters
        else {}
    )

)py";
  std::vector<SelectiveModule> modules =
      SelectiveRecomputeOf(plan.checkpoints, plan.recompute_op_types);
  out += "RECOMPUTED_ATEN_OPS = {\n";
  for (const SelectiveModule& m : modules) {
    out += "    " + PythonString(m.module_path) + ": [";
    for (size_t i = 0; i < m.aten_ops.size(); ++i)
      out += (i == 0 ? "" : ", ") + PythonString(m.aten_ops[i]);
    out += "],\n";
  }
  out += "}\n";
  bool any_unmapped = false;
  for (const SelectiveModule& m : modules) any_unmapped |= !m.unmapped_nodes.empty();
  if (any_unmapped) {
    out += "# Recomputed nodes whose op has no known ATen op: the policy saves them instead.\n";
    for (const SelectiveModule& m : modules)
      for (const std::string& node : m.unmapped_nodes) out += "#   " + CommentSafe(node) + "\n";
  }
  out += "\n\n";
  out += R"py(def recomputes(op, module_path):
    """Whether the policy recomputes `op`, an ATen OpOverload such as
    torch.ops.aten.mm.default, inside the module at module_path."""
    return str(op.overloadpacket) in RECOMPUTED_ATEN_OPS.get(module_path, ())


def selective_context_fn(module_path):
    """checkpoint's context_fn for the module at module_path (torch >= 2.4)."""

    def policy(ctx, op, *args, **kwargs):
        if recomputes(op, module_path):
            return CheckpointPolicy.PREFER_RECOMPUTE
        return CheckpointPolicy.MUST_SAVE

    # Every other op's output is saved, also one an in-place op then mutates (ReLU(inplace=True)
    # on a saved output; dropout off CUDA: empty_like, then bernoulli_ and div_ in place). By
    # default torch raises on reading such an entry in backward ("Tensor cached during selective
    # activation checkpoint has been mutated"); the entry holds the mutated storage, the value
    # forward left there, and autograd already forbids mutating a tensor an op saved, so it is
    # allowed here.
    return functools.partial(create_selective_checkpoint_contexts, policy,
                             **CACHE_ENTRY_MUTATION)
)py";
  return out;
}

}  // namespace

std::string PytorchRecomputeImports(const PlanReport& plan) {
  if (!plan.UsesRecompute() || plan.ModuleUnit()) return "";
  return "import functools\nimport inspect\nimport re\n\n";
}

std::string PytorchRecomputeSection(const PlanReport& plan) {
  std::string out;
  // A module plan simulated exactly torch.utils.checkpoint on whole modules.
  const bool selective = plan.UsesRecompute() && !plan.ModuleUnit();
  if (!plan.UsesRecompute()) {
    out += "# The plan recomputes nothing: every activation is kept for backward.\n";
  } else {
    out += "# Modules whose activations are recomputed in backward, from the plan's recompute\n";
    out += "# nodes (ONNX names carry the module path: /layer3/layer3.1/conv1/Conv -> layer3.1):\n";
    for (const CheckpointModule& m : plan.checkpoints.modules) {
      out += "#   " + CommentSafe(m.module_path) + ": ";
      for (size_t i = 0; i < m.nodes.size(); ++i)
        out += (i == 0 ? "" : ", ") + CommentSafe(m.nodes[i]);
      out += "\n";
    }
    if (!plan.checkpoints.unmapped_nodes.empty()) {
      out += "# Recomputed nodes without a module scope (wrap their code by hand):\n";
      for (const std::string& node : plan.checkpoints.unmapped_nodes)
        out += "#   " + CommentSafe(node) + "\n";
    }
  }
  out += CheckpointedModulesConstant(plan);
  if (selective) out += "\n" + SelectivePolicySection(plan);
  out += "\n\n";
  out += EnableRecomputeFunction(selective, plan.recompute_reentrant);
  return out;
}

std::string ExportPytorchLoop(const PlanReport& plan, const ExportOptions& options) {
  // --amp-mode pure: the parameters themselves are half (model.to(dtype)), no autocast and no
  // scaler (GradScaler refuses half gradients).
  const bool pure = plan.amp_mode == AmpMode::kPure;
  const bool fp16 = plan.precision == Precision::kFp16 && !pure;
  const bool autocast = plan.precision != Precision::kFp32 && !pure;

  std::string out = "# " + ProvenanceSentence(plan, options) + "\n";
  out += "# Provide model, dataset, loss_fn(outputs, targets), make_scheduler(optimizer) and the\n";
  out += "# hyper-parameters below; the rest is the plan memplan simulated.\n";
  out += PytorchRecomputeImports(plan);
  out += AllocConfLines(plan);
  out += "import torch\n";
  out += "from torch.utils.checkpoint import checkpoint\n";
  out += "from torch.utils.data import DataLoader\n";
  out += FineTuneImports(plan);
  out += "\n";
  out += "MICRO_BATCH = " + std::to_string(plan.micro_batch) + "\n";
  out += "ACCUMULATION_STEPS = " + std::to_string(plan.accumulation_steps) +
         "  # one optimizer step per " + std::to_string(plan.SamplesPerStep()) + " samples\n";
  out += ScriptConstantsAndOptimizer(plan, options, PytorchRecomputeSection(plan));
  out += TrainOneEpochHead(plan, /*commented=*/true);
  out +=
      "        # Dividing by k makes the k accumulated gradients an average, as one big batch's.\n";
  // --offload activations: every tensor autograd saves goes to pinned host memory when saved
  // and comes back for its backward (torch.autograd.graph.save_on_cpu).
  std::vector<std::string> contexts;
  if (plan.offload == OffloadMode::kActivations)
    contexts.push_back("torch.autograd.graph.save_on_cpu(pin_memory=True)");
  if (autocast) {
    // The device type of the device train() was given: "cuda" for "cuda:1", "cpu" for "cpu".
    contexts.push_back("torch.autocast(device_type=torch.device(device).type, dtype=" +
                       std::string(TorchDtype(plan.precision)) + ")");
  }
  if (!contexts.empty()) {
    if (plan.offload == OffloadMode::kActivations)
      out += "        # Saved tensors go to pinned host memory and come back for backward.\n";
    out += "        with ";
    for (size_t i = 0; i < contexts.size(); ++i) out += (i == 0 ? "" : ", ") + contexts[i];
    out += ":\n";
    out += "            loss = loss_fn(model(inputs), targets) / ACCUMULATION_STEPS\n";
  } else if (plan.UpcastsLoss()) {
    // --loss-dtype fp32 in a pure plan: the loss runs on an fp32 copy of the logits.
    out +=
        "        # The plan's loss runs in fp32 on a copy of the bf16 logits (HF's "
        "logits.float()).\n";
    out += "        loss = loss_fn(model(inputs).float(), targets) / ACCUMULATION_STEPS\n";
  } else {
    out += "        loss = loss_fn(model(inputs), targets) / ACCUMULATION_STEPS\n";
  }
  out += fp16 ? "        scaler.scale(loss).backward()\n" : "        loss.backward()\n";
  out += "        if (index + 1) % ACCUMULATION_STEPS != 0:\n";
  out += "            continue  # keep accumulating: no clipping or step on a partial sum\n";
  out += OptimizerStepLines(plan, options, /*scale=*/fp16, /*commented=*/true);

  out += "def train(model, dataset, loss_fn, make_scheduler, epochs=1, device=\"cuda\"):\n";
  out += PrepareModelLines(plan, pure, /*sharded=*/false);
  if (fp16) {
    // torch.amp.GradScaler(device_type) (torch >= 2.3) scales on the CPU too, where torch 2.x's
    // autocast runs float16; torch.cuda.amp.GradScaler, its only spelling before, scales on CUDA.
    out +=
        "    # Dynamic loss scaling (initial scale 2**16) on the device train() was given; torch\n";
    out += "    # before 2.3 has torch.cuda.amp.GradScaler only, which scales on CUDA alone.\n";
    out += "    if hasattr(torch.amp, \"GradScaler\"):\n";
    out += "        scaler = torch.amp.GradScaler(torch.device(device).type)\n";
    out += "    else:\n";
    out +=
        "        scaler = torch.cuda.amp.GradScaler(enabled=torch.device(device).type == "
        "\"cuda\")\n";
  } else {
    out += "    scaler = None  # " +
           std::string(pure       ? "pure half training: no loss scaling"
                       : autocast ? "bf16 has fp32's range: no loss scaling"
                                  : "fp32 training: no loss scaling") +
           "\n";
  }
  out += DataLoaderLine(options, "shuffle=True");
  out += "    for _ in range(epochs):\n";
  out += "        train_one_epoch(model, loader, loss_fn, optimizer, scheduler, scaler, device)\n";
  return out;
}

}  // namespace memplan::config_export
