// A plain PyTorch training loop that runs the plan: micro-batches from the DataLoader,
// accumulation over k micro-batches (loss / k), autocast on the device train() is given +
// GradScaler for fp16 on CUDA (autocast alone for bf16), the plan's optimizer over
// hyper-parameter constants the user sets (export_text.h), clipping of the unscaled gradients
// after the k-th micro-batch only, one scheduler step per optimizer step, and
// torch.utils.checkpoint on the planned modules (checkpoint_modules.h explains how ONNX node
// names become module paths).

#include <string>
#include <vector>

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"

namespace memplan::config_export {
namespace {

std::string RecomputeSection(const ExportPlan& plan) {
  std::string out;
  if (!plan.UsesRecompute()) {
    out += "# The plan recomputes nothing: every activation is kept for backward.\n";
    out += "CHECKPOINTED_MODULES = []\n";
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
    out += "CHECKPOINTED_MODULES = [\n";
    for (const CheckpointModule& m : plan.checkpoints.modules)
      out += "    " + PythonString(m.module_path) + ",\n";
    out += "]\n";
  }
  out += "\n\n";
  out += "def enable_recompute(model, module_paths=CHECKPOINTED_MODULES):\n";
  out +=
      "    \"\"\"Runs each listed submodule under torch.utils.checkpoint: its inner activations "
      "are\n";
  out += "    freed after forward and recomputed during backward.\"\"\"\n";
  out += "    for path in module_paths:\n";
  out += "        module = model.get_submodule(path)\n";
  out += "        forward = module.forward\n\n";
  out += "        def checkpointed_forward(*args, _forward=forward, **kwargs):\n";
  out += "            return checkpoint(_forward, *args, use_reentrant=False, **kwargs)\n\n";
  out += "        module.forward = checkpointed_forward\n";
  return out;
}

}  // namespace

std::string ExportPytorchLoop(const ExportPlan& plan, const ExportOptions& options) {
  // --amp-mode pure: the parameters themselves are half (model.to(dtype)), no autocast and no
  // scaler (GradScaler refuses half gradients).
  const bool pure = plan.amp_mode == AmpMode::kPure;
  const bool fp16 = plan.precision == Precision::kFp16 && !pure;
  const bool autocast = plan.precision != Precision::kFp32 && !pure;
  const bool clip = options.max_grad_norm > 0;
  const std::string set_to_none = plan.zero_grad_set_to_none ? "True" : "False";

  std::string out = "# " + ProvenanceSentence(plan, options) + "\n";
  out += "# Provide model, dataset, loss_fn(outputs, targets), make_scheduler(optimizer) and the\n";
  out += "# hyper-parameters below; the rest is the plan memplan simulated.\n";
  out += "import torch\n";
  out += "from torch.utils.checkpoint import checkpoint\n";
  out += "from torch.utils.data import DataLoader\n\n";
  out += "MICRO_BATCH = " + std::to_string(plan.micro_batch) + "\n";
  out += "ACCUMULATION_STEPS = " + std::to_string(plan.accumulation_steps) +
         "  # one optimizer step per " + std::to_string(plan.SamplesPerStep()) + " samples\n";
  if (clip) out += "MAX_GRAD_NORM = " + PythonFloat(options.max_grad_norm) + "\n";
  out += HyperParameterConstants(plan, options);
  out += "\n";
  out += RecomputeSection(plan);
  out += "\n\n";
  out += MakeOptimizerFunction(plan, options);
  out += "\n\n";
  out += "def train_one_epoch(model, loader, loss_fn, optimizer, scheduler, scaler, device):\n";
  out += "    model.train()\n";
  out +=
      "    # Also drops gradients of a partial accumulation left over from the previous epoch.\n";
  out += "    optimizer.zero_grad(set_to_none=" + set_to_none + ")\n";
  out += "    for index, (inputs, targets) in enumerate(loader):\n";
  out += "        inputs = inputs.to(device, non_blocking=True)\n";
  out += "        targets = targets.to(device, non_blocking=True)\n";
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
  } else {
    out += "        loss = loss_fn(model(inputs), targets) / ACCUMULATION_STEPS\n";
  }
  out += fp16 ? "        scaler.scale(loss).backward()\n" : "        loss.backward()\n";
  out += "        if (index + 1) % ACCUMULATION_STEPS != 0:\n";
  out += "            continue  # keep accumulating: no clipping or step on a partial sum\n";
  if (clip) {
    if (fp16) out += "        scaler.unscale_(optimizer)  # clip the true gradients, not scaled\n";
    out += "        torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)\n";
  }
  if (fp16) {
    out += "        scaler.step(optimizer)  # skipped when the gradients overflowed\n";
    out += "        scaler.update()\n";
  } else {
    out += "        optimizer.step()\n";
  }
  out += "        scheduler.step()  # once per optimizer step, not per micro-batch\n";
  out += "        optimizer.zero_grad(set_to_none=" + set_to_none + ")\n\n\n";

  out += "def train(model, dataset, loss_fn, make_scheduler, epochs=1, device=\"cuda\"):\n";
  if (pure) {
    out += "    model.to(device=device, dtype=" + std::string(TorchDtype(plan.precision)) +
           ")  # parameters, gradients and optimizer state in half\n";
  } else {
    out += "    model.to(device)\n";
  }
  out += "    enable_recompute(model)\n";
  out += "    optimizer = make_optimizer(model.parameters())\n";
  out += "    scheduler = make_scheduler(optimizer)\n";
  if (fp16) {
    out += "    # Dynamic loss scaling (initial scale 2**16) on CUDA; torch >= 2.4 spells it\n";
    out += "    # torch.amp.GradScaler(\"cuda\"). Off the GPU it passes the loss through.\n";
    out +=
        "    scaler = torch.cuda.amp.GradScaler(enabled=torch.device(device).type == \"cuda\")\n";
  } else {
    out += "    scaler = None  # " +
           std::string(pure       ? "pure half training: no loss scaling"
                       : autocast ? "bf16 has fp32's range: no loss scaling"
                                  : "fp32 training: no loss scaling") +
           "\n";
  }
  out += "    loader = DataLoader(dataset, batch_size=MICRO_BATCH, shuffle=True, num_workers=" +
         std::to_string(options.dataloader_num_workers) +
         ", pin_memory=" + (options.pin_memory ? "True" : "False") + ", drop_last=True)\n";
  out += "    for _ in range(epochs):\n";
  out += "        train_one_epoch(model, loader, loss_fn, optimizer, scheduler, scaler, device)\n";
  return out;
}

}  // namespace memplan::config_export
