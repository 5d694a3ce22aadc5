#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <string>

#include "analyzer/caching_allocator.h"
#include "runtime/program_shapes.h"
#include "runtime/weight_init.h"

namespace memplan {
namespace {

using Action = MemoryEvent::Action;
using Guard = MemoryEvent::Guard;

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t x = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The CPU kernels' name of a kExtra saved tensor the registry names (graph/ops): BatchNorm's
// save_mean/save_invstd, LayerNorm/GroupNorm's mean/rstd, Dropout's dropout_mask.
std::string KernelExtraName(std::string registry_name) {
  if (registry_name.rfind("save_", 0) == 0) registry_name = registry_name.substr(5);
  if (registry_name == "rstd") return "invstd";
  if (registry_name == "dropout_mask") return "mask";
  return registry_name;
}

}  // namespace

class Executor::Impl {
 public:
  Impl(const Graph& graph, const TrainingProgram& program, const Bindings& bindings,
       Backend& backend, const ExecutorOptions& options)
      : g_(graph), p_(program), bindings_(bindings), backend_(backend), options_(options) {}

  ~Impl() {
    // Release every handle before the backend's allocators can check for leaks.
    forward_views_.clear();
    recomputed_views_.clear();
    buffers_.clear();
    constants_.clear();
    stolen_ = DeviceTensor();
  }

  Status Init() {
    k_ = options_.accumulation_steps > 0 ? options_.accumulation_steps : p_.accumulation_steps;
    if (k_ < 1) return MakeError("accumulation steps must be >= 1, got " + std::to_string(k_));
    options_.optimizer.kind = std::string(OptimizerKindName(p_.optimizer_kind));
    shapes_.resize(p_.buffers.size());
    for (const Buffer& b : p_.buffers) {
      auto shape = EvaluateShape(b.shape, bindings_);
      if (!shape.ok())
        return MakeError("shape of buffer '" + b.name + "': " + shape.error().message);
      shapes_[b.id.index()] = *shape;
      if (b.name == "loss_scale" && b.role == BufferRole::kScalar) loss_scale_buffer_ = b.id;
    }
    buffers_.resize(p_.buffers.size());
    value_shape_.assign(g_.num_values(), TensorShape());
    forward_buffer_.assign(g_.num_values(), BufferId());
    recomputed_buffer_.assign(g_.num_values(), BufferId());
    forward_step_.assign(g_.num_nodes(), -1);
    for (LogicalTime t = 0; t < static_cast<LogicalTime>(p_.steps.size()); ++t) {
      const Step& s = p_.step(t);
      if (!s.node.valid()) continue;
      const Node& node = g_.node(s.node);
      if (s.kind == StepKind::kForward) forward_step_[s.node.index()] = t;
      if (s.kind != StepKind::kForward && s.kind != StepKind::kRecompute) continue;
      auto& map = s.kind == StepKind::kForward ? forward_buffer_ : recomputed_buffer_;
      for (size_t j = 0; j < s.outputs.size() && j < node.outputs.size(); ++j)
        if (node.outputs[j].valid() && s.outputs[j].valid())
          map[node.outputs[j].index()] = s.outputs[j];
    }
    for (const Buffer& b : p_.buffers)
      if (b.role == BufferRole::kInput && b.value.valid())
        value_shape_[b.value.index()] = shapes_[b.id.index()];
    // The model output: the value whose gradient the loss backward writes (else what the loss
    // reads).
    for (LogicalTime t = p_.micro_batch.begin; t < p_.micro_batch.end; ++t) {
      const Step& s = p_.step(t);
      if (s.kind == StepKind::kLossBackward && !s.input_gradients.empty())
        model_output_ = p_.buffer(s.input_gradients[0].target).value;
    }
    if (!model_output_.valid() && p_.loss_step >= 0)
      model_output_ = p_.buffer(p_.step(p_.loss_step).inputs.at(0)).value;
    optimizer_steps_.assign(p_.parameters.size(), 0);
    if (p_.loss_scaling.mode == LossScalingMode::kDynamic) {
      LossScalerOptions scaler = options_.loss_scaler;
      scaler.init_scale =
          options_.initial_loss_scale.value_or(static_cast<float>(p_.loss_scaling.scale));
      scaler_.emplace(scaler);
    }
    return RunRange(p_.setup, -1, -1);
  }

  int64_t accumulation_steps() const { return k_; }

  Status RunMicroBatch(const MicroBatch& batch) {
    if (micro_batch_ == 0) {
      record_ = StepRecord();
      record_.loss_scale = CurrentScale();
      step_start_ = std::chrono::steady_clock::now();
    }
    if (micro_batch_ >= k_)
      return MakeError("an optimizer step has " + std::to_string(k_) +
                       " micro-batches; run the optimizer phase first");
    batch_ = &batch;
    ++micro_batch_counter_;
    MEMPLAN_RETURN_IF_ERROR(RunRange(p_.micro_batch, iteration_, micro_batch_));
    batch_ = nullptr;
    for (const Buffer& b : p_.buffers) {
      if (!b.persistent && buffers_[b.id.index()].defined())
        return MakeError("program leaks buffer '" + b.name + "' past the end of a micro-batch");
    }
    ++micro_batch_;
    return OkStatus();
  }

  Expected<StepRecord> RunOptimizerPhase() {
    if (micro_batch_ != k_)
      return MakeError("the optimizer phase needs " + std::to_string(k_) + " micro-batches, ran " +
                       std::to_string(micro_batch_));
    found_inf_ = false;
    MEMPLAN_RETURN_IF_ERROR(RunRange(p_.optimizer, iteration_, -1));
    double sum = 0.0;
    for (double l : record_.micro_batch_losses) sum += l;
    record_.loss = record_.micro_batch_losses.empty()
                       ? 0.0
                       : sum / static_cast<double>(record_.micro_batch_losses.size());
    record_.next_loss_scale = CurrentScale();
    record_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start_).count();
    micro_batch_ = 0;
    ++iteration_;
    const DeviceMemory m = backend_.Memory();
    memory_.allocator_peak_total = m.peak_total;
    memory_.allocator_category_peaks = m.peak;
    memory_.scratch_peak_bytes = m.scratch_peak_bytes;
    return record_;
  }

  Expected<StepRecord> RunOptimizerStep(const std::vector<MicroBatch>& batches) {
    if (static_cast<int64_t>(batches.size()) != k_)
      return MakeError("an optimizer step takes " + std::to_string(k_) + " micro-batches, got " +
                       std::to_string(batches.size()));
    for (const MicroBatch& b : batches) MEMPLAN_RETURN_IF_ERROR(RunMicroBatch(b));
    return RunOptimizerPhase();
  }

  Expected<std::vector<std::vector<float>>> Gradients() {
    std::vector<std::vector<float>> out(p_.parameters.size());
    for (size_t i = 0; i < p_.parameters.size(); ++i) {
      BufferId g = p_.parameters[i].gradient;
      if (!g.valid() || !Live(g)) continue;
      MEMPLAN_TRY(out[i], backend_.Download(buffers_[g.index()]));
    }
    return out;
  }

  Expected<std::vector<float>> ParameterValues(int index) {
    if (index < 0 || static_cast<size_t>(index) >= p_.parameters.size())
      return MakeError("no parameter " + std::to_string(index));
    return backend_.Download(buffers_[p_.parameters[static_cast<size_t>(index)].master.index()]);
  }

  Status SetParameterValues(int index, const std::vector<float>& values) {
    if (index < 0 || static_cast<size_t>(index) >= p_.parameters.size())
      return MakeError("no parameter " + std::to_string(index));
    const ParameterBuffers& pb = p_.parameters[static_cast<size_t>(index)];
    MEMPLAN_RETURN_IF_ERROR(backend_.Upload(buffers_[pb.master.index()], values));
    if (pb.working.valid())
      MEMPLAN_RETURN_IF_ERROR(
          backend_.Cast(buffers_[pb.master.index()], buffers_[pb.working.index()]));
    return OkStatus();
  }

  float CurrentScale() const {
    if (scaler_) return scaler_->scale();
    if (p_.loss_scaling.mode == LossScalingMode::kStatic)
      return options_.initial_loss_scale.value_or(static_cast<float>(p_.loss_scaling.scale));
    return 1.0f;
  }

  const MemoryMeasurement& memory() const { return memory_; }

 private:
  bool Live(BufferId b) const { return buffers_[b.index()].defined(); }
  const DeviceTensor& Buf(BufferId b) const { return buffers_[b.index()]; }

  // ---- the interpreter loop -------------------------------------------------------------------

  Status RunRange(StepRange range, int iteration, int64_t micro_batch) {
    for (LogicalTime t = range.begin; t < range.end; ++t) {
      const Step& step = p_.step(t);
      const std::string site =
          std::string(StepKindName(step.kind)) + (step.name.empty() ? "" : " " + step.name);
      backend_.EnterStep(StepSite{
          t, std::max<int64_t>(micro_batch, 0), site,
          step.node.valid() ? std::string_view(g_.node(step.node).name) : std::string_view()});
      for (const MemoryEvent& e : step.begin) MEMPLAN_RETURN_IF_ERROR(Apply(e, step, true));
      stolen_ = DeviceTensor();
      Record(step, ExecutionPoint{t, iteration, micro_batch});
      Status status = RunStep(step);
      if (!status.ok())
        return MakeError("step '" + StepToString(p_, t) + "': " + status.error().message);
      for (const MemoryEvent& e : step.end) MEMPLAN_RETURN_IF_ERROR(Apply(e, step, false));
    }
    return OkStatus();
  }

  Status Apply(const MemoryEvent& e, const Step& step, bool at_begin) {
    if (e.guard != Guard::kNone && (e.guard == Guard::kIfLive) != Live(e.guard_buffer))
      return OkStatus();
    const size_t b = e.buffer.index();
    const Buffer& buffer = p_.buffers[b];
    if (e.action == Action::kAlloc) {
      if (Live(e.buffer)) return Inconsistent("allocates live buffer", step, e.buffer);
      const int64_t bytes = NumElements(shapes_[b]) * ByteSize(buffer.dtype);
      // AccumulateGrad's steal: the contribution freed a moment ago becomes the gradient.
      if (stolen_.defined() && stolen_.dtype == buffer.dtype && stolen_.shape == shapes_[b]) {
        buffers_[b] = std::move(stolen_);
        stolen_ = DeviceTensor();
      } else {
        MEMPLAN_TRY(buffers_[b], backend_.Allocate(shapes_[b], buffer.dtype, buffer.category));
      }
      caching_.Allocate(static_cast<int64_t>(b), bytes);
      ++memory_.num_allocations;
    } else {
      if (!Live(e.buffer)) return Inconsistent("frees dead buffer", step, e.buffer);
      if (at_begin && step.kind == StepKind::kAccumulateGradient &&
          e.buffer == step.accumulate_part &&
          p_.buffer(step.accumulate_part).category ==
              p_.buffer(p_.parameters[static_cast<size_t>(step.parameter)].gradient).category) {
        stolen_ = std::move(buffers_[b]);
      }
      buffers_[b] = DeviceTensor();
      caching_.Free(static_cast<int64_t>(b));
      DropViewsOf(e.buffer);
    }
    return OkStatus();
  }

  void DropViewsOf(BufferId base) {
    for (auto* views : {&forward_views_, &recomputed_views_}) {
      for (auto it = views->begin(); it != views->end();)
        it = it->second.base == base ? views->erase(it) : std::next(it);
    }
  }

  Error Inconsistent(const char* what, const Step& step, BufferId buffer) const {
    return MakeError("inconsistent training program: step '" +
                     std::string(StepKindName(step.kind)) + " " + step.name + "' " + what + " '" +
                     p_.buffer(buffer).name + "'");
  }

  // The simulator's Record: the peak is taken after each Begin, a later step wins only when
  // strictly larger.
  void Record(const Step& step, const ExecutionPoint& at) {
    const DeviceMemory m = backend_.Memory();
    if (m.live_total > memory_.peak_bytes || memory_.peak_at.step < 0) {
      memory_.peak_bytes = m.live_total;
      memory_.peak_breakdown = m.live;
      memory_.peak_at = at;
      memory_.peak_step_name =
          std::string(StepKindName(step.kind)) + (step.name.empty() ? "" : " " + step.name);
    }
    memory_.caching_peak_allocated_bytes =
        std::max(memory_.caching_peak_allocated_bytes, caching_.allocated_bytes());
    memory_.caching_peak_reserved_bytes =
        std::max(memory_.caching_peak_reserved_bytes, caching_.reserved_bytes());
  }

  Status RunStep(const Step& step) {
    switch (step.kind) {
      case StepKind::kAllocateParameters:
        return InitParameters();
      case StepKind::kInitLossScaler:
        return WriteScale();
      case StepKind::kLoadMicroBatch:
        return LoadMicroBatch();
      case StepKind::kForward:
      case StepKind::kRecompute:
        return RunForward(step);
      case StepKind::kLoss:
        return RunLoss(step);
      case StepKind::kLossBackward:
        return RunLossBackward(step);
      case StepKind::kBackward:
        return RunBackward(step);
      case StepKind::kAccumulateGradient:
        return Accumulate(step);
      case StepKind::kUnscaleAndCheckOverflow:
        return Unscale(step);
      case StepKind::kClipGradients:
        return Clip(step);
      case StepKind::kOptimizerStep:
        return OptimizerStep();
      case StepKind::kZeroGradients:
        return ZeroGradients();
    }
    return OkStatus();
  }

  // ---- setup and data -------------------------------------------------------------------------

  Status InitParameters() {
    for (const ParameterBuffers& pb : p_.parameters) {
      const TensorShape& shape = shapes_[pb.master.index()];
      value_shape_[pb.value.index()] = shape;
      MEMPLAN_RETURN_IF_ERROR(backend_.Upload(
          Buf(pb.master), InitialParameterValues(g_.value(pb.value), shape, options_.seed)));
      if (pb.working.valid())
        MEMPLAN_RETURN_IF_ERROR(backend_.Cast(Buf(pb.master), Buf(pb.working)));
    }
    return OkStatus();
  }

  Status WriteScale() {
    if (loss_scale_buffer_.valid() && Live(loss_scale_buffer_))
      return backend_.Upload(Buf(loss_scale_buffer_), {CurrentScale()});
    return OkStatus();
  }

  Status LoadMicroBatch() {
    MEMPLAN_CHECK(batch_ != nullptr);
    const std::vector<BufferId> inputs = MicroBatchInputBuffers(p_);
    if (batch_->inputs.size() != inputs.size())
      return MakeError("the micro-batch has " + std::to_string(batch_->inputs.size()) +
                       " inputs, the program " + std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i)
      MEMPLAN_RETURN_IF_ERROR(backend_.Upload(Buf(inputs[i]), batch_->inputs[i]));
    if (p_.label_buffer.valid())
      MEMPLAN_RETURN_IF_ERROR(backend_.Upload(Buf(p_.label_buffer), batch_->label));
    return OkStatus();
  }

  // ---- constants ------------------------------------------------------------------------------

  Expected<DeviceTensor> ConstantTensor(ValueId u) {
    if (auto it = constants_.find(u.index()); it != constants_.end()) return it->second;
    const Value& v = g_.value(u);
    std::vector<float> values;
    std::optional<TensorShape> shape;
    if (v.shape.known) {
      auto s = EvaluateShape(v.shape, bindings_);
      if (s.ok()) shape = *s;
    }
    if (v.contents) {
      for (const Dim& d : *v.contents) {
        MEMPLAN_TRY(int64_t x, d.Evaluate(bindings_));
        values.push_back(static_cast<float>(x));
      }
    } else if (v.producer.valid() && g_.node(v.producer).op_type == "Constant") {
      MEMPLAN_RETURN_IF_ERROR(ConstantNodeValues(g_.node(v.producer), values, shape));
    } else if (v.producer.valid() && g_.node(v.producer).op_type == "ConstantOfShape") {
      const Node& node = g_.node(v.producer);
      MEMPLAN_TRY(DeviceTensor dims, ConstantTensor(node.inputs.at(0)));
      MEMPLAN_TRY(std::vector<float> d, backend_.Download(dims));
      TensorShape s(d.begin(), d.end());
      float fill = 0.0f;
      if (const TensorAttribute* t = node.attributes.GetTensor("value")) {
        if (!t->float_values.empty()) fill = static_cast<float>(t->float_values[0]);
        if (!t->int_values.empty()) fill = static_cast<float>(t->int_values[0]);
      }
      values.assign(static_cast<size_t>(NumElements(s)), fill);
      shape = s;
    } else if (v.producer.valid() && g_.node(v.producer).op_type == "Range") {
      // Range(start, limit, delta) over constant scalars: positions of a sequence.
      const Node& node = g_.node(v.producer);
      float args[3] = {0, 0, 1};
      for (size_t i = 0; i < 3 && i < node.inputs.size(); ++i) {
        MEMPLAN_TRY(DeviceTensor t, ConstantTensor(node.inputs[i]));
        MEMPLAN_TRY(std::vector<float> x, backend_.Download(t));
        if (x.size() != 1) return MakeError("Range '" + node.name + "' needs scalar inputs");
        args[i] = x[0];
      }
      if (args[2] == 0) return MakeError("Range '" + node.name + "' has delta 0");
      const auto n =
          static_cast<int64_t>(std::max(0.0, std::ceil((double(args[1]) - args[0]) / args[2])));
      for (int64_t i = 0; i < n; ++i) values.push_back(args[0] + static_cast<float>(i) * args[2]);
      shape = TensorShape{n};
    } else if (v.producer.valid()) {
      // Computed only from constants: fold it now with the op's kernel.
      const Node& node = g_.node(v.producer);
      ForwardCall call;
      call.op_type = node.op_type;
      call.domain = node.domain;
      call.attributes = &node.attributes;
      for (ValueId in : node.inputs) {
        if (!in.valid()) {
          call.inputs.emplace_back();
          continue;
        }
        MEMPLAN_TRY(DeviceTensor t, ConstantTensor(in));
        call.inputs.push_back(t);
      }
      call.num_outputs = static_cast<int>(node.outputs.size());
      call.outputs.assign(node.outputs.size(), DeviceTensor());
      MEMPLAN_TRY(std::vector<DeviceTensor> outs, backend_.Forward(call));
      for (size_t j = 0; j < node.outputs.size() && j < outs.size(); ++j)
        if (node.outputs[j].valid()) constants_[node.outputs[j].index()] = outs[j];
      if (auto it = constants_.find(u.index()); it != constants_.end()) return it->second;
      return MakeError("constant '" + v.name + "' was not produced by '" + node.name + "'");
    } else if (v.dtype == DType::kBool && shape) {
      // An initializer without data (the zoo keeps structure only): a causal mask by convention.
      MEMPLAN_TRY(values, SyntheticConstantValues(v, *shape));
    } else {
      return MakeError("constant '" + v.name + "' has no value the runtime can compute (an " +
                       "integer initializer too large for the importer to keep)");
    }
    if (!shape) shape = TensorShape{static_cast<int64_t>(values.size())};
    MEMPLAN_TRY(DeviceTensor t, backend_.Constant(*shape, v.dtype, values));
    constants_[u.index()] = t;
    return t;
  }

  static Status ConstantNodeValues(const Node& node, std::vector<float>& values,
                                   std::optional<TensorShape>& shape) {
    const Attributes& a = node.attributes;
    if (const TensorAttribute* t = a.GetTensor("value")) {
      shape = TensorShape(t->dims.begin(), t->dims.end());
      for (int64_t x : t->int_values) values.push_back(static_cast<float>(x));
      for (double x : t->float_values) values.push_back(static_cast<float>(x));
    } else if (a.Has("value_float")) {
      values = {static_cast<float>(a.GetFloat("value_float", 0))};
      shape = TensorShape{};
    } else if (a.Has("value_int")) {
      values = {static_cast<float>(a.GetInt("value_int", 0))};
      shape = TensorShape{};
    } else if (a.Has("value_floats")) {
      for (double x : a.GetFloats("value_floats")) values.push_back(static_cast<float>(x));
      shape = TensorShape{static_cast<int64_t>(values.size())};
    } else if (a.Has("value_ints")) {
      for (int64_t x : a.GetInts("value_ints")) values.push_back(static_cast<float>(x));
      shape = TensorShape{static_cast<int64_t>(values.size())};
    }
    if (static_cast<int64_t>(values.size()) != NumElements(*shape))
      return MakeError("Constant '" + node.name + "' is too large for the importer to keep");
    return OkStatus();
  }

  // ---- forward --------------------------------------------------------------------------------

  uint64_t NodeSeed(NodeId n) const {
    return Mix(Mix(options_.seed, n.value + 1), micro_batch_counter_);
  }
  bool Training(const Node& node) const {
    return !(options_.disable_dropout && node.op_type == "Dropout");
  }

  // Activation / parameter `u` read through buffer `b`, seen with u's shape.
  Expected<DeviceTensor> ValueThrough(ValueId u, BufferId b) const {
    if (!Live(b)) return MakeError("reads '" + p_.buffer(b).name + "', which is not live");
    for (const auto* views : {&recomputed_views_, &forward_views_}) {
      auto it = views->find(u.index());
      if (it != views->end() && it->second.base == b) return it->second.tensor;
    }
    const TensorShape& shape = value_shape_[u.index()];
    if (NumElements(shape) != Buf(b).numel())
      return MakeError("value '" + g_.value(u).name + "' " + ShapeToString(shape) +
                       " does not fit buffer '" + p_.buffer(b).name + "' " +
                       ShapeToString(Buf(b).shape));
    return Buf(b).View(shape);
  }

  Expected<DeviceTensor> InputTensor(const Node& node, size_t i,
                                     const std::vector<BufferId>& read) {
    ValueId u = node.inputs[i];
    if (!u.valid()) return DeviceTensor();
    if (i < read.size() && read[i].valid()) return ValueThrough(u, read[i]);
    if (g_.value(u).kind == ValueKind::kConstant) return ConstantTensor(u);
    return MakeError("input '" + g_.value(u).name + "' has no buffer");
  }

  std::map<std::string, DeviceTensor> ExtrasOf(const std::vector<BufferId>& extras,
                                               const std::string& owner) const {
    std::map<std::string, DeviceTensor> out;
    for (BufferId b : extras) {
      std::string name = p_.buffer(b).name;
      if (name.rfind(owner + ".", 0) == 0) name = name.substr(owner.size() + 1);
      out[KernelExtraName(name)] = Buf(b);
    }
    return out;
  }

  // target = cast(value): the source is read as the value it holds (a view's own data, not its
  // base's), the target is laid out like the value.
  Status RunCasts(const Step& step) {
    for (const CastOp& c : step.casts) {
      const ValueId u = p_.buffer(c.target).value;
      DeviceTensor source = Buf(c.source);
      if (u.valid()) {
        MEMPLAN_TRY(source, ValueThrough(u, c.source));
      }
      MEMPLAN_RETURN_IF_ERROR(backend_.Cast(source, Buf(c.target).View(source.shape)));
    }
    return OkStatus();
  }

  Status RunForward(const Step& step) {
    const Node& node = g_.node(step.node);
    MEMPLAN_RETURN_IF_ERROR(RunCasts(step));
    // An output that names an input's buffer is a view: the program allocates nothing for it.
    auto is_view_output = [&](size_t j) {
      return std::find(step.inputs.begin(), step.inputs.end(), step.outputs[j]) !=
             step.inputs.end();
    };

    ForwardCall call;
    call.op_type = step.op_type;
    call.domain = step.domain;
    call.attributes = &node.attributes;
    call.training = Training(node);
    call.seed = NodeSeed(step.node);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      MEMPLAN_TRY(DeviceTensor t, InputTensor(node, i, step.inputs));
      call.inputs.push_back(t);
    }
    call.num_outputs = static_cast<int>(node.outputs.size());
    call.outputs.assign(node.outputs.size(), DeviceTensor());
    for (size_t j = 0; j < step.outputs.size() && j < node.outputs.size(); ++j)
      if (step.outputs[j].valid() && !is_view_output(j)) call.outputs[j] = Buf(step.outputs[j]);
    call.extras = ExtrasOf(step.extras, node.name);
    MEMPLAN_TRY(std::vector<DeviceTensor> outs, backend_.Forward(call));
    for (size_t j = 0; j < node.outputs.size() && j < outs.size(); ++j) {
      ValueId o = node.outputs[j];
      if (!o.valid() || j >= step.outputs.size() || !step.outputs[j].valid()) continue;
      if (outs[j].numel() != Buf(step.outputs[j]).numel())
        return MakeError("output '" + g_.value(o).name + "' " + ShapeToString(outs[j].shape) +
                         " does not fit its buffer " + ShapeToString(Buf(step.outputs[j]).shape));
      value_shape_[o.index()] = outs[j].shape;
      // A view's value is what its kernel returned (a Transpose is not its base reinterpreted):
      // storage shared with the base, or backend scratch where the backend cannot express the
      // view. Kept while the base buffer lives.
      if (is_view_output(j)) {
        auto& views = step.kind == StepKind::kForward ? forward_views_ : recomputed_views_;
        views[o.index()] = ViewValue{outs[j], step.outputs[j]};
      }
    }
    return OkStatus();
  }

  // ---- loss -----------------------------------------------------------------------------------

  Expected<DeviceTensor> Prediction(BufferId b) const {
    if (model_output_.valid() && !value_shape_[model_output_.index()].empty())
      return ValueThrough(model_output_, b);
    return Buf(b);
  }

  Status RunLoss(const Step& step) {
    MEMPLAN_RETURN_IF_ERROR(RunCasts(step));
    LossCall call;
    call.loss = LossKindName(p_.loss);
    MEMPLAN_TRY(call.prediction, Prediction(step.inputs.at(0)));
    if (step.inputs.size() > 1) call.label = Buf(step.inputs[1]);
    call.loss_value = Buf(step.outputs.at(0));
    for (BufferId b : step.extras) call.log_prob = Buf(b).View(call.prediction.shape);
    MEMPLAN_RETURN_IF_ERROR(backend_.LossForward(call));
    MEMPLAN_TRY(std::vector<float> loss, backend_.Download(call.loss_value));
    record_.micro_batch_losses.push_back(loss.at(0));
    return OkStatus();
  }

  Status RunLossBackward(const Step& step) {
    LossBackwardCall call;
    call.loss = LossKindName(p_.loss);
    for (BufferId b : step.saved) {
      const Buffer& buffer = p_.buffer(b);
      if (b == p_.label_buffer) {
        call.label = Buf(b);
      } else if (b == p_.loss_buffer) {
        continue;
      } else if (buffer.role == BufferRole::kSavedExtra) {
        call.log_prob = Buf(b);
      } else {
        MEMPLAN_TRY(call.prediction, Prediction(b));
      }
    }
    if (call.log_prob.defined() && model_output_.valid())
      call.log_prob = call.log_prob.View(value_shape_[model_output_.index()]);
    call.grad_scale = CurrentScale() / static_cast<float>(k_);
    const GradientWrite& w = step.input_gradients.at(0);
    const BufferId dest = w.part.valid() ? w.part : w.target;
    MEMPLAN_TRY(call.grad, ValueThrough(model_output_, dest));
    MEMPLAN_RETURN_IF_ERROR(backend_.LossBackward(call));
    if (w.part.valid()) MEMPLAN_RETURN_IF_ERROR(backend_.Add(Buf(w.part), Buf(w.target)));
    return OkStatus();
  }

  // ---- backward -------------------------------------------------------------------------------

  // Does buffer b hold value u (its storage, a cast of it, its recomputed copy, a view's base)?
  bool Holds(BufferId b, ValueId u) const {
    return u.valid() && (p_.buffer(b).value == u || forward_buffer_[u.index()] == b ||
                         recomputed_buffer_[u.index()] == b);
  }

  Status RunBackward(const Step& step) {
    const Node& node = g_.node(step.node);
    const LogicalTime fwd = forward_step_[step.node.index()];
    MEMPLAN_CHECK(fwd >= 0);
    const Step& forward = p_.step(fwd);
    BackwardCall call;
    call.op_type = step.op_type;
    call.domain = step.domain;
    call.attributes = &node.attributes;
    call.training = Training(node);
    call.seed = NodeSeed(step.node);
    const size_t n_in = node.inputs.size();
    call.inputs.assign(n_in, DeviceTensor());
    call.outputs.assign(node.outputs.size(), DeviceTensor());
    call.input_shapes.assign(n_in, TensorShape());
    call.input_dtypes.assign(n_in, DType::kUndefined);
    for (size_t i = 0; i < n_in; ++i) {
      ValueId u = node.inputs[i];
      if (!u.valid()) continue;
      if (g_.value(u).kind == ValueKind::kConstant) {
        MEMPLAN_TRY(call.inputs[i], ConstantTensor(u));
        call.input_shapes[i] = call.inputs[i].shape;
        call.input_dtypes[i] = call.inputs[i].dtype;
        continue;
      }
      call.input_shapes[i] = value_shape_[u.index()];
      call.input_dtypes[i] = i < forward.inputs.size() && forward.inputs[i].valid()
                                 ? p_.buffer(forward.inputs[i]).dtype
                                 : g_.value(u).dtype;
    }
    std::vector<BufferId> extras;
    for (BufferId b : step.saved) {
      if (p_.buffer(b).role == BufferRole::kSavedExtra) {
        extras.push_back(b);
        continue;
      }
      bool matched = false;
      for (size_t i = 0; i < n_in; ++i) {
        if (!Holds(b, node.inputs[i])) continue;
        MEMPLAN_TRY(call.inputs[i], ValueThrough(node.inputs[i], b));
        call.input_dtypes[i] = p_.buffer(b).dtype;
        matched = true;
      }
      for (size_t j = 0; j < node.outputs.size(); ++j) {
        if (!Holds(b, node.outputs[j])) continue;
        MEMPLAN_TRY(call.outputs[j], ValueThrough(node.outputs[j], b));
        matched = true;
      }
      if (!matched)
        return MakeError("saved buffer '" + p_.buffer(b).name + "' is no input or output of '" +
                         node.name + "'");
    }
    // Parameters are persistent: a kernel may read one it did not save (MatMul's backward wants
    // both operands even when only the weight's gradient is needed), at no memory cost.
    for (size_t i = 0; i < n_in; ++i) {
      ValueId u = node.inputs[i];
      if (call.inputs[i].defined() || !u.valid() || g_.value(u).kind != ValueKind::kParameter ||
          i >= forward.inputs.size() || !forward.inputs[i].valid() || !Live(forward.inputs[i]))
        continue;
      MEMPLAN_TRY(call.inputs[i], ValueThrough(u, forward.inputs[i]));
    }
    call.extras = ExtrasOf(extras, node.name);
    call.grad_outputs.assign(node.outputs.size(), DeviceTensor());
    for (size_t j = 0; j < step.output_gradients.size() && j < node.outputs.size(); ++j) {
      if (!step.output_gradients[j].valid()) continue;
      MEMPLAN_TRY(call.grad_outputs[j], ValueThrough(node.outputs[j], step.output_gradients[j]));
    }
    call.grad_inputs.assign(n_in, DeviceTensor());
    call.accumulate.assign(n_in, false);
    for (const GradientWrite& w : step.input_gradients) {
      const auto slot = static_cast<size_t>(w.slot);
      MEMPLAN_TRY(call.grad_inputs[slot],
                  ValueThrough(node.inputs[slot], w.part.valid() ? w.part : w.target));
    }
    MEMPLAN_RETURN_IF_ERROR(backend_.Backward(call));
    // Autograd's InputBuffer: a later contribution to a value's gradient is added.
    for (const GradientWrite& w : step.input_gradients)
      if (w.part.valid()) MEMPLAN_RETURN_IF_ERROR(backend_.Add(Buf(w.part), Buf(w.target)));
    return OkStatus();
  }

  Status Accumulate(const Step& step) {
    const BufferId grad = step.outputs.at(0);
    // Stolen: the contribution already is the gradient. Otherwise add it in.
    if (Live(step.accumulate_part)) return backend_.Add(Buf(step.accumulate_part), Buf(grad));
    return OkStatus();
  }

  // ---- optimizer phase ------------------------------------------------------------------------

  std::vector<DeviceTensor> LiveGradients() const {
    std::vector<DeviceTensor> grads;
    for (const ParameterBuffers& pb : p_.parameters)
      if (pb.gradient.valid() && Live(pb.gradient)) grads.push_back(Buf(pb.gradient));
    return grads;
  }

  Status Unscale(const Step& step) {
    const float scale = CurrentScale();
    MEMPLAN_TRY(found_inf_, backend_.UnscaleAndCheckOverflow(LiveGradients(), 1.0f / scale));
    if (!step.outputs.empty())
      MEMPLAN_RETURN_IF_ERROR(backend_.Upload(Buf(step.outputs[0]), {found_inf_ ? 1.0f : 0.0f}));
    if (step.outputs.size() > 1)
      MEMPLAN_RETURN_IF_ERROR(backend_.Upload(Buf(step.outputs[1]), {1.0f / scale}));
    return OkStatus();
  }

  Status Clip(const Step& step) {
    const std::vector<DeviceTensor> grads = LiveGradients();
    MEMPLAN_TRY(double norm, backend_.GlobalNorm(grads));
    record_.gradient_norm = norm;
    if (!step.outputs.empty())
      MEMPLAN_RETURN_IF_ERROR(backend_.Upload(Buf(step.outputs[0]), {static_cast<float>(norm)}));
    // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is < 1.
    const double factor = options_.clip_max_norm / (norm + 1e-6);
    if (!found_inf_ && factor < 1.0)
      MEMPLAN_RETURN_IF_ERROR(backend_.Scale(grads, static_cast<float>(factor)));
    return OkStatus();
  }

  Status OptimizerStep() {
    if (!found_inf_) {
      for (size_t i = 0; i < p_.parameters.size(); ++i) {
        const ParameterBuffers& pb = p_.parameters[i];
        if (!pb.gradient.valid() || !Live(pb.gradient)) continue;
        OptimizerCall call;
        call.hyper = &options_.optimizer;
        call.master = Buf(pb.master);
        if (pb.working.valid()) call.working = Buf(pb.working);
        call.gradient = Buf(pb.gradient);
        for (BufferId s : pb.optimizer_states) call.states.push_back(Buf(s));
        call.step = ++optimizer_steps_[i];
        MEMPLAN_RETURN_IF_ERROR(backend_.OptimizerStep(call));
      }
    }
    record_.skipped = found_inf_;
    if (scaler_) {
      scaler_->Update(found_inf_);
      MEMPLAN_RETURN_IF_ERROR(WriteScale());
    }
    return OkStatus();
  }

  Status ZeroGradients() {
    if (p_.zero_grad != ZeroGradMode::kZero) return OkStatus();  // set_to_none: End frees them
    for (const DeviceTensor& g : LiveGradients()) MEMPLAN_RETURN_IF_ERROR(backend_.Fill(g, 0.0f));
    return OkStatus();
  }

  const Graph& g_;
  const TrainingProgram& p_;
  Bindings bindings_;
  Backend& backend_;
  ExecutorOptions options_;
  int64_t k_ = 1;

  std::vector<TensorShape> shapes_;    // evaluated shape of every buffer
  std::vector<DeviceTensor> buffers_;  // defined = live
  std::vector<TensorShape> value_shape_;
  std::vector<BufferId> forward_buffer_;     // per value: the buffer its forward step wrote
  std::vector<BufferId> recomputed_buffer_;  // per value: the buffer its recompute wrote
  std::vector<LogicalTime> forward_step_;    // per node
  std::map<size_t, DeviceTensor> constants_;
  struct ViewValue {
    DeviceTensor tensor;
    BufferId base;  // the buffer the view aliases; the view is dropped when it is freed
  };
  std::map<size_t, ViewValue> forward_views_;     // per view value: its forward kernel's result
  std::map<size_t, ViewValue> recomputed_views_;  // per view value: its recompute's result
  ValueId model_output_;
  BufferId loss_scale_buffer_;
  DeviceTensor stolen_;

  std::vector<int64_t> optimizer_steps_;  // per parameter
  std::optional<DynamicLossScaler> scaler_;
  bool found_inf_ = false;

  CachingAllocator caching_;
  MemoryMeasurement memory_;
  int iteration_ = 0;
  int64_t micro_batch_ = 0;
  uint64_t micro_batch_counter_ = 0;
  const MicroBatch* batch_ = nullptr;
  StepRecord record_;
  std::chrono::steady_clock::time_point step_start_;
};

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::~Executor() = default;

Expected<std::unique_ptr<Executor>> Executor::Create(const Graph& graph,
                                                     const TrainingProgram& program,
                                                     const Bindings& bindings, Backend& backend,
                                                     const ExecutorOptions& options) {
  auto impl = std::make_unique<Impl>(graph, program, bindings, backend, options);
  MEMPLAN_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

int64_t Executor::accumulation_steps() const { return impl_->accumulation_steps(); }
Expected<StepRecord> Executor::RunOptimizerStep(const std::vector<MicroBatch>& batches) {
  return impl_->RunOptimizerStep(batches);
}
Status Executor::RunMicroBatch(const MicroBatch& batch) { return impl_->RunMicroBatch(batch); }
Expected<StepRecord> Executor::RunOptimizerPhase() { return impl_->RunOptimizerPhase(); }
Expected<std::vector<std::vector<float>>> Executor::Gradients() { return impl_->Gradients(); }
Expected<std::vector<float>> Executor::ParameterValues(int index) {
  return impl_->ParameterValues(index);
}
Status Executor::SetParameterValues(int index, const std::vector<float>& values) {
  return impl_->SetParameterValues(index, values);
}
float Executor::loss_scale() const { return impl_->CurrentScale(); }
const MemoryMeasurement& Executor::memory() const { return impl_->memory(); }

}  // namespace memplan
