#pragma once
// Derives the TrainingProgram of one optimizer step from a Graph: forward in topological order,
// the loss appended to the model output, backward in reverse over the nodes that need gradients,
// gradient accumulation over k micro-batches, then unscale/clip/optimizer/zero. Op facts (saved
// tensors, input gradients, workspace, views, AMP category) come only from the op registry.
//
// Usage:
//   ProgramOptions options;
//   options.optimizer = OptimizerKind::kAdamW;
//   options.precision = Precision::kBf16;
//   options.accumulation_steps = 4;
//   MEMPLAN_TRY(TrainingProgram program, DeriveTrainingProgram(graph, options));
//   Bindings bindings(&program.symbols);
//   bindings.Bind(*program.batch_symbol, 8);
//   ExactAllocator exact;
//   MEMPLAN_TRY(SimulationResult result, Simulate(program, bindings, exact));
//
// Memory model (documented in docs/training_program.md):
//  * Forward values are freed after their last forward use unless a backward step reads them
//    (saved tensors, stored once however many ops save them) or a recompute step re-reads them
//    (checkpoints). Views allocate nothing and keep their base alive. Constants cost nothing.
//  * Mixed precision (fp16/bf16): every parameter has a persistent fp32 master and a working copy
//    in the working dtype; ops run in the working dtype (kFp16Safe), fp32 (kFp32Required) or the
//    widest dtype of their activation inputs (kFollowInputs); views keep their input's dtype.
//    An input whose dtype differs from the op's is cast into a buffer allocated by the first
//    forward op that needs it and shared by every later forward reader of the same (value,
//    dtype); it is freed after its last use, or held for backward when a reader saves it.
//    Recompute steps cast their own inputs. Gradients are in the dtype of the value; parameter
//    gradients in the working dtype.
//    The optimizer runs in fp32 on the masters and is fused by default (reads the working-dtype
//    gradient, updates the master and states, refreshes the working copy, no fp32 gradient
//    buffer): mixed Adam costs exactly ZeRO's 2 + 2 + 4 + 4 + 4 = 16 bytes per parameter.
//  * The regime (--amp-mode, analyzer/precision/amp_regime.h) says where parameters, gradients
//    and optimizer state live: the above is master-weights; autocast keeps fp32 parameters and
//    gradients and casts weights once per forward (freed after the loss unless saved); pure bf16
//    keeps everything in bf16 with no master.
//  * Loss scaling (analyzer/program/loss_scaling.h; default dynamic for fp16, none for bf16):
//    dynamic keeps scale + growth tracker and makes found_inf and inv_scale at unscale; static
//    makes found_inf only.
//  * Offload (--offload, ProgramOptions::offload): buffers in pinned host memory
//    (Buffer::space) and kTransfer steps for every copy; activations are packed and unpacked by
//    step emission (derivation/saved_tensor_offload.h), the optimizer modes rewrite the derived
//    program (derivation/host_offload.h).

#include <optional>
#include <string>
#include <vector>

#include "analyzer/offload/offload_options.h"
#include "analyzer/parallel/data_parallel_options.h"
#include "analyzer/precision/amp_regime.h"
#include "analyzer/precision/precision_placement.h"
#include "analyzer/program/loss_scaling.h"
#include "analyzer/program/training_program.h"
#include "analyzer/vocabulary/base_dtype.h"
#include "analyzer/vocabulary/loss_dtype.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

class OpRegistry;

// How mixed-precision optimizers obtain fp32 gradients for the master update.
enum class MasterGradientMode : uint8_t {
  kFused,     // the fused update reads working-dtype gradients directly: no extra buffer
  kFullCopy,  // fp32 copies of all gradients live during the optimizer step (apex-style)
};

struct ProgramOptions {
  // The loss appended to the model output. kAuto: cross entropy when the output is [batch,
  // classes] or [batch, seq, vocab] logits (rank 2 or 3, floating), mean squared error otherwise.
  LossKind loss = LossKind::kAuto;
  // The values the loss reads; empty = the graph's first output. With several, the loss is the
  // sum of one term per value (a model with several trained heads, `(l1 + l2).backward()`);
  // further graph outputs are not trained unless named (most are not: an export's present
  // key/values, hidden states).
  std::vector<std::string> loss_outputs;
  // One loss per entry of loss_outputs (--loss cross_entropy,mse); empty = `loss` for each.
  std::vector<LossKind> output_losses;
  // The registry entry of the loss; empty = the loss kind's built-in op
  // (ai.onnx SoftmaxCrossEntropyLoss, memplan MseLoss, memplan SumLoss). Lets tests and custom
  // setups supply their own loss entry; the label shape still follows `loss`.
  std::string loss_op_type;
  std::string loss_op_domain;
  // The dtype the loss computes in (--loss-dtype; analyzer/precision/loss_precision.h): auto
  // follows the regime and the graph, a dtype overrides both.
  LossDType loss_dtype = LossDType::kAuto;
  // torchtune's CEWithChunkedOutputLoss (--loss-chunks): cross entropy over this many chunks of
  // tokens, each upcast to fp32 on its own (analyzer/precision/loss_precision.h); 0 = unchunked.
  // REQUIRES the graph rewritten by ApplyChunkedLoss (chunked_loss_plan.h) and loss_outputs
  // naming its chunks (ChunkedLossPlan::PlanTerms); an output left whole is one chunk.
  int64_t loss_chunks = 0;

  OptimizerKind optimizer = OptimizerKind::kAdam;
  // Which implementation of a torch.optim step runs (analyzer/program/optimizer_transient.h):
  // foreach and for-loop allocate intermediates inside the kOptimizerStep step, fused none. The
  // library keeps fused, the model its tests were derived with; the CLI's default is foreach
  // (kDefaultCliOptimizerImpl), torch.optim's default on CUDA.
  OptimizerImpl optimizer_impl = OptimizerImpl::kFused;
  // torch.optim's weight_decay != 0. SGD's and Adam's decay is coupled (grad + wd * param makes a
  // gradient-sized copy); AdamW's is decoupled (params *= 1 - lr * wd in place, no copy). The
  // CLI plans torch's defaults (weight_decay 0 for SGD and Adam; AdamW's decay costs nothing).
  bool weight_decay = false;
  Precision precision = Precision::kFp32;
  // The mixed-precision regime (analyzer/precision/amp_regime.h); ignored in fp32. The library
  // keeps master weights, the model its tests were derived with; the CLI's default is autocast
  // (kDefaultCliAmpMode), what the exported configs run.
  AmpMode amp_mode = AmpMode::kMasterWeights;
  // Per-node execution dtype override, indexed by NodeId (the precision-placement planner fills
  // it); nullopt or a shorter vector = the AMP policy decides. Ignored in fp32 mode, for views
  // (they keep their input's dtype) and for Cast nodes.
  std::vector<std::optional<DType>> node_dtype;
  // nullopt = the precision's default (DefaultLossScaling: dynamic for fp16, none for bf16).
  // Ignored in fp32 mode.
  std::optional<LossScaling> loss_scaling;
  MasterGradientMode master_gradients = MasterGradientMode::kFused;

  int64_t accumulation_steps = 1;  // k micro-batches per optimizer step; must be >= 1
  // torchtune's optimizer_in_bwd (--optimizer-in-backward): each parameter is stepped and its
  // gradient freed by a post-accumulate-grad hook as soon as backward has accumulated it, so the
  // full gradient set never exists. Requires accumulation_steps == 1, no clipping, no loss
  // scaling, one GPU and no optimizer offload.
  bool optimizer_in_backward = false;
  // torch.compile (--compile; analyzer/derivation/compiled_partition.h): the saved set
  // AOTAutograd's min-cut partitioner keeps. Cheap pointwise chains are re-run in backward
  // instead of saved (added to `recompute`), and an op whose compiled backward reads a smaller
  // tensor (ReLU's bool mask) saves that.
  bool compile = false;
  ZeroGradMode zero_grad = ZeroGradMode::kSetToNone;  // PyTorch >= 2.0 default
  bool clip_gradients = false;

  // How frozen parameters (Value::frozen) are stored (analyzer/program/frozen_weight_storage.h);
  // nullopt = as every other parameter (the model's dtype, a working copy in mixed precision).
  std::optional<BaseDType> base_dtype;

  // Nodes whose outputs are dropped after forward and recomputed in backward, just before the
  // first backward step that needs them (inputs of a recomputed segment are kept as checkpoints).
  std::vector<NodeId> recompute;
  // Checkpointed modules (--recompute-unit module), each the node ids of one module: what
  // torch.utils.checkpoint does to that module. Forward keeps only what leaves the module (its
  // inputs are held by whoever produced them; outputs read outside it or graph outputs stay);
  // every other node of it is dropped as if listed in `recompute`, and backward re-runs all of
  // them at once, the first time any of its saved tensors is needed (derivation/recompute_set.h).
  std::vector<std::vector<NodeId>> recompute_modules;
  // --recompute-reentrant: the modules run torch.utils.checkpoint(use_reentrant=True) (the
  // CheckpointFunction autograd.Function) instead of the non-reentrant hooks. Its backward re-runs
  // the whole module, output producers included (no early stop), and holds the recomputed outputs
  // until its inner torch.autograd.backward over the module returns (derivation/recompute_set.h).
  bool recompute_reentrant = false;

  // Data parallelism (--gpus, --parallel): nullopt derives the single-GPU program; a value derives
  // the program of one rank (analyzer/derivation/rank_sharding.h).
  std::optional<DataParallelOptions> data_parallel;

  // --offload: what lives in pinned host memory (analyzer/derivation/host_offload.h,
  // saved_tensor_offload.h). Single-GPU programs only; activations excludes recompute.
  OffloadOptions offload;

  // The op registry to read; null = OpRegistry::Get().
  const OpRegistry* registry = nullptr;

  // Equal options derive equal programs from one graph (analyzer/planning/derivation_cache.h).
  bool operator==(const ProgramOptions&) const = default;
};

// REQUIRES: graph shapes inferred. Errors name the problem (no output, unknown loss shape,
// a recompute id out of range, k < 1, a cycle, an offload mode with data parallelism or
// activations offload with recompute).
Expected<TrainingProgram> DeriveTrainingProgram(const Graph& graph, const ProgramOptions& options);

// Sets options.precision, amp_mode, node_dtype and loss_scaling from the placement.
void ApplyPlacement(const PrecisionPlacement& placement, ProgramOptions& options);

}  // namespace memplan
