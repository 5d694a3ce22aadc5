#pragma once
// The state of one step emission (EmitSteps, step_emission.h), shared by the files that emit each
// phase over it: step_emission.cc (the run, in program order), step_emission_setup.cc (parameters,
// the loss scaler and every cast a step reads), step_emission_forward.cc, step_emission_loss.cc,
// step_emission_offload.cc (saved-tensor hooks: torchtune, Unsloth), step_emission_recompute.cc,
// step_emission_backward.cc and step_emission_optimizer.cc. Internal to analyzer/derivation/.

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "analyzer/derivation/checkpoint_arguments.h"
#include "analyzer/derivation/saved_tensor_offload.h"
#include "analyzer/derivation/step_emission.h"
#include "analyzer/precision/precision_policy.h"
#include "analyzer/program/frozen_weight_storage.h"
#include "analyzer/program/optimizer_state.h"
#include "analyzer/program/optimizer_transient.h"
#include "analyzer/program/runtime_values.h"
#include "analyzer/program/unguarded_events.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/view_layout.h"
#include "graph/trainable_parameters.h"

namespace memplan::emission {

using Action = MemoryEvent::Action;
using Guard = MemoryEvent::Guard;

inline MemoryEvent Guarded(Action action, BufferId b, Guard guard, BufferId guard_buffer) {
  return MemoryEvent{action, b, guard, guard_buffer};
}

// Per-node emission state: facts copied from the analysis passes, then what forward and
// recompute emitted for the node (backward reads it).
struct NodeInfo {
  const OpSchema* schema = nullptr;
  bool is_view = false;               // ViewAliasing: outputs alias input 0 (allocate nothing)
  bool active = false;                // has a runtime step (not a constant/shape computation)
  bool needs_backward = false;        // gets a kBackward step (GradientFlow)
  bool recompute = false;             // RecomputeSet
  std::vector<bool> gradient_inputs;  // GradientFlow, per input slot
  DType compute = DType::kUndefined;  // ProgramDTypes
  std::vector<SavedTensor> saved;     // registry rule (only when needs_backward)
  Dim workspace;
  // Forward step results.
  std::vector<BufferId> read;      // per input slot: the buffer the kernel read
  std::vector<bool> read_is_cast;  // per input slot: `read` is a cast this node made
  std::vector<BufferId> extras;    // kExtra buffers (forward or recompute)
  LogicalTime forward_step = -1;
  bool recomputed_in_backward = false;
  // --offload activations: per entry of `saved`, its host copy made after the forward step
  // (invalid: not packed, resolved as without offload). Empty when nothing was packed.
  std::vector<BufferId> packed;
};

// What a node's backward step reads of what its forward saved (StepEmitter::ResolveSaved).
struct SavedForBackward {
  std::vector<BufferId> saved;                         // in the saved rule's order
  std::vector<std::pair<size_t, ValueId>> dequantize;  // (index in saved, quantised weight)
  std::vector<std::pair<size_t, BufferId>> unpack;     // (index in saved, host copy)
};

// The mutable state of one emission; EmitSteps() is its facade.
class StepEmitter {
 public:
  StepEmitter(const Graph& graph, const ProgramOptions& options, const OpRegistry& registry,
              const DerivationAnalysis& analysis)
      : g_(graph),
        options_(options),
        registry_(registry),
        a_(analysis),
        regime_(analysis.regime),
        working_(analysis.regime.working),
        builder_(graph),
        saved_offload_(builder_, options.offload.hooks),
        p_(builder_.program()),
        order_(analysis.order),
        requires_grad_(analysis.gradients.requires_grad),
        needs_grad_(analysis.gradients.needs_gradient),
        dtype_(analysis.dtypes.value) {}

  Expected<EmittedProgram> Run();

 private:
  bool IsRuntimeValue(ValueId v) const { return memplan::IsRuntimeValue(g_, v); }
  bool IsParameter(ValueId v) const { return IsFloatingParameter(g_, v); }

  // The context the registry's saved/workspace rules see for `n`: dtypes as the program runs it
  // (after casts), and activations that do not require grad (and frozen parameters) marked as
  // inputs, so rules that save an operand only for another operand's gradient decide as autograd
  // would. An input read as it is (not through a cast, which makes a new tensor) has the layout
  // the view pass gave it.
  OpContext ProgramContext(NodeId n) const;

  // ---- buffers and steps (ProgramBuilder) ------------------------------------------------------

  LogicalTime Now() const { return builder_.Now(); }
  BufferId NewBuffer(std::string name, BufferRole role, MemoryCategory category, DType dtype,
                     Shape shape, ValueId value = ValueId(), NodeId node = NodeId(),
                     bool persistent = false) {
    return builder_.NewBuffer(std::move(name), role, category, dtype, std::move(shape), value, node,
                              persistent);
  }
  Step& NewStep(StepKind kind, std::string name, NodeId node = NodeId()) {
    return builder_.NewStep(kind, std::move(name), node);
  }
  void AllocateHere(BufferId b) { builder_.AllocateHere(b); }
  void Touch(BufferId b) { builder_.Touch(b); }
  void MarkExplicitFree(BufferId b) { builder_.MarkExplicitFree(b); }
  Shape ShapeOf(ValueId v) const { return g_.value(v).shape; }

  // ---- setup ----------------------------------------------------------------------------------

  void BuildSetup();

  // The buffer a step reads for parameter `v` when computing in `compute`: the persistent
  // working copy (master weights), autocast's cast of the parameter, or the parameter itself.
  // Autocast's weight-cast cache makes one cast per (parameter, dtype) per forward (`share`),
  // kept until the autocast context exits after the loss (BuildLoss touches them); a recompute
  // step runs in a fresh autocast context under checkpointing and casts again.
  BufferId ParameterRead(ValueId v, DType compute, const std::string& reader, bool share);

  // A transient copy of parameter `u` (stored in `src`) as `dtype` for the current step: a cast
  // of a frozen weight kept in another dtype, or the dequantisation of a quantised one.
  BufferId ParameterCast(ValueId u, BufferId src, DType dtype, const std::string& reader);

  // The buffer holding `u` (in `src`) as `dtype` for the current step: a cast this step makes,
  // or, with `share`, the cast an earlier forward step made of the same value (one cast per
  // (value, dtype) in the forward: autocast's weight-cast cache for parameters, and for
  // activations in the regimes whose casts are the model's own).
  BufferId CastFor(ValueId u, BufferId src, DType dtype, const std::string& reader, bool share);

  // Fills step.inputs/casts for `n` computing in `compute`; `source(slot)` gives the buffer
  // holding the activation of that input slot (forward storage or its recomputed copy). Forward
  // steps share casts (`share_casts`); a recompute step casts its own inputs, since the forward
  // casts are gone by then unless something saved them.
  template <class SourceFn>
  void ReadInputs(NodeId n, DType compute, bool allow_casts, bool share_casts, SourceFn source) {
    const Node& node = g_.node(n);
    NodeInfo& info = nodes_[n.index()];
    info.read.assign(node.inputs.size(), BufferId());
    info.read_is_cast.assign(node.inputs.size(), false);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      ValueId u = node.inputs[i];
      if (!IsRuntimeValue(u)) continue;
      // A number torch passes to the op (Dropout's p) is read as stored: nothing casts it, so
      // backward reads the same buffer forward did.
      const bool scalar_argument = info.schema->IsScalarArgument(i);
      if (IsParameter(u) && scalar_argument) {
        info.read[i] = p_.parameters[static_cast<size_t>(param_index_[u.index()])].master;
        continue;
      }
      if (IsParameter(u)) {
        info.read[i] = ParameterRead(u, compute, node.name, share_casts);
        // A frozen weight stored in another dtype (bf16 base, int8/nf4 codes) is cast or
        // dequantised for this op alone.
        const DType want = compute != DType::kUndefined ? compute : g_.value(u).dtype;
        if (stored_frozen_[u.index()] && p_.buffer(info.read[i]).dtype != want) {
          info.read[i] = ParameterCast(u, info.read[i], want, node.name);
          info.read_is_cast[i] = true;
        }
        continue;
      }
      BufferId src = source(i);
      Touch(src);
      DType have = dtype_[u.index()];
      if (allow_casts && !scalar_argument && compute != DType::kUndefined && IsFloating(have) &&
          have != compute && !PromotesInKernel(*info.schema, have, compute)) {
        info.read[i] =
            CastFor(u, src, compute, node.name, share_casts && !regime_.casts_activations_per_op);
        info.read_is_cast[i] = true;
      } else {
        info.read[i] = src;
      }
    }
    p_.steps.back().inputs = info.read;
  }

  // Whether an op computing in `compute` reads an activation stored as the narrower `have` as it
  // is: a follows-inputs op under autocast promotes inside its kernel (amp_regime.h).
  bool PromotesInKernel(const OpSchema& schema, DType have, DType compute) const;

  // The saved rule's inputs that are tensors torch computes in every forward but memplan folds
  // at import, saved as copies made at the node's forward step. A value computed only from
  // constants and shapes is folded (its node has no step), yet in torch it is a tensor the step
  // allocates: T5's bucketed relative positions (arange, sub, abs, log, where: an int64 [S, S]
  // that embedding's backward saves, derivatives.yaml `embedding: indices`). Integer and bool
  // values only: a floating constant computed from shapes is a Python number in torch (the
  // 1/sqrt(head_dim) scale), saved as a 0-dim tensor of a few bytes or not at all. Not copied:
  // initializers and Constant nodes (module buffers and literals, held for the model's lifetime)
  // and views of them (GPT-2's causal `bias[:, :, :S, :S]` is a slice of a buffer, no new
  // storage); and a value more than one differentiated node reads (one causal mask for every
  // layer: torch holds one tensor, which per-node copies would count once per layer).
  std::vector<SavedTensor> ComputedConstantsAsCopies(NodeId n, const OpContext& ctx,
                                                     std::vector<SavedTensor> saved) const;

  // An initializer, a Constant node's output, or a view (registry is_view) of one.
  bool StoredOrViewOfStored(ValueId v) const;

  int DifferentiatedReaders(ValueId v) const;

  void CreateExtras(NodeId n);

  Status BuildForward();

  bool OffloadsActivations() const { return options_.offload.mode == OffloadMode::kActivations; }

  // --offload-hooks torchtune*: the ops whose saves never reach OffloadActivations' pack hook
  // (saved_tensor_offload.h): the output head, which runs under NoOpManager, and every op of a
  // checkpointed module, which saves through torch.utils.checkpoint's hooks; and each module's
  // tensor inputs, which the checkpoint saves through it instead (values read inside and made
  // outside, not parameters). The head is the linear layer behind each loss's logits: walking
  // back through views, casts (`.float()`) and a bias Add to the first other op (the MatMul or
  // Gemm), all marked (what they save: nothing but the matmul's).
  void FindTorchtuneScopes();

  // --offload-hooks unsloth (saved_tensor_offload.h): no hooks see any save; each checkpointed
  // module but the last (in forward order) moves its first input, the one its first op reads
  // first (module_inputs_ lists them in that order).
  void FindUnslothInputs();

  bool ReachesOffloadHooks(NodeId n) const;

  // Per entry of `saved` (SavedAtForward(n)): whether the hooks move it to the host (an
  // nn.Parameter is one the op reads itself, not a view or autocast copy of it).
  std::vector<bool> MovedByHooks(NodeId n, const std::vector<BufferId>& saved) const;

  // --offload-hooks torchtune* with module recompute: the checkpoint of the module `n` opens
  // saves the module's tensor inputs through the offload hooks (before its first op runs).
  void PackModuleInputs(NodeId n);

  // The module's re-run reads its inputs back from the host: the unpacked copies stand for the
  // forward values in the re-run (EnsureAvailable), freed after their last use there.
  void UnpackModuleInputs(size_t group);

  // --offload activations: the buffer each entry of the node's saved rule names right after its
  // forward step, as BuildBackward resolves it for a node that is not recomputed (only torchtune's
  // hooks run with recompute, and they never see a checkpointed module's saves). Invalid for
  // entries that name nothing and for quantised weights, which bitsandbytes keeps outside
  // autograd's saved tensors (so save_on_cpu never sees them) and dequantises again in backward.
  std::vector<BufferId> SavedAtForward(NodeId n) const;

  // --offload activations: one unpack step bringing back the host copies `unpack` names, written
  // into their places in `saved` (the list the next backward step reads).
  void UnpackInto(const std::string& name, NodeId n,
                  const std::vector<std::pair<size_t, BufferId>>& unpack,
                  std::vector<BufferId>& saved);

  // The name of loss term i's steps and buffers: "loss" (and "label") for a single-output loss,
  // "loss.<output>" with several.
  std::string LossName(size_t i, const std::string& what) const;

  void BuildLoss(size_t i);
  DType EmitLossStep(size_t i);
  void SaveLossForBackward(size_t i, DType loss_dtype);

  // The checkpoint arguments (checkpoint_arguments.h) of the module node `n` belongs to, allocated
  // at the module's first forward step (a value several modules read: at the first of them).
  void HoldCheckpointArguments(NodeId n);

  // Each backward step of a checkpointed module keeps what the module holds alive (its
  // arguments; with --recompute-reentrant its recomputed outputs): freed after the last backward
  // step of the last module holding them.
  void TouchHeldByModule(NodeId n);

  // --recompute-reentrant: CheckpointFunction.backward re-runs the module's whole forward (no
  // early stop), so the producers of what leaves the module run again too, after its dropped
  // nodes; their new outputs are the `outputs` it passes to torch.autograd.backward, alive until
  // that inner backward returns, as are the gradients of those outputs (its `args`). (Forward ran
  // under no_grad: the output producers' saved tensors are the re-run's, CreateExtras in
  // Recompute replaces the forward's.)
  void RecomputeModuleOutputs(size_t group);

  // ---- backward -------------------------------------------------------------------------------

  // The buffer holding activation `v` at this point of backward, recomputing what was dropped.
  BufferId EnsureAvailable(ValueId v);

  void Recompute(NodeId n);

  // What the registry's forward_workspace rule asks for the node's forward (or recompute) step,
  // allocated at its Begin and freed at its End (liveness: the step is its only use).
  void EmitForwardWorkspace(NodeId n);

  // The saved extra that backward returns as input `slot`'s gradient
  // (OpSchema::gradients_from_saved), or invalid: then a gradient buffer is made as usual. Not
  // with --offload activations, whose unpacked copies are other buffers.
  BufferId GradientFromSaved(NodeId n, size_t slot) const;

  // Axes of `v` that its layout reads more than once: a size other than 1 at stride 0. Nullopt
  // when the shape is unknown.
  std::optional<size_t> BroadcastAxes(ValueId v) const;

  // Whether view output `out` of `in` broadcasts an axis `in` does not (an Expand of a size-1
  // axis, HF's repeat_kv x[:, :, None].expand(b, kv, n_rep, s, d)). Its backward is then no view
  // of the output gradient: at::sum_to(grad, self.sizes()) sums into a new tensor of `in`'s shape.
  bool AddsBroadcast(ValueId in, ValueId out) const;

  // Where a backward step writes the gradient of activation (non-parameter) `u`. `from_saved`:
  // the saved tensor forward already computed it into (GradientFromSaved): it becomes the
  // gradient, or the part added into an existing one, and nothing is allocated.
  GradientWrite ValueGradientWrite(int slot, ValueId u, NodeId n, BufferId alias,
                                   BufferId from_saved = BufferId());

  // A parameter gradient contribution: written into a part, then accumulated by its own step.
  // Under autocast the op read a cast of the parameter, so its backward writes the gradient in
  // the cast's dtype; EmitAccumulations casts it to the gradient's dtype first.
  // `from_saved` as for ValueGradientWrite: the saved tensor is the contribution (AccumulateGrad
  // then steals it or adds it in and frees it).
  GradientWrite ParameterGradientWrite(int slot, ValueId u, NodeId n, std::string_view producer,
                                       BufferId from_saved = BufferId());

  void EmitAccumulations(const std::vector<GradientWrite>& writes,
                         const std::vector<ValueId>& values);

  // --optimizer-in-backward: how many gradient contributions each parameter still awaits in
  // backward (one per backward input slot that reads it, as BuildBackward writes them). Its
  // post-accumulate-grad hook fires after the last: autograd sums a leaf's contributions before
  // its one AccumulateGrad runs.
  void CountGradientContributions();

  // torchtune's optimizer_in_bwd hook (training/memory.py register_optim_in_bwd_hooks):
  // optim_dict[param].step() then .zero_grad() (set_to_none), one optimizer per parameter. The
  // step creates this parameter's state lazily, allocates its own intermediates (a foreach over
  // one tensor) and frees the gradient at its End.
  void EmitStepInBackward(int index);

  // What stepping one parameter allocates at the current kOptimizerStep: its states, created by
  // the first step (torch.optim), then persistent; an fp32 master gradient for the update.
  void EmitParameterStepEvents(const ParameterBuffers& pb);

  // Autocast's ToCopyBackward: the part computed in the working dtype becomes a part in the
  // gradient's dtype; both are live while the cast runs, the half one is freed at its End.
  BufferId CastGradientPart(BufferId half_part, BufferId grad);

  BufferId NewWorkspace(const Dim& bytes, const std::string& name, NodeId n);

  // The buffer the loss's saved rule entry `s` names (logits as read, label, loss, extras in
  // order: `extra` counts the extras taken).
  BufferId LossSaved(size_t i, const SavedTensor& s, size_t& extra) const;

  void BuildLossBackward(size_t i);

  void BuildBackward();
  SavedForBackward ResolveSaved(NodeId n);
  void BuildNodeBackward(NodeId n);
  void WriteInputGradients(NodeId n, const std::vector<BufferId>& output_gradients);

  // The dtype backward computes input `slot`'s gradient in when that differs from how the
  // activation is stored, else kUndefined. The op saw a cast of the activation, or promoted it
  // inside its kernel: its backward yields the gradient in the dtype it computed in, and autograd
  // casts it to the input's dtype afterwards (ToCopyBackward for a cast; the engine's
  // validate_outputs for a promoted input). Both are live while that cast runs.
  DType GradientComputeDType(NodeId n, size_t slot) const;

  // A backward write of activation `u`'s gradient in `dtype` (GradientComputeDType), into a part
  // that EmitValueGradientCast turns into the gradient.
  GradientWrite ComputedGradientWrite(int slot, ValueId u, NodeId n, DType dtype);

  // The cast after a ComputedGradientWrite: the part becomes grad(u) in u's dtype, or a part in
  // that dtype added into the gradient an earlier consumer wrote. The computed part is freed at
  // the cast's End, the added one at the accumulation's.
  void EmitValueGradientCast(ValueId u, BufferId computed);

  std::string NameOf(NodeId n) const { return n.valid() ? g_.node(n).name : std::string("loss"); }

  // ---- optimizer phase ------------------------------------------------------------------------

  Status BuildOptimizer();

  // --optimizer-in-backward: the error EmitOptimizerTransients gives for a parameter of symbolic
  // shape, which the steps in backward could not return.
  Status CheckStepSizes() const;

  // The intermediates the kOptimizerStep step (the current step) allocates beyond the state
  // (analyzer/program/optimizer_transient.h): allocated at its Begin, after the lazily created
  // states (torch's _init_group runs before the update), and freed at its End. None when the
  // optimizer runs on the host (--offload optimizer: DeepSpeed's CPU Adam is one fused C++ loop).
  // `only` >= 0: that parameter's step alone (--optimizer-in-backward: an optimizer per
  // parameter, so a foreach step runs over one tensor).
  Status EmitOptimizerTransients(int only = -1);

  const Graph& g_;
  const ProgramOptions& options_;
  const OpRegistry& registry_;
  const DerivationAnalysis& a_;
  const AmpRegime& regime_;
  const DType working_;
  ProgramBuilder builder_;
  SavedTensorOffload saved_offload_;  // --offload activations (saved_tensor_offload.h)
  TrainingProgram& p_;                // builder_'s program
  const std::vector<NodeId>& order_;
  const std::vector<bool>& requires_grad_;
  const std::vector<bool>& needs_grad_;
  const std::vector<DType>& dtype_;  // program dtype of each value (ProgramDTypes)

  // What one loss term's forward left for its backward.
  struct LossTermState {
    Node loss_node;
    const OpSchema* loss_schema = nullptr;
    std::vector<SavedTensor> loss_saved;
    Dim loss_workspace;
    std::vector<BufferId> loss_extras;
    std::vector<BufferId> loss_packed;  // --offload activations: host copies of what it saved
    BufferId loss_read;
  };
  std::vector<LossTermState> terms_;  // per a_.losses entry
  BufferId loss_scale_;

  std::vector<NodeInfo> nodes_;
  std::vector<BufferId> value_storage_;       // forward buffer of each value (views: the base's)
  std::vector<BufferId> recomputed_storage_;  // its copy re-created in backward
  std::vector<bool> group_recomputed_;        // per checkpointed module: re-run in backward
  // Per checkpointed module: the folded values it holds as arguments, and their buffers.
  std::vector<std::vector<ValueId>> checkpoint_arguments_;
  std::vector<std::vector<BufferId>> held_by_module_;  // arguments, reentrant outputs
  std::vector<bool> arguments_held_;
  std::map<ValueId, BufferId> checkpoint_argument_of_value_;
  // --offload-hooks torchtune*: per node, its saves never reach the hooks (FindTorchtuneScopes);
  // per checkpointed module, its tensor inputs and their host copies.
  std::vector<bool> beyond_hooks_;
  std::vector<std::vector<ValueId>> module_inputs_;
  std::vector<std::vector<BufferId>> module_inputs_host_;
  std::vector<size_t> order_position_;  // per node: its index in order_
  std::vector<BufferId> gradient_;      // gradient buffer of each activation
  std::vector<int> param_index_;        // value -> index into parameters, -1 otherwise
  std::vector<bool> stored_frozen_;     // per value: a frozen parameter stored per --base-dtype
  std::vector<bool> quantized_;         // per value: stored as int8/nf4 codes
  std::vector<int> pending_;  // --optimizer-in-backward: contributions each parameter awaits
  std::map<std::pair<size_t, DType>, BufferId> forward_casts_;  // (value, dtype) -> forward cast
  std::vector<BufferId> weight_casts_;  // autocast's cache: parameter casts of the forward
};

}  // namespace memplan::emission
