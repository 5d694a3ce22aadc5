#include "analyzer/derivation/step_emission.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "analyzer/derivation/checkpoint_arguments.h"
#include "analyzer/derivation/saved_tensor_offload.h"
#include "analyzer/precision/precision_policy.h"
#include "analyzer/program/frozen_weight_storage.h"
#include "analyzer/program/optimizer_state.h"
#include "analyzer/program/optimizer_transient.h"
#include "analyzer/program/runtime_values.h"
#include "analyzer/program/unguarded_events.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/view_layout.h"
#include "graph/trainable_parameters.h"

namespace memplan {
namespace {

using Action = MemoryEvent::Action;
using Guard = MemoryEvent::Guard;

MemoryEvent Guarded(Action action, BufferId b, Guard guard, BufferId guard_buffer) {
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

  Expected<EmittedProgram> Run() {
    p_.symbols = g_.symbols();
    p_.batch_symbol = g_.batch_symbol();
    p_.accumulation_steps = options_.accumulation_steps;
    p_.optimizer_kind = options_.optimizer;
    p_.optimizer_impl = options_.optimizer_impl;
    p_.precision = options_.precision;
    p_.amp_mode = options_.amp_mode;
    p_.loss_scaling = a_.loss_scaling;
    p_.zero_grad = options_.zero_grad;
    p_.loss = a_.losses.front().spec.kind;
    p_.recomputed = a_.recompute.nodes;
    p_.offload = options_.offload.mode;

    value_storage_.assign(g_.num_values(), BufferId());
    recomputed_storage_.assign(g_.num_values(), BufferId());
    gradient_.assign(g_.num_values(), BufferId());
    param_index_.assign(g_.num_values(), -1);
    stored_frozen_.assign(g_.num_values(), false);
    quantized_.assign(g_.num_values(), false);
    nodes_.assign(g_.num_nodes(), NodeInfo{});
    group_recomputed_.assign(a_.recompute.groups.size(), false);
    order_position_.assign(g_.num_nodes(), 0);
    for (size_t i = 0; i < order_.size(); ++i) order_position_[order_[i].index()] = i;
    for (NodeId n : order_) {
      const Node& node = g_.node(n);
      NodeInfo& info = nodes_[n.index()];
      info.schema = &registry_.FindOrUnknown(node.op_type, node.domain);
      info.is_view = a_.views.node_is_view[n.index()];
      info.active = RunsAtRuntime(g_, n);
      info.recompute = a_.recompute.recompute[n.index()];
      info.needs_backward = a_.gradients.needs_backward[n.index()];
      info.gradient_inputs = a_.gradients.gradient_inputs[n.index()];
      info.compute = a_.dtypes.node_compute[n.index()];
    }

    checkpoint_arguments_ = CheckpointArguments(g_, options_.recompute_modules, [this](NodeId n) {
      const Node& node = g_.node(n);
      return registry_.FindOrUnknown(node.op_type, node.domain).is_view;
    });
    held_by_module_.assign(checkpoint_arguments_.size(), {});
    arguments_held_.assign(checkpoint_arguments_.size(), false);
    if (OffloadsActivations() && IsTorchtuneHooks(options_.offload.hooks)) FindTorchtuneScopes();
    if (OffloadsActivations() && options_.offload.hooks == OffloadHooks::kUnsloth)
      FindUnslothInputs();
    BuildSetup();
    p_.micro_batch.begin = Now();
    MEMPLAN_RETURN_IF_ERROR(BuildForward());
    terms_.resize(a_.losses.size());
    for (size_t i = 0; i < a_.losses.size(); ++i) BuildLoss(i);
    if (options_.optimizer_in_backward) CountGradientContributions();
    BuildBackward();
    p_.micro_batch.end = Now();
    MEMPLAN_RETURN_IF_ERROR(BuildOptimizer());
    EmittedProgram emitted;
    emitted.uses = builder_.uses();
    emitted.program = builder_.TakeProgram();
    return emitted;
  }

 private:
  bool IsRuntimeValue(ValueId v) const { return memplan::IsRuntimeValue(g_, v); }
  bool IsParameter(ValueId v) const { return IsFloatingParameter(g_, v); }

  // The context the registry's saved/workspace rules see for `n`: dtypes as the program runs it
  // (after casts), and activations that do not require grad (and frozen parameters) marked as
  // inputs, so rules that save an operand only for another operand's gradient decide as autograd
  // would. An input read as it is (not through a cast, which makes a new tensor) has the layout
  // the view pass gave it.
  OpContext ProgramContext(NodeId n) const {
    OpContext ctx = MakeOpContext(g_, n);
    const Node& node = g_.node(n);
    const NodeInfo& info = nodes_[n.index()];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      ValueId u = node.inputs[i];
      if (!IsRuntimeValue(u)) continue;
      if (i < info.read.size() && info.read[i].valid())
        ctx.inputs[i].dtype = p_.buffer(info.read[i]).dtype;
      const bool through_cast = i < info.read_is_cast.size() && info.read_is_cast[i];
      if (!through_cast) ctx.inputs[i].strides = a_.views.value_strides[u.index()];
      if (ctx.inputs[i].kind == ValueKind::kIntermediate && !requires_grad_[u.index()])
        ctx.inputs[i].kind = ValueKind::kInput;
      // A frozen parameter, or one training never updates (a registered buffer, a constant the
      // dynamo exporter stored as an initializer: graph/exported_buffers.h), is a constant to
      // autograd: nothing is saved for its gradient.
      if (ctx.inputs[i].kind == ValueKind::kParameter && !IsTrainedParameter(g_.value(u)))
        ctx.inputs[i].kind = ValueKind::kInput;
    }
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      ValueId o = node.outputs[j];
      if (IsRuntimeValue(o)) ctx.outputs[j].dtype = dtype_[o.index()];
    }
    return ctx;
  }

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

  void BuildSetup() {
    p_.setup.begin = Now();
    NewStep(StepKind::kAllocateParameters, "parameters");
    for (const Value& v : g_.values()) {
      if (!IsParameter(v.id)) continue;
      ParameterBuffers pb;
      pb.value = v.id;
      // The regime says where parameters, gradients and states live (amp_regime.h).
      DType master = regime_.mixed() ? regime_.parameter : v.dtype;
      bool working_copy = regime_.keeps_master_copy();
      std::optional<FrozenStorage> frozen;
      if (options_.base_dtype) frozen = FrozenWeightStorage(g_, v.id, *options_.base_dtype);
      if (frozen) {
        // A frozen weight stored in the base dtype is its only copy unless it is fp32 under
        // master weights (then the working copy stays, as for every fp32 parameter).
        master = frozen->dtype;
        working_copy = working_copy && master == DType::kFloat32;
        stored_frozen_[v.id.index()] = true;
        quantized_[v.id.index()] = frozen->quantized;
      }
      pb.master = NewBuffer(v.name, BufferRole::kParameterMaster, MemoryCategory::kParameters,
                            master, v.shape, v.id, NodeId(), /*persistent=*/true);
      AllocateHere(pb.master);
      if (frozen && frozen->quantization_state_bytes > 0) {
        pb.quantization_state = NewBuffer(
            "quant_state(" + v.name + ")", BufferRole::kQuantizationState,
            MemoryCategory::kParameters, DType::kUInt8,
            Shape{{Dim(frozen->quantization_state_bytes)}}, v.id, NodeId(), /*persistent=*/true);
        AllocateHere(pb.quantization_state);
      }
      if (working_copy) {
        pb.working = NewBuffer(v.name + "." + std::string(DTypeName(regime_.working_copy)),
                               BufferRole::kParameterWorking, MemoryCategory::kParameters,
                               regime_.working_copy, v.shape, v.id, NodeId(),
                               /*persistent=*/true);
        AllocateHere(pb.working);
      }
      if (needs_grad_[v.id.index()]) {
        DType grad_dtype = regime_.mixed() ? regime_.gradient : v.dtype;
        pb.gradient = NewBuffer("grad(" + v.name + ")", BufferRole::kParameterGradient,
                                MemoryCategory::kGradients, grad_dtype, v.shape, v.id, NodeId(),
                                /*persistent=*/true);
        for (const auto& state : OptimizerStates(options_.optimizer, v.shape)) {
          pb.optimizer_states.push_back(NewBuffer(
              std::string(OptimizerKindName(options_.optimizer)) + "." + state.name + "(" + v.name +
                  ")",
              BufferRole::kOptimizerState, MemoryCategory::kOptimizerState,
              // bitsandbytes' 8-bit state keeps its own dtypes in every regime.
              EightBitOptimizer(options_.optimizer) ? state.dtype : regime_.optimizer_state,
              state.shape, v.id, NodeId(), /*persistent=*/true));
        }
        if (regime_.keeps_master_copy() &&
            options_.master_gradients == MasterGradientMode::kFullCopy) {
          pb.master_gradient =
              NewBuffer("master_grad(" + v.name + ")", BufferRole::kMasterGradient,
                        MemoryCategory::kGradients, DType::kFloat32, v.shape, v.id);
          MarkExplicitFree(pb.master_gradient);
        }
      }
      param_index_[v.id.index()] = static_cast<int>(p_.parameters.size());
      p_.parameters.push_back(std::move(pb));
    }
    // GradScaler keeps its scale and growth tracker on the device; a static scale is a host
    // constant and costs nothing here.
    if (p_.loss_scaling.mode == LossScalingMode::kDynamic) {
      NewStep(StepKind::kInitLossScaler, "loss_scaler");
      loss_scale_ = NewBuffer("loss_scale", BufferRole::kScalar, MemoryCategory::kOther,
                              DType::kFloat32, Shape{{}}, ValueId(), NodeId(), true);
      p_.loss_scale_buffer = loss_scale_;
      AllocateHere(loss_scale_);
      BufferId tracker =
          NewBuffer("loss_scale_growth_tracker", BufferRole::kScalar, MemoryCategory::kOther,
                    DType::kInt32, Shape{{}}, ValueId(), NodeId(), true);
      AllocateHere(tracker);
    }
    p_.setup.end = Now();
  }

  // The buffer a step reads for parameter `v` when computing in `compute`: the persistent
  // working copy (master weights), autocast's cast of the parameter, or the parameter itself.
  // Autocast's weight-cast cache makes one cast per (parameter, dtype) per forward (`share`),
  // kept until the autocast context exits after the loss (BuildLoss touches them); a recompute
  // step runs in a fresh autocast context under checkpointing and casts again.
  BufferId ParameterRead(ValueId v, DType compute, const std::string& reader, bool share) {
    const ParameterBuffers& pb = p_.parameters[static_cast<size_t>(param_index_[v.index()])];
    if (pb.working.valid() && compute == working_) return pb.working;
    // A frozen weight stored in the base dtype is cast by ReadInputs (ParameterCast), not here.
    if (regime_.casts_weights_per_forward && compute == working_ && !stored_frozen_[v.index()] &&
        p_.buffer(pb.master).dtype != compute) {
      const bool first = !forward_casts_.count({v.index(), compute});
      BufferId cast = CastFor(v, pb.master, compute, reader, share);
      if (share && first) weight_casts_.push_back(cast);
      return cast;
    }
    return pb.master;
  }

  // A transient copy of parameter `u` (stored in `src`) as `dtype` for the current step: a cast
  // of a frozen weight kept in another dtype, or the dequantisation of a quantised one.
  BufferId ParameterCast(ValueId u, BufferId src, DType dtype, const std::string& reader) {
    const std::string what = quantized_[u.index()] ? ".dequantized." : ".";
    BufferId cast = NewBuffer(
        g_.value(u).name + what + std::string(DTypeName(dtype)) + "@" + reader, BufferRole::kCast,
        MemoryCategory::kTransients, dtype, ShapeOf(u), u, p_.steps.back().node);
    AllocateHere(cast);
    p_.steps.back().casts.push_back(CastOp{src, cast});
    return cast;
  }

  // The buffer holding `u` (in `src`) as `dtype` for the current step: a cast this step makes,
  // or, with `share`, the cast an earlier forward step made of the same value (one cast per
  // (value, dtype) in the forward: autocast's weight-cast cache for parameters, and for
  // activations in the regimes whose casts are the model's own).
  BufferId CastFor(ValueId u, BufferId src, DType dtype, const std::string& reader, bool share) {
    const std::pair<size_t, DType> key{u.index(), dtype};
    if (share) {
      if (auto it = forward_casts_.find(key); it != forward_casts_.end()) {
        Touch(it->second);
        return it->second;
      }
    }
    BufferId cast = NewBuffer(g_.value(u).name + "." + std::string(DTypeName(dtype)) + "@" + reader,
                              BufferRole::kCast, MemoryCategory::kTransients, dtype, ShapeOf(u), u,
                              p_.steps.back().node);
    AllocateHere(cast);
    p_.steps.back().casts.push_back(CastOp{src, cast});
    if (share) forward_casts_.emplace(key, cast);
    return cast;
  }

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
  bool PromotesInKernel(const OpSchema& schema, DType have, DType compute) const {
    return regime_.promotes_in_kernel && schema.amp == AmpCategory::kFollowInputs &&
           BitSize(have) < BitSize(compute);
  }

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
                                                     std::vector<SavedTensor> saved) const {
    const Node& node = g_.node(n);
    for (SavedTensor& s : saved) {
      if (s.source != SavedTensor::Source::kInput) continue;
      const auto i = static_cast<size_t>(s.index);
      if (i >= node.inputs.size() || !node.inputs[i].valid()) continue;
      const ValueId u = node.inputs[i];
      const Value& value = g_.value(u);
      if (value.kind != ValueKind::kConstant || IsFloating(value.dtype) || !value.shape.known ||
          StoredOrViewOfStored(u) || DifferentiatedReaders(u) != 1)
        continue;
      s = SaveContiguousCopy(ctx, s.index);
    }
    return saved;
  }

  // An initializer, a Constant node's output, or a view (registry is_view) of one.
  bool StoredOrViewOfStored(ValueId v) const {
    for (int depth = 0; depth < 64; ++depth) {
      const Value& value = g_.value(v);
      if (!value.producer.valid()) return true;
      const Node& p = g_.node(value.producer);
      if (p.op_type == "Constant" && p.domain.empty()) return true;
      if (!registry_.FindOrUnknown(p.op_type, p.domain).is_view || p.inputs.empty() ||
          !p.inputs[0].valid())
        return false;
      v = p.inputs[0];
    }
    return false;
  }

  int DifferentiatedReaders(ValueId v) const {
    int readers = 0;
    for (NodeId c : g_.value(v).consumers) readers += nodes_[c.index()].needs_backward ? 1 : 0;
    return readers;
  }

  void CreateExtras(NodeId n) {
    NodeInfo& info = nodes_[n.index()];
    info.extras.clear();
    for (const SavedTensor& s : info.saved) {
      if (s.source != SavedTensor::Source::kExtra) continue;
      BufferId b = NewBuffer(g_.node(n).name + "." + s.name, BufferRole::kSavedExtra,
                             MemoryCategory::kActivations, s.dtype, s.shape, ValueId(), n);
      p_.buffers[b.index()].saved_name = s.name;
      AllocateHere(b);
      info.extras.push_back(b);
    }
    p_.steps.back().extras = info.extras;
  }

  Status BuildForward() {
    NewStep(StepKind::kLoadMicroBatch, "micro_batch");
    for (ValueId v : g_.inputs()) {
      if (!IsRuntimeValue(v) || IsParameter(v)) continue;
      const Value& value = g_.value(v);
      if (!value.shape.known)
        return MakeError("graph input '" + value.name + "' has an unknown shape");
      BufferId b = NewBuffer(value.name, BufferRole::kInput, MemoryCategory::kOther, value.dtype,
                             value.shape, v);
      AllocateHere(b);
      value_storage_[v.index()] = b;
    }
    // One label per loss term, loaded with the inputs.
    for (const AnalyzedLoss& loss : a_.losses) {
      LossTerm term;
      term.kind = loss.spec.kind;
      term.output = loss.output;
      term.class_axis = loss.spec.class_axis;
      if (loss.spec.has_label) {
        term.label =
            NewBuffer(LossName(p_.loss_terms.size(), "label"), BufferRole::kLabel,
                      MemoryCategory::kOther, loss.spec.label_dtype, loss.spec.label_shape);
        AllocateHere(term.label);
      }
      p_.loss_terms.push_back(term);
    }
    p_.label_buffer = p_.loss_terms.front().label;
    for (NodeId n : order_) {
      NodeInfo& info = nodes_[n.index()];
      if (!info.active) continue;
      const Node& node = g_.node(n);
      PackModuleInputs(n);
      Step& step = NewStep(StepKind::kForward, node.name, n);
      step.compute_dtype = info.compute;
      info.forward_step = Now() - 1;
      HoldCheckpointArguments(n);
      for (ValueId u : node.inputs) {
        if (IsRuntimeValue(u) && !IsParameter(u) && !value_storage_[u.index()].valid())
          return MakeError("node '" + node.name + "' reads '" + g_.value(u).name +
                           "', which no earlier node produces and is not a graph input");
      }
      ReadInputs(n, info.compute, !info.is_view, /*share_casts=*/true,
                 [&](size_t i) { return value_storage_[node.inputs[i].index()]; });
      std::vector<BufferId> outputs(node.outputs.size());
      for (size_t j = 0; j < node.outputs.size(); ++j) {
        ValueId o = node.outputs[j];
        if (!IsRuntimeValue(o)) continue;
        if (info.is_view && info.read.size() > 0 && info.read[0].valid()) {
          outputs[j] = info.read[0];
        } else {
          if (!g_.value(o).shape.known)
            return MakeError("value '" + g_.value(o).name + "' (output of node '" + node.name +
                             "') has an unknown shape; the training program needs its size");
          outputs[j] = NewBuffer(g_.value(o).name, BufferRole::kValue, MemoryCategory::kTransients,
                                 dtype_[o.index()], ShapeOf(o), o, n);
          AllocateHere(outputs[j]);
        }
        value_storage_[o.index()] = outputs[j];
      }
      p_.steps.back().outputs = outputs;
      EmitForwardWorkspace(n);
      if (info.needs_backward) {
        OpContext ctx = ProgramContext(n);
        const bool compiled = n.index() < a_.saves_compiled.size() &&
                              a_.saves_compiled[n.index()] && info.schema->saved_when_compiled;
        const SavedRule& rule =
            compiled ? info.schema->saved_when_compiled : info.schema->saved_for_backward;
        info.saved = ComputedConstantsAsCopies(n, ctx, rule(ctx));
        info.workspace = info.schema->backward_workspace(ctx);
        if (!info.recompute) CreateExtras(n);
        if (OffloadsActivations() && ReachesOffloadHooks(n)) {
          const std::vector<BufferId> saved = SavedAtForward(n);
          info.packed = saved_offload_.Pack(node.name, n, saved, MovedByHooks(n, saved));
        }
      }
    }
    return OkStatus();
  }

  bool OffloadsActivations() const { return options_.offload.mode == OffloadMode::kActivations; }

  // --offload-hooks torchtune*: the ops whose saves never reach OffloadActivations' pack hook
  // (saved_tensor_offload.h): the output head, which runs under NoOpManager, and every op of a
  // checkpointed module, which saves through torch.utils.checkpoint's hooks; and each module's
  // tensor inputs, which the checkpoint saves through it instead (values read inside and made
  // outside, not parameters). The head is the linear layer behind each loss's logits: walking
  // back through views, casts (`.float()`) and a bias Add to the first other op (the MatMul or
  // Gemm), all marked (what they save: nothing but the matmul's).
  void FindTorchtuneScopes() {
    beyond_hooks_.assign(g_.num_nodes(), false);
    for (const auto& loss : a_.losses) {
      ValueId v = loss.output;
      while (v.valid() && g_.value(v).producer.valid()) {
        const NodeId producer = g_.value(v).producer;
        const Node& node = g_.node(producer);
        beyond_hooks_[producer.index()] = true;
        ValueId next;
        if (nodes_[producer.index()].is_view || node.op_type == "Cast") {
          if (!node.inputs.empty()) next = node.inputs[0];
        } else if (node.op_type == "Add" && node.inputs.size() == 2) {
          if (IsParameter(node.inputs[1])) next = node.inputs[0];
          if (IsParameter(node.inputs[0])) next = node.inputs[1];
        }
        v = next;
      }
    }
    module_inputs_.assign(options_.recompute_modules.size(), {});
    module_inputs_host_.assign(options_.recompute_modules.size(), {});
    for (size_t group = 0; group < options_.recompute_modules.size(); ++group) {
      std::set<NodeId> members(options_.recompute_modules[group].begin(),
                               options_.recompute_modules[group].end());
      for (NodeId m : options_.recompute_modules[group]) {
        if (m.index() < beyond_hooks_.size()) beyond_hooks_[m.index()] = true;
      }
      std::vector<NodeId> ordered(members.begin(), members.end());
      std::sort(ordered.begin(), ordered.end(), [this](NodeId a, NodeId b) {
        return order_position_[a.index()] < order_position_[b.index()];
      });
      std::vector<ValueId>& inputs = module_inputs_[group];
      for (NodeId m : ordered) {
        for (ValueId u : g_.node(m).inputs) {
          if (!IsRuntimeValue(u) || IsParameter(u)) continue;
          const NodeId producer = g_.value(u).producer;
          if (producer.valid() && members.count(producer)) continue;
          if (std::find(inputs.begin(), inputs.end(), u) == inputs.end()) inputs.push_back(u);
        }
      }
    }
  }

  // --offload-hooks unsloth (saved_tensor_offload.h): no hooks see any save; each checkpointed
  // module but the last (in forward order) moves its first input, the one its first op reads
  // first (module_inputs_ lists them in that order).
  void FindUnslothInputs() {
    FindTorchtuneScopes();
    beyond_hooks_.assign(g_.num_nodes(), true);
    size_t last = module_inputs_.size();
    size_t last_position = 0;
    for (size_t group = 0; group < options_.recompute_modules.size(); ++group) {
      if (module_inputs_[group].size() > 1) module_inputs_[group].resize(1);
      for (NodeId m : options_.recompute_modules[group]) {
        if (last == module_inputs_.size() || order_position_[m.index()] > last_position) {
          last = group;
          last_position = order_position_[m.index()];
        }
      }
    }
    if (last < module_inputs_.size()) module_inputs_[last].clear();
  }

  bool ReachesOffloadHooks(NodeId n) const {
    return n.index() >= beyond_hooks_.size() || !beyond_hooks_[n.index()];
  }

  // Per entry of `saved` (SavedAtForward(n)): whether the hooks move it to the host (an
  // nn.Parameter is one the op reads itself, not a view or autocast copy of it).
  std::vector<bool> MovedByHooks(NodeId n, const std::vector<BufferId>& saved) const {
    const Node& node = g_.node(n);
    const NodeInfo& info = nodes_[n.index()];
    std::vector<bool> moves(saved.size(), false);
    for (size_t k = 0; k < saved.size(); ++k) {
      if (!saved[k].valid()) continue;
      const Buffer& b = p_.buffer(saved[k]);
      bool parameter = false;
      const SavedTensor& s = info.saved[k];
      if (s.source == SavedTensor::Source::kInput &&
          static_cast<size_t>(s.index) < node.inputs.size()) {
        parameter =
            IsParameter(node.inputs[static_cast<size_t>(s.index)]) &&
            (b.role == BufferRole::kParameterMaster || b.role == BufferRole::kParameterWorking);
      }
      moves[k] = saved_offload_.Moves(b.bytes.constant_value(), parameter);
    }
    return moves;
  }

  // --offload-hooks torchtune* with module recompute: the checkpoint of the module `n` opens
  // saves the module's tensor inputs through the offload hooks (before its first op runs).
  void PackModuleInputs(NodeId n) {
    if (module_inputs_.empty()) return;
    const int group = a_.recompute.group_of[n.index()];
    if (group < 0 || static_cast<size_t>(group) >= module_inputs_.size()) return;
    std::vector<BufferId>& host = module_inputs_host_[static_cast<size_t>(group)];
    if (!host.empty()) return;
    std::vector<BufferId> saved;
    for (ValueId u : module_inputs_[static_cast<size_t>(group)])
      saved.push_back(value_storage_[u.index()]);
    std::vector<bool> moves(saved.size(), false);
    for (size_t k = 0; k < saved.size(); ++k) {
      if (!saved[k].valid()) continue;
      const Buffer& b = p_.buffer(saved[k]);
      moves[k] = options_.offload.hooks == OffloadHooks::kUnsloth
                     ? SavedTensorOffload::UnslothMoves(b.bytes.constant_value(), b.dtype)
                     : saved_offload_.Moves(b.bytes.constant_value(), false);
    }
    host = saved_offload_.Pack("checkpoint " + g_.node(n).name, n, saved, moves);
    host.resize(saved.size());
  }

  // The module's re-run reads its inputs back from the host: the unpacked copies stand for the
  // forward values in the re-run (EnsureAvailable), freed after their last use there.
  void UnpackModuleInputs(size_t group) {
    if (group >= module_inputs_host_.size()) return;
    const std::vector<BufferId>& host = module_inputs_host_[group];
    const std::vector<BufferId> device = saved_offload_.Unpack(
        "checkpoint " + g_.node(options_.recompute_modules[group].front()).name, NodeId(), host,
        /*held_to_next_node=*/false);
    for (size_t k = 0; k < device.size() && k < module_inputs_[group].size(); ++k)
      if (device[k].valid()) recomputed_storage_[module_inputs_[group][k].index()] = device[k];
  }

  // --offload activations: the buffer each entry of the node's saved rule names right after its
  // forward step, as BuildBackward resolves it for a node that is not recomputed (only torchtune's
  // hooks run with recompute, and they never see a checkpointed module's saves). Invalid for
  // entries that name nothing and for quantised weights, which bitsandbytes keeps outside
  // autograd's saved tensors (so save_on_cpu never sees them) and dequantises again in backward.
  std::vector<BufferId> SavedAtForward(NodeId n) const {
    const Node& node = g_.node(n);
    const NodeInfo& info = nodes_[n.index()];
    std::vector<BufferId> saved(info.saved.size());
    size_t extra = 0;
    for (size_t k = 0; k < info.saved.size(); ++k) {
      const SavedTensor& s = info.saved[k];
      if (s.source == SavedTensor::Source::kInput) {
        const auto i = static_cast<size_t>(s.index);
        if (i >= node.inputs.size() || !IsRuntimeValue(node.inputs[i])) continue;
        const ValueId u = node.inputs[i];
        if (IsParameter(u) && quantized_[u.index()]) continue;
        saved[k] =
            IsParameter(u) || info.read_is_cast[i] ? info.read[i] : value_storage_[u.index()];
      } else if (s.source == SavedTensor::Source::kOutput) {
        const auto j = static_cast<size_t>(s.index);
        if (j >= node.outputs.size() || !IsRuntimeValue(node.outputs[j])) continue;
        saved[k] = value_storage_[node.outputs[j].index()];
      } else if (extra < info.extras.size()) {
        saved[k] = info.extras[extra++];
      }
    }
    return saved;
  }

  // --offload activations: one unpack step bringing back the host copies `unpack` names, written
  // into their places in `saved` (the list the next backward step reads).
  void UnpackInto(const std::string& name, NodeId n,
                  const std::vector<std::pair<size_t, BufferId>>& unpack,
                  std::vector<BufferId>& saved) {
    if (unpack.empty()) return;
    std::vector<BufferId> host;
    for (const auto& [at, copy] : unpack) host.push_back(copy);
    const std::vector<BufferId> device = saved_offload_.Unpack(name, n, host);
    for (size_t i = 0; i < unpack.size(); ++i) saved[unpack[i].first] = device[i];
  }

  // The name of loss term i's steps and buffers: "loss" (and "label") for a single-output loss,
  // "loss.<output>" with several.
  std::string LossName(size_t i, const std::string& what) const {
    if (a_.losses.size() == 1) return what;
    return what + "." + g_.value(a_.losses[i].output).name;
  }

  void BuildLoss(size_t i) {
    const ValueId output = a_.losses[i].output;
    const LossSpec& spec = a_.losses[i].spec;
    LossTermState& t = terms_[i];
    LossTerm& term = p_.loss_terms[i];
    const std::string name = LossName(i, "loss");
    const Value& out = g_.value(output);
    t.loss_node.name = name;
    t.loss_node.op_type = spec.op_type;
    t.loss_node.domain = spec.domain;
    t.loss_node.inputs = {output};
    if (spec.has_label) t.loss_node.inputs.push_back(ValueId());
    t.loss_node.outputs = {ValueId()};
    t.loss_schema = &registry_.FindOrUnknown(spec.op_type, spec.domain);

    const DType compute = a_.losses[i].compute;
    Step& step = NewStep(StepKind::kLoss, name);
    step.op_type = spec.op_type;
    step.domain = spec.domain;
    step.compute_dtype = compute;
    p_.loss_step = Now() - 1;
    term.step = p_.loss_step;

    BufferId logits = value_storage_[output.index()];
    Touch(logits);
    t.loss_read = logits;
    DType have = dtype_[output.index()];
    // A chunked loss upcasts one chunk at a time (loss_precision.h): it reads the logits as
    // stored and its fp32 copy of a chunk is scratch of this step.
    const bool chunked = options_.loss_chunks > 0;
    if (compute != DType::kUndefined && have != compute && !chunked)
      t.loss_read = CastFor(output, logits, compute, name, /*share=*/true);
    p_.steps.back().inputs = {t.loss_read};
    if (chunked && compute != DType::kUndefined && have != compute)
      p_.steps.back().workspace = NewWorkspace(TensorBytes(LossChunkElements(out.shape), compute),
                                               name + ".chunk", NodeId());
    // The autocast context covers forward and loss (HF Trainer's compute_loss, Lightning's
    // training_step): its weight-cast cache is cleared only when the context exits here.
    for (BufferId cast : weight_casts_) Touch(cast);
    if (spec.has_label) {
      Touch(term.label);
      p_.steps.back().inputs.push_back(term.label);
    }
    DType loss_dtype =
        compute != DType::kUndefined ? compute : (IsFloating(have) ? have : DType::kFloat32);
    term.loss =
        NewBuffer(name, BufferRole::kLoss, MemoryCategory::kTransients, loss_dtype, Shape{{}});
    if (i == 0) p_.loss_buffer = term.loss;
    AllocateHere(term.loss);
    p_.steps.back().outputs = {term.loss};

    // The context the loss's registry rules see: the logits as read, the label, a scalar loss.
    TensorInfo logits_info{true, IsFloating(have) && compute != DType::kUndefined ? compute : have,
                           out.shape, ValueKind::kIntermediate, std::nullopt};
    OpContext ctx{t.loss_node, {logits_info}, {}, nullptr};
    if (spec.has_label)
      ctx.inputs.push_back(
          TensorInfo{true, spec.label_dtype, spec.label_shape, ValueKind::kInput, std::nullopt});
    ctx.outputs.push_back(
        TensorInfo{true, loss_dtype, Shape{{}}, ValueKind::kIntermediate, std::nullopt});
    t.loss_saved = t.loss_schema->saved_for_backward(ctx);
    t.loss_workspace = t.loss_schema->backward_workspace(ctx);
    // Chunked: backward holds one chunk's log-prob gradient and its logits' gradient in the
    // loss's dtype at a time (nll_loss_backward, then _log_softmax_backward_data), then
    // ToCopyBackward writes the chunk into the logits' gradient.
    if (chunked)
      t.loss_workspace = TensorBytes(LossChunkElements(out.shape), logits_info.dtype) * Dim(2);
    // Extras the loss forward keeps for its backward (e.g. log-probabilities).
    for (const SavedTensor& s : t.loss_saved) {
      if (s.source != SavedTensor::Source::kExtra) continue;
      BufferId b = NewBuffer(name + "." + s.name, BufferRole::kSavedExtra,
                             MemoryCategory::kActivations, s.dtype, s.shape);
      p_.buffers[b.index()].saved_name = s.name;
      AllocateHere(b);
      t.loss_extras.push_back(b);
    }
    p_.steps.back().extras = t.loss_extras;
    // torchtune's hooks wrap the model's forward only: the loss saves outside them (Unsloth
    // has no hooks).
    if (OffloadsActivations() && options_.offload.hooks == OffloadHooks::kSaveOnCpu &&
        needs_grad_[output.index()]) {
      std::vector<BufferId> saved;
      size_t extra = 0;
      for (const SavedTensor& s : t.loss_saved) saved.push_back(LossSaved(i, s, extra));
      t.loss_packed =
          saved_offload_.Pack(name, NodeId(), saved, std::vector<bool>(saved.size(), true));
    }
  }

  // Elements of one chunk of a chunked loss's logits [batch, seq, vocab]: torch.chunk splits seq
  // into chunks of ceil(seq / C). REQUIRES: rank 3 with a constant seq (DeriveTrainingProgram
  // checks).
  Dim LossChunkElements(const Shape& logits) const {
    const int64_t seq = *logits.dims[1].constant_value();
    const int64_t chunk = (seq + options_.loss_chunks - 1) / options_.loss_chunks;
    return logits.dims[0] * Dim(chunk) * logits.dims[2];
  }

  // The checkpoint arguments (checkpoint_arguments.h) of the module node `n` belongs to, allocated
  // at the module's first forward step (a value several modules read: at the first of them).
  void HoldCheckpointArguments(NodeId n) {
    const int group = a_.recompute.group_of[n.index()];
    if (group < 0 || static_cast<size_t>(group) >= checkpoint_arguments_.size()) return;
    if (arguments_held_[static_cast<size_t>(group)]) return;
    arguments_held_[static_cast<size_t>(group)] = true;
    std::vector<BufferId>& held = held_by_module_[static_cast<size_t>(group)];
    for (ValueId v : checkpoint_arguments_[static_cast<size_t>(group)]) {
      BufferId& b = checkpoint_argument_of_value_[v];
      if (!b.valid()) {
        const Value& value = g_.value(v);
        b = NewBuffer("checkpoint_argument(" + value.name + ")", BufferRole::kValue,
                      MemoryCategory::kActivations, value.dtype, value.shape);
        AllocateHere(b);
        builder_.MarkHeldByCheckpoint(b);
      }
      held.push_back(b);
    }
  }

  // Each backward step of a checkpointed module keeps what the module holds alive (its
  // arguments; with --recompute-reentrant its recomputed outputs): freed after the last backward
  // step of the last module holding them.
  void TouchHeldByModule(NodeId n) {
    const int group = a_.recompute.group_of[n.index()];
    if (group < 0 || static_cast<size_t>(group) >= held_by_module_.size()) return;
    for (BufferId b : held_by_module_[static_cast<size_t>(group)]) Touch(b);
  }

  // --recompute-reentrant: CheckpointFunction.backward re-runs the module's whole forward (no
  // early stop), so the producers of what leaves the module run again too, after its dropped
  // nodes; their new outputs are the `outputs` it passes to torch.autograd.backward, alive until
  // that inner backward returns, as are the gradients of those outputs (its `args`). (Forward ran
  // under no_grad: the output producers' saved tensors are the re-run's, CreateExtras in
  // Recompute replaces the forward's.)
  void RecomputeModuleOutputs(size_t group) {
    if (group >= options_.recompute_modules.size()) return;
    std::vector<NodeId> producers;
    for (NodeId m : options_.recompute_modules[group]) {
      const NodeInfo& info = nodes_[m.index()];
      if (info.active && !info.recompute && !info.recomputed_in_backward) producers.push_back(m);
    }
    std::sort(producers.begin(), producers.end(), [this](NodeId a, NodeId b) {
      return order_position_[a.index()] < order_position_[b.index()];
    });
    for (NodeId m : producers) {
      Recompute(m);
      for (ValueId o : g_.node(m).outputs) {
        if (!IsRuntimeValue(o)) continue;
        if (recomputed_storage_[o.index()].valid())
          held_by_module_[group].push_back(recomputed_storage_[o.index()]);
        // The gradients of the outputs are backward()'s `args`, which the Python frame holds
        // until the inner backward returns.
        if (gradient_[o.index()].valid()) held_by_module_[group].push_back(gradient_[o.index()]);
      }
    }
  }

  // ---- backward -------------------------------------------------------------------------------

  // The buffer holding activation `v` at this point of backward, recomputing what was dropped.
  BufferId EnsureAvailable(ValueId v) {
    if (recomputed_storage_[v.index()].valid()) return recomputed_storage_[v.index()];
    NodeId producer = g_.value(v).producer;
    if (!producer.valid() || !nodes_[producer.index()].active) return value_storage_[v.index()];
    const NodeInfo& info = nodes_[producer.index()];
    if (info.recompute) {
      Recompute(producer);
      return recomputed_storage_[v.index()];
    }
    if (info.is_view) {
      ValueId base = g_.node(producer).inputs[0];
      if (!IsRuntimeValue(base) || IsParameter(base)) return value_storage_[v.index()];
      BufferId b = EnsureAvailable(base);
      if (b == value_storage_[base.index()]) return value_storage_[v.index()];
      // The base was recomputed: re-create the view on the new storage (allocates nothing).
      Step& step = NewStep(StepKind::kRecompute, g_.node(producer).name, producer);
      step.compute_dtype = info.compute;
      step.inputs = {b};
      Touch(b);
      for (ValueId o : g_.node(producer).outputs)
        if (IsRuntimeValue(o)) recomputed_storage_[o.index()] = b;
      step.outputs.assign(g_.node(producer).outputs.size(), b);
      return b;
    }
    return value_storage_[v.index()];
  }

  void Recompute(NodeId n) {
    NodeInfo& info = nodes_[n.index()];
    if (info.recomputed_in_backward) return;
    // A node of a checkpointed module: re-run the whole module now, in forward order, as
    // torch.utils.checkpoint re-runs the module's forward at the first unpack of one of its saved
    // tensors (recompute_set.h). Each member then recurses into its inputs as below.
    const int group = a_.recompute.group_of[n.index()];
    if (group >= 0 && !group_recomputed_[static_cast<size_t>(group)]) {
      group_recomputed_[static_cast<size_t>(group)] = true;
      UnpackModuleInputs(static_cast<size_t>(group));
      std::vector<NodeId> members = a_.recompute.groups[static_cast<size_t>(group)];
      std::sort(members.begin(), members.end(), [this](NodeId a, NodeId b) {
        return order_position_[a.index()] < order_position_[b.index()];
      });
      for (NodeId m : members) Recompute(m);
      if (options_.recompute_reentrant) RecomputeModuleOutputs(static_cast<size_t>(group));
      return;
    }
    const Node& node = g_.node(n);
    // Inputs first: they may themselves be dropped (a recomputed segment).
    std::vector<BufferId> sources(node.inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      ValueId u = node.inputs[i];
      if (IsRuntimeValue(u) && !IsParameter(u)) sources[i] = EnsureAvailable(u);
    }
    info.recomputed_in_backward = true;
    Step& step = NewStep(StepKind::kRecompute, node.name, n);
    step.compute_dtype = info.compute;
    ReadInputs(n, info.compute, !info.is_view, /*share_casts=*/false,
               [&](size_t i) { return sources[i]; });
    std::vector<BufferId> outputs(node.outputs.size());
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      ValueId o = node.outputs[j];
      if (!IsRuntimeValue(o)) continue;
      if (info.is_view && !info.read.empty() && info.read[0].valid()) {
        outputs[j] = info.read[0];
      } else {
        outputs[j] = NewBuffer(g_.value(o).name + ".recomputed", BufferRole::kRecomputed,
                               MemoryCategory::kActivations, dtype_[o.index()], ShapeOf(o), o, n);
        AllocateHere(outputs[j]);
      }
      recomputed_storage_[o.index()] = outputs[j];
    }
    p_.steps.back().outputs = outputs;
    EmitForwardWorkspace(n);
    if (info.needs_backward) CreateExtras(n);
  }

  // What the registry's forward_workspace rule asks for the node's forward (or recompute) step,
  // allocated at its Begin and freed at its End (liveness: the step is its only use).
  void EmitForwardWorkspace(NodeId n) {
    // Most ops have no rule (none: no workspace), which spares building their context.
    const OpSchema& schema = *nodes_[n.index()].schema;
    if (!schema.forward_workspace) return;
    const Dim bytes = schema.forward_workspace(ProgramContext(n));
    BufferId b = NewWorkspace(bytes, g_.node(n).name + ".forward", n);
    if (b.valid()) p_.steps.back().workspace = b;
  }

  // The saved extra that backward returns as input `slot`'s gradient
  // (OpSchema::gradients_from_saved), or invalid: then a gradient buffer is made as usual. Not
  // with --offload activations, whose unpacked copies are other buffers.
  BufferId GradientFromSaved(NodeId n, size_t slot) const {
    const NodeInfo& info = nodes_[n.index()];
    if (!info.packed.empty()) return BufferId();
    for (const auto& [input, name] : info.schema->gradients_from_saved) {
      if (static_cast<size_t>(input) != slot) continue;
      for (BufferId b : info.extras)
        if (p_.buffer(b).saved_name == name) return b;
    }
    return BufferId();
  }

  // Axes of `v` that its layout reads more than once: a size other than 1 at stride 0. Nullopt
  // when the shape is unknown.
  std::optional<size_t> BroadcastAxes(ValueId v) const {
    const Shape shape = ShapeOf(v);
    if (!shape.known) return std::nullopt;
    const Strides layout = LayoutOf(shape, a_.views.value_strides[v.index()]);
    size_t axes = 0;
    for (size_t i = 0; i < shape.rank() && i < layout.size(); ++i)
      if (shape.dims[i] != Dim(1) && layout[i] == Dim(0)) ++axes;
    return axes;
  }

  // Whether view output `out` of `in` broadcasts an axis `in` does not (an Expand of a size-1
  // axis, HF's repeat_kv x[:, :, None].expand(b, kv, n_rep, s, d)). Its backward is then no view
  // of the output gradient: at::sum_to(grad, self.sizes()) sums into a new tensor of `in`'s shape.
  bool AddsBroadcast(ValueId in, ValueId out) const {
    if (!out.valid()) return false;
    const std::optional<size_t> before = BroadcastAxes(in);
    const std::optional<size_t> after = BroadcastAxes(out);
    return before && after && *after > *before;
  }

  // Where a backward step writes the gradient of activation (non-parameter) `u`. `from_saved`:
  // the saved tensor forward already computed it into (GradientFromSaved): it becomes the
  // gradient, or the part added into an existing one, and nothing is allocated.
  GradientWrite ValueGradientWrite(int slot, ValueId u, NodeId n, BufferId alias,
                                   BufferId from_saved = BufferId()) {
    GradientWrite w;
    w.slot = slot;
    BufferId& grad = gradient_[u.index()];
    if (!alias.valid()) alias = from_saved;
    if (grad.valid() && from_saved.valid()) {
      w.target = grad;
      Touch(grad);
      w.part = from_saved;
      Touch(from_saved);
      return w;
    }
    if (!grad.valid() && alias.valid()) {
      grad = alias;  // a view's input gradient is a view of its output gradient
      w.target = grad;
      Touch(grad);
      return w;
    }
    if (!grad.valid()) {
      grad = NewBuffer("grad(" + g_.value(u).name + ")", BufferRole::kValueGradient,
                       MemoryCategory::kTransients, dtype_[u.index()], ShapeOf(u), u, n);
      AllocateHere(grad);
      w.target = grad;
      return w;
    }
    w.target = grad;
    Touch(grad);
    w.part =
        NewBuffer("grad(" + g_.value(u).name + ")@" + g_.node(n).name, BufferRole::kGradientPart,
                  MemoryCategory::kTransients, dtype_[u.index()], ShapeOf(u), u, n);
    AllocateHere(w.part);
    return w;
  }

  // A parameter gradient contribution: written into a part, then accumulated by its own step.
  // Under autocast the op read a cast of the parameter, so its backward writes the gradient in
  // the cast's dtype; EmitAccumulations casts it to the gradient's dtype first.
  // `from_saved` as for ValueGradientWrite: the saved tensor is the contribution (AccumulateGrad
  // then steals it or adds it in and frees it).
  GradientWrite ParameterGradientWrite(int slot, ValueId u, NodeId n, std::string_view producer,
                                       BufferId from_saved = BufferId()) {
    if (from_saved.valid()) {
      GradientWrite w;
      w.slot = slot;
      w.target = from_saved;
      Touch(from_saved);
      MarkExplicitFree(from_saved);
      return w;
    }
    const ParameterBuffers& pb = p_.parameters[static_cast<size_t>(param_index_[u.index()])];
    const Buffer grad = p_.buffer(pb.gradient);  // a copy: NewBuffer grows the buffer vector
    const NodeInfo& info = nodes_[n.index()];
    DType part_dtype = grad.dtype;
    const auto at = static_cast<size_t>(slot);
    if (regime_.casts_weights_per_forward && at < info.read.size() && info.read[at].valid() &&
        p_.buffer(info.read[at]).role == BufferRole::kCast)
      part_dtype = p_.buffer(info.read[at]).dtype;
    GradientWrite w;
    w.slot = slot;
    w.target = NewBuffer(grad.name + "@" + std::string(producer), BufferRole::kGradientPart,
                         MemoryCategory::kGradients, part_dtype, grad.shape, u, n);
    AllocateHere(w.target);
    MarkExplicitFree(w.target);
    return w;
  }

  void EmitAccumulations(const std::vector<GradientWrite>& writes,
                         const std::vector<ValueId>& values) {
    for (size_t i = 0; i < writes.size(); ++i) {
      ValueId u = values[i];
      if (!IsParameter(u)) continue;
      int index = param_index_[u.index()];
      BufferId grad = p_.parameters[static_cast<size_t>(index)].gradient;
      BufferId part = writes[i].target;
      if (p_.buffer(part).dtype != p_.buffer(grad).dtype) part = CastGradientPart(part, grad);
      Step& step = NewStep(StepKind::kAccumulateGradient, "grad(" + g_.value(u).name + ")");
      step.parameter = index;
      step.accumulate_part = part;
      step.inputs = {part};
      step.outputs = {grad};
      // AccumulateGrad: the first contribution becomes the gradient (steal, no copy); later ones
      // are added into it and freed.
      step.begin.push_back(Guarded(Action::kFree, part, Guard::kIfNotLive, grad));
      MemoryEvent take = Guarded(Action::kAlloc, grad, Guard::kIfNotLive, grad);
      take.storage_of = part;  // the part's storage becomes the gradient
      step.begin.push_back(take);
      step.end.push_back(Guarded(Action::kFree, part, Guard::kIfLive, part));
      if (options_.optimizer_in_backward && --pending_[static_cast<size_t>(index)] == 0)
        EmitStepInBackward(index);
    }
  }

  // --optimizer-in-backward: how many gradient contributions each parameter still awaits in
  // backward (one per backward input slot that reads it, as BuildBackward writes them). Its
  // post-accumulate-grad hook fires after the last: autograd sums a leaf's contributions before
  // its one AccumulateGrad runs.
  void CountGradientContributions() {
    pending_.assign(p_.parameters.size(), 0);
    for (NodeId n : order_) {
      const NodeInfo& info = nodes_[n.index()];
      if (!info.needs_backward) continue;
      const Node& node = g_.node(n);
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const ValueId u = node.inputs[i];
        if (!info.gradient_inputs[i] || !needs_grad_[u.index()] || !IsParameter(u)) continue;
        ++pending_[static_cast<size_t>(param_index_[u.index()])];
      }
    }
  }

  // torchtune's optimizer_in_bwd hook (training/memory.py register_optim_in_bwd_hooks):
  // optim_dict[param].step() then .zero_grad() (set_to_none), one optimizer per parameter. The
  // step creates this parameter's state lazily, allocates its own intermediates (a foreach over
  // one tensor) and frees the gradient at its End.
  void EmitStepInBackward(int index) {
    const ParameterBuffers& pb = p_.parameters[static_cast<size_t>(index)];
    NewStep(StepKind::kOptimizerStep, std::string(OptimizerKindName(options_.optimizer)) + "(" +
                                          g_.value(pb.value).name + ")");
    p_.steps.back().parameter = index;
    EmitParameterStepEvents(pb);
    // Symbolic parameter shapes were refused by the optimizer phase's transients already.
    (void)EmitOptimizerTransients(index);
    p_.steps.back().end.push_back(FreeEvent(pb.gradient));
  }

  // What stepping one parameter allocates at the current kOptimizerStep: its states, created by
  // the first step (torch.optim), then persistent; an fp32 master gradient for the update.
  void EmitParameterStepEvents(const ParameterBuffers& pb) {
    Step& step = p_.steps.back();
    for (BufferId s : pb.optimizer_states)
      step.begin.push_back(Guarded(Action::kAlloc, s, Guard::kIfNotLive, s));
    if (pb.master_gradient.valid()) {
      step.begin.push_back(AllocEvent(pb.master_gradient));
      step.end.push_back(FreeEvent(pb.master_gradient));
    }
  }

  // Autocast's ToCopyBackward: the part computed in the working dtype becomes a part in the
  // gradient's dtype; both are live while the cast runs, the half one is freed at its End.
  BufferId CastGradientPart(BufferId half_part, BufferId grad) {
    const Buffer half = p_.buffer(half_part);  // a copy: NewBuffer grows the buffer vector
    const DType dtype = p_.buffer(grad).dtype;
    Step& step = NewStep(StepKind::kCastGradient, "cast(" + half.name + ")", half.node);
    step.compute_dtype = dtype;
    BufferId part =
        NewBuffer(half.name + "." + std::string(DTypeName(dtype)), BufferRole::kGradientPart,
                  MemoryCategory::kGradients, dtype, half.shape, half.value, half.node);
    AllocateHere(part);
    MarkExplicitFree(part);
    Touch(half_part);
    p_.steps.back().inputs = {half_part};
    p_.steps.back().outputs = {part};
    p_.steps.back().casts.push_back(CastOp{half_part, part});
    p_.steps.back().end.push_back(FreeEvent(half_part));
    return part;
  }

  BufferId NewWorkspace(const Dim& bytes, const std::string& name, NodeId n) {
    if (bytes.constant_value() == 0) return BufferId();
    BufferId b = NewBuffer(name + ".workspace", BufferRole::kWorkspace, MemoryCategory::kWorkspace,
                           DType::kUInt8, Shape{{bytes}}, ValueId(), n);
    AllocateHere(b);
    return b;
  }

  // The buffer the loss's saved rule entry `s` names (logits as read, label, loss, extras in
  // order: `extra` counts the extras taken).
  BufferId LossSaved(size_t i, const SavedTensor& s, size_t& extra) const {
    const LossTermState& t = terms_[i];
    const LossTerm& term = p_.loss_terms[i];
    if (s.source == SavedTensor::Source::kInput)
      return s.index == 0 ? t.loss_read : (s.index == 1 ? term.label : BufferId());
    if (s.source == SavedTensor::Source::kOutput) return term.loss;
    return extra < t.loss_extras.size() ? t.loss_extras[extra++] : BufferId();
  }

  void BuildLossBackward(size_t i) {
    const ValueId output = a_.losses[i].output;
    const LossSpec& spec = a_.losses[i].spec;
    const LossTermState& t = terms_[i];
    const std::string name = LossName(i, "loss");
    if (!needs_grad_[output.index()]) return;
    // --offload activations: what the loss saved comes back from the host first.
    const std::vector<BufferId> unpacked = saved_offload_.Unpack(name, NodeId(), t.loss_packed);
    Step& step = NewStep(StepKind::kLossBackward, name);
    p_.loss_terms[i].backward_step = Now() - 1;
    step.op_type = spec.op_type;
    step.domain = spec.domain;
    std::vector<BufferId> saved;
    size_t extra = 0;
    for (size_t k = 0; k < t.loss_saved.size(); ++k) {
      BufferId b = LossSaved(i, t.loss_saved[k], extra);
      if (k < unpacked.size() && unpacked[k].valid()) b = unpacked[k];
      if (!b.valid()) continue;
      Touch(b);
      saved.push_back(b);
    }
    p_.steps.back().saved = saved;
    p_.steps.back().workspace = NewWorkspace(t.loss_workspace, name, NodeId());
    // The loss read a cast of the logits (autocast's fp32 loss): its gradient comes out in the
    // loss's dtype and is cast to the logits' after (see GradientComputeDType).
    const DType computed = p_.buffer(t.loss_read).dtype;
    if (t.loss_read != value_storage_[output.index()] && computed != dtype_[output.index()]) {
      GradientWrite w = ComputedGradientWrite(0, output, NodeId(), computed);
      p_.steps.back().input_gradients = {w};
      EmitValueGradientCast(output, w.target);
      return;
    }
    GradientWrite w = ValueGradientWrite(0, output, NodeId(), BufferId());
    p_.steps.back().input_gradients = {w};
  }

  void BuildBackward() {
    // Autograd runs the ready node created last first: the last term's loss backward, then the
    // earlier ones', before any model node.
    for (size_t i = a_.losses.size(); i > 0; --i) BuildLossBackward(i - 1);
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      NodeId n = *it;
      NodeInfo& info = nodes_[n.index()];
      if (!info.needs_backward) continue;
      const Node& node = g_.node(n);
      // Resolve the saved tensors first: this may emit recompute steps.
      std::vector<BufferId> saved;
      std::vector<std::pair<size_t, ValueId>> dequantize;  // (index in saved, weight)
      std::vector<std::pair<size_t, BufferId>> unpack;     // (index in saved, host copy)
      size_t extra = 0;
      for (size_t k = 0; k < info.saved.size(); ++k) {
        const SavedTensor& s = info.saved[k];
        if (k < info.packed.size() && info.packed[k].valid()) {
          // --offload activations: the host copy made after forward comes back below.
          if (s.source == SavedTensor::Source::kExtra) ++extra;
          unpack.emplace_back(saved.size(), info.packed[k]);
          saved.emplace_back();
          continue;
        }
        BufferId b;
        if (s.source == SavedTensor::Source::kInput) {
          size_t i = static_cast<size_t>(s.index);
          if (i >= node.inputs.size() || !IsRuntimeValue(node.inputs[i])) continue;
          ValueId u = node.inputs[i];
          if (IsParameter(u) && quantized_[u.index()]) {
            // bitsandbytes keeps the codes and dequantises again in backward.
            dequantize.emplace_back(saved.size(), u);
            b = ParameterRead(u, info.compute, node.name, /*share=*/false);
          } else if (IsParameter(u)) {
            // An autocast weight cast (or a frozen weight's cast) of a recomputed node is the
            // recompute's own.
            if (info.recompute && p_.buffer(info.read[i]).role == BufferRole::kCast) Recompute(n);
            b = info.read[i];
          } else if (info.read_is_cast[i]) {
            if (info.recompute) Recompute(n);  // the cast copy is the node's own
            b = info.read[i];
          } else {
            b = EnsureAvailable(u);
          }
        } else if (s.source == SavedTensor::Source::kOutput) {
          size_t j = static_cast<size_t>(s.index);
          if (j >= node.outputs.size() || !IsRuntimeValue(node.outputs[j])) continue;
          b = EnsureAvailable(node.outputs[j]);
        } else {
          if (info.recompute) Recompute(n);
          if (extra < info.extras.size()) b = info.extras[extra++];
        }
        if (b.valid()) saved.push_back(b);
      }
      UnpackInto(node.name, n, unpack, saved);
      Step& step = NewStep(StepKind::kBackward, node.name, n);
      step.compute_dtype = info.compute;
      saved_offload_.AtBackwardStep();
      TouchHeldByModule(n);
      for (const auto& [index, u] : dequantize) {
        const DType want = info.compute != DType::kUndefined ? info.compute : g_.value(u).dtype;
        Touch(saved[index]);
        saved[index] = ParameterCast(u, saved[index], want, node.name);
      }
      for (BufferId b : saved) Touch(b);
      p_.steps.back().saved = saved;
      step.output_gradients.assign(node.outputs.size(), BufferId());
      for (size_t j = 0; j < node.outputs.size(); ++j) {
        ValueId o = node.outputs[j];
        if (!o.valid() || !needs_grad_[o.index()]) continue;
        MEMPLAN_CHECK(gradient_[o.index()].valid());
        step.output_gradients[j] = gradient_[o.index()];
        Touch(gradient_[o.index()]);
      }
      std::vector<BufferId> output_gradients = step.output_gradients;
      p_.steps.back().workspace = NewWorkspace(info.workspace, node.name, n);
      std::vector<GradientWrite> writes;
      std::vector<ValueId> written;
      std::vector<std::pair<ValueId, BufferId>> to_cast;  // (activation, part computed)
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        ValueId u = node.inputs[i];
        if (!info.gradient_inputs[i] || !needs_grad_[u.index()]) continue;
        int slot = static_cast<int>(i);
        const BufferId from_saved = GradientFromSaved(n, i);
        if (IsParameter(u)) {
          writes.push_back(ParameterGradientWrite(slot, u, n, node.name, from_saved));
        } else if (const DType computed = GradientComputeDType(n, i);
                   computed != DType::kUndefined && !from_saved.valid()) {
          writes.push_back(ComputedGradientWrite(slot, u, n, computed));
          to_cast.emplace_back(u, writes.back().target);
        } else {
          const bool gradient_is_view = info.is_view && !info.schema->view_is_partial && i == 0 &&
                                        !AddsBroadcast(u, node.outputs[0]);
          BufferId alias = gradient_is_view ? output_gradients[0] : BufferId();
          writes.push_back(ValueGradientWrite(slot, u, n, alias, from_saved));
        }
        written.push_back(u);
      }
      p_.steps.back().input_gradients = writes;
      EmitAccumulations(writes, written);
      for (const auto& [u, part] : to_cast) EmitValueGradientCast(u, part);
    }
  }

  // The dtype backward computes input `slot`'s gradient in when that differs from how the
  // activation is stored, else kUndefined. The op saw a cast of the activation, or promoted it
  // inside its kernel: its backward yields the gradient in the dtype it computed in, and autograd
  // casts it to the input's dtype afterwards (ToCopyBackward for a cast; the engine's
  // validate_outputs for a promoted input). Both are live while that cast runs.
  DType GradientComputeDType(NodeId n, size_t slot) const {
    const NodeInfo& info = nodes_[n.index()];
    const ValueId u = g_.node(n).inputs[slot];
    DType computed = DType::kUndefined;
    if (slot < info.read_is_cast.size() && info.read_is_cast[slot])
      computed = p_.buffer(info.read[slot]).dtype;
    else if (info.compute != DType::kUndefined && !info.is_view && IsFloating(dtype_[u.index()]) &&
             PromotesInKernel(*info.schema, dtype_[u.index()], info.compute))
      computed = info.compute;
    return computed == dtype_[u.index()] ? DType::kUndefined : computed;
  }

  // A backward write of activation `u`'s gradient in `dtype` (GradientComputeDType), into a part
  // that EmitValueGradientCast turns into the gradient.
  GradientWrite ComputedGradientWrite(int slot, ValueId u, NodeId n, DType dtype) {
    GradientWrite w;
    w.slot = slot;
    w.target = NewBuffer(
        "grad(" + g_.value(u).name + ")@" + NameOf(n) + "." + std::string(DTypeName(dtype)),
        BufferRole::kGradientPart, MemoryCategory::kTransients, dtype, ShapeOf(u), u, n);
    AllocateHere(w.target);
    MarkExplicitFree(w.target);
    return w;
  }

  // The cast after a ComputedGradientWrite: the part becomes grad(u) in u's dtype, or a part in
  // that dtype added into the gradient an earlier consumer wrote. The computed part is freed at
  // the cast's End, the added one at the accumulation's.
  void EmitValueGradientCast(ValueId u, BufferId computed) {
    const Buffer from = p_.buffer(computed);  // a copy: NewBuffer grows the buffer vector
    const DType dtype = dtype_[u.index()];
    BufferId& grad = gradient_[u.index()];
    const bool first = !grad.valid();
    NewStep(StepKind::kCastGradient, "cast(" + from.name + ")", from.node).compute_dtype = dtype;
    BufferId target;
    if (first) {
      grad = NewBuffer("grad(" + g_.value(u).name + ")", BufferRole::kValueGradient,
                       MemoryCategory::kTransients, dtype, ShapeOf(u), u, from.node);
      target = grad;
      AllocateHere(target);
    } else {
      target = NewBuffer(from.name + "." + std::string(DTypeName(dtype)), BufferRole::kGradientPart,
                         MemoryCategory::kTransients, dtype, ShapeOf(u), u, from.node);
      AllocateHere(target);
      MarkExplicitFree(target);
    }
    Touch(computed);
    Step& cast = p_.steps.back();
    cast.inputs = {computed};
    cast.outputs = {target};
    cast.casts.push_back(CastOp{computed, target});
    cast.end.push_back(FreeEvent(computed));
    if (first) return;
    Step& add = NewStep(StepKind::kAccumulateGradient, "grad(" + g_.value(u).name + ")", from.node);
    Touch(grad);
    Touch(target);
    add.accumulate_part = target;
    add.inputs = {target};
    add.outputs = {grad};
    add.end.push_back(FreeEvent(target));
  }

  std::string NameOf(NodeId n) const { return n.valid() ? g_.node(n).name : std::string("loss"); }

  // ---- optimizer phase ------------------------------------------------------------------------

  Status BuildOptimizer() {
    p_.optimizer.begin = Now();
    if (options_.optimizer_in_backward) {
      // Every parameter was stepped inside backward; the recipe calls no optimizer after it.
      MEMPLAN_RETURN_IF_ERROR(CheckStepSizes());
      p_.optimizer.end = Now();
      return OkStatus();
    }
    BufferId found_inf;
    if (p_.loss_scaling.mode != LossScalingMode::kNone) {
      // Both modes check the gradients for inf/NaN and skip an overflowing step: found_inf lives
      // until the optimizer step has read it. GradScaler.unscale_ also makes the reciprocal of
      // its device scale (inv_scale), freed when unscale_ returns.
      NewStep(StepKind::kUnscaleAndCheckOverflow, "unscale");
      found_inf = NewBuffer("found_inf", BufferRole::kScalar, MemoryCategory::kOther,
                            DType::kFloat32, Shape{{}});
      AllocateHere(found_inf);
      MarkExplicitFree(found_inf);
      p_.steps.back().outputs = {found_inf};
      if (loss_scale_.valid()) {
        BufferId inv_scale = NewBuffer("inv_scale", BufferRole::kScalar, MemoryCategory::kOther,
                                       DType::kFloat32, Shape{{}});
        AllocateHere(inv_scale);
        p_.steps.back().inputs = {loss_scale_};
        p_.steps.back().outputs.push_back(inv_scale);
      }
    }
    if (options_.clip_gradients) {
      NewStep(StepKind::kClipGradients, "clip");
      BufferId norm = NewBuffer("grad_norm", BufferRole::kScalar, MemoryCategory::kOther,
                                DType::kFloat32, Shape{{}});
      AllocateHere(norm);
      p_.steps.back().outputs = {norm};
    }
    NewStep(StepKind::kOptimizerStep, std::string(OptimizerKindName(options_.optimizer)));
    if (found_inf.valid()) p_.steps.back().inputs = {found_inf};
    for (const ParameterBuffers& pb : p_.parameters)
      if (pb.gradient.valid()) EmitParameterStepEvents(pb);
    MEMPLAN_RETURN_IF_ERROR(EmitOptimizerTransients());
    if (found_inf.valid()) p_.steps.back().end.push_back(FreeEvent(found_inf));
    NewStep(StepKind::kZeroGradients, std::string(ZeroGradModeName(options_.zero_grad)));
    if (options_.zero_grad == ZeroGradMode::kSetToNone) {
      for (const ParameterBuffers& pb : p_.parameters)
        if (pb.gradient.valid()) p_.steps.back().end.push_back(FreeEvent(pb.gradient));
    }
    p_.optimizer.end = Now();
    return OkStatus();
  }

  // --optimizer-in-backward: the error EmitOptimizerTransients gives for a parameter of symbolic
  // shape, which the steps in backward could not return.
  Status CheckStepSizes() const {
    if (OffloadsOptimizer(options_.offload.mode) ||
        options_.optimizer_impl == OptimizerImpl::kFused ||
        !HasTorchOptimizerImpls(options_.optimizer))
      return OkStatus();
    for (const ParameterBuffers& pb : p_.parameters) {
      if (!pb.gradient.valid()) continue;
      if (!p_.buffer(pb.gradient).shape.NumElements().constant_value())
        return MakeError("--optimizer-impl: parameter '" + g_.value(pb.value).name +
                         "' has a symbolic shape, so its optimizer step cannot be sized");
    }
    return OkStatus();
  }

  // The intermediates the kOptimizerStep step (the current step) allocates beyond the state
  // (analyzer/program/optimizer_transient.h): allocated at its Begin, after the lazily created
  // states (torch's _init_group runs before the update), and freed at its End. None when the
  // optimizer runs on the host (--offload optimizer: DeepSpeed's CPU Adam is one fused C++ loop).
  // `only` >= 0: that parameter's step alone (--optimizer-in-backward: an optimizer per
  // parameter, so a foreach step runs over one tensor).
  Status EmitOptimizerTransients(int only = -1) {
    if (OffloadsOptimizer(options_.offload.mode) ||
        options_.optimizer_impl == OptimizerImpl::kFused ||
        !HasTorchOptimizerImpls(options_.optimizer))
      return OkStatus();
    std::vector<OptimizerStepParameter> trainable;
    std::vector<const ParameterBuffers*> owner;
    for (size_t i = 0; i < p_.parameters.size(); ++i) {
      const ParameterBuffers& pb = p_.parameters[i];
      if (only >= 0 && i != static_cast<size_t>(only)) continue;
      if (!pb.gradient.valid()) continue;  // frozen: torch skips parameters whose grad is None
      const Buffer& grad = p_.buffer(pb.gradient);
      const std::optional<int64_t> elements = grad.shape.NumElements().constant_value();
      if (!elements) {
        return MakeError("--optimizer-impl: parameter '" + g_.value(pb.value).name +
                         "' has a symbolic shape, so its optimizer step cannot be sized");
      }
      const DType state = pb.optimizer_states.empty() ? regime_.optimizer_state
                                                      : p_.buffer(pb.optimizer_states[0]).dtype;
      trainable.push_back({*elements, grad.dtype, state});
      owner.push_back(&pb);
    }
    const std::vector<OptimizerTransient> transients = OptimizerStepTransients(
        options_.optimizer, options_.optimizer_impl, options_.weight_decay, trainable);
    const std::string prefix = std::string(OptimizerKindName(options_.optimizer)) + ".";
    for (const OptimizerTransient& t : transients) {
      ValueId value;
      std::string name = prefix + t.name;
      if (t.parameter >= 0) {
        value = owner[static_cast<size_t>(t.parameter)]->value;
        name += "(" + g_.value(value).name + ")";
      }
      const BufferId b =
          NewBuffer(name, BufferRole::kOptimizerTransient, MemoryCategory::kTransients, t.dtype,
                    Shape{{Dim(t.elements)}}, value);
      MarkExplicitFree(b);
      p_.steps.back().begin.push_back(AllocEvent(b));
      p_.steps.back().end.push_back(FreeEvent(b));
    }
    return OkStatus();
  }

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

}  // namespace

Expected<EmittedProgram> EmitSteps(const Graph& graph, const ProgramOptions& options,
                                   const OpRegistry& registry, const DerivationAnalysis& analysis) {
  StepEmitter emitter(graph, options, registry, analysis);
  return emitter.Run();
}

}  // namespace memplan
