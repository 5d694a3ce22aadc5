#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "analyzer/program/program_walker.h"
#include "analyzer/simulation/caching_allocator.h"
#include "runtime/collective_steps.h"
#include "runtime/compute_steps.h"
#include "runtime/constant_values.h"
#include "runtime/optimizer_phase.h"
#include "runtime/program_buffers.h"
#include "runtime/program_shapes.h"
#include "runtime/weight_init.h"

namespace memplan {

// The executor's half of the walk (analyzer/program/program_walker.h owns the loop, the checks and
// the peak): device storage at Alloc/Free, a backend call per step, and the per-optimizer-step
// record.
class Executor::Impl final : public WalkListener {
 public:
  Impl(const Graph& graph, const TrainingProgram& program, const Bindings& bindings,
       Backend& backend, const ExecutorOptions& options)
      : g_(graph),
        p_(program),
        backend_(backend),
        options_(options),
        buffers_(graph, program, backend),
        constants_(graph, bindings, backend),
        compute_(graph, program, backend, buffers_, constants_, options.seed,
                 options.disable_dropout),
        collectives_(options.rank_group == nullptr
                         ? nullptr
                         : std::make_unique<CollectiveSteps>(program, backend, buffers_,
                                                             *options.rank_group, options.rank)),
        optimizer_(program, backend, buffers_,
                   OptimizerPhaseOptions{options.optimizer, options.clip_max_norm,
                                         options.loss_scaler, options.initial_loss_scale},
                   collectives_.get()),
        bindings_(bindings) {}

  ~Impl() override {
    // Release every handle before the backend's allocators can check for leaks.
    walker_.reset();
    constants_.Clear();
  }

  Status Init() {
    k_ = options_.accumulation_steps > 0 ? options_.accumulation_steps : p_.accumulation_steps;
    if (k_ < 1) return MakeError("accumulation steps must be >= 1, got " + std::to_string(k_));
    if (!collectives_ && !p_.data_parallel_strategy.empty())
      return MakeError("a per-rank " + p_.data_parallel_strategy +
                       " program runs only as a rank of a group (verify --gpus)");
    if (collectives_ && (options_.rank < 0 || options_.rank >= options_.rank_group->ranks() ||
                         options_.rank_group->ranks() != p_.data_parallel_ranks))
      return MakeError("rank " + std::to_string(options_.rank) + " of a group of " +
                       std::to_string(options_.rank_group->ranks()) + " cannot run a program of " +
                       std::to_string(p_.data_parallel_ranks) + " ranks");
    MEMPLAN_RETURN_IF_ERROR(buffers_.Init(bindings_));
    walker_.emplace(p_, buffers_.AccountedBytes(), &caching_, this,
                    WalkOptions{/*record_trace=*/options_.record_trace, /*check_operands=*/true});
    MEMPLAN_RETURN_IF_ERROR(walker_->RunSetup());
    SyncMemory();
    return OkStatus();
  }

  int64_t accumulation_steps() const { return k_; }

  Status RunMicroBatch(const MicroBatch& batch) {
    if (micro_batch_ == 0) {
      record_ = StepRecord();
      record_.loss_scale = optimizer_.CurrentScale();
      step_start_ = std::chrono::steady_clock::now();
    }
    if (micro_batch_ >= k_)
      return MakeError("an optimizer step has " + std::to_string(k_) +
                       " micro-batches; run the optimizer phase first");
    batch_ = &batch;
    compute_.set_micro_batch_counter(++micro_batch_counter_);
    Status status = walker_->RunMicroBatch(iteration_, micro_batch_);
    batch_ = nullptr;
    SyncMemory();
    MEMPLAN_RETURN_IF_ERROR(status);
    ++micro_batch_;
    return OkStatus();
  }

  Expected<StepRecord> RunOptimizerPhase() {
    if (micro_batch_ != k_)
      return MakeError("the optimizer phase needs " + std::to_string(k_) + " micro-batches, ran " +
                       std::to_string(micro_batch_));
    optimizer_.Begin();
    Status status = walker_->RunOptimizerPhase(iteration_);
    SyncMemory();
    MEMPLAN_RETURN_IF_ERROR(status);
    record_.skipped = optimizer_.skipped();
    record_.gradient_norm = optimizer_.gradient_norm();
    double sum = 0.0;
    for (double l : record_.micro_batch_losses) sum += l;
    record_.loss = record_.micro_batch_losses.empty()
                       ? 0.0
                       : sum / static_cast<double>(record_.micro_batch_losses.size());
    record_.next_loss_scale = optimizer_.CurrentScale();
    record_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start_).count();
    micro_batch_ = 0;
    ++iteration_;
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
      if (!g.valid() || !buffers_.Live(g)) continue;
      MEMPLAN_TRY(out[i], backend_.Download(buffers_.Get(g)));
    }
    return out;
  }

  Expected<std::vector<float>> ParameterValues(int index) {
    if (index < 0 || static_cast<size_t>(index) >= p_.parameters.size())
      return MakeError("no parameter " + std::to_string(index));
    return backend_.Download(buffers_.Get(p_.parameters[static_cast<size_t>(index)].master));
  }

  Status SetParameterValues(int index, const std::vector<float>& values) {
    if (index < 0 || static_cast<size_t>(index) >= p_.parameters.size())
      return MakeError("no parameter " + std::to_string(index));
    const ParameterBuffers& pb = p_.parameters[static_cast<size_t>(index)];
    MEMPLAN_RETURN_IF_ERROR(backend_.Upload(buffers_.Get(pb.master), values));
    if (pb.working.valid())
      MEMPLAN_RETURN_IF_ERROR(backend_.Cast(buffers_.Get(pb.master), buffers_.Get(pb.working)));
    return OkStatus();
  }

  float CurrentScale() const { return optimizer_.CurrentScale(); }
  const MemoryMeasurement& memory() const { return memory_; }
  const WalkTrace& trace() const { return walker_->trace(); }

  // ---- the walk's hooks -------------------------------------------------------------------------

  void OnStepEnter(const Step& step, const ExecutionPoint& at) override {
    site_name_ = std::string(StepKindName(step.kind)) + (step.name.empty() ? "" : " " + step.name);
    fresh_.clear();
    backend_.EnterStep(StepSite{
        at.step, std::max<int64_t>(at.micro_batch, 0), site_name_,
        step.node.valid() ? std::string_view(g_.node(step.node).name) : std::string_view()});
  }

  Status OnAlloc(BufferId buffer, BufferId storage_of) override {
    fresh_.push_back(buffer);
    return buffers_.Allocate(buffer, storage_of);
  }

  void OnFree(BufferId buffer, bool handed_over) override { buffers_.Release(buffer, handed_over); }

  void OnStepBegun(const Step& step, const ExecutionPoint& at) override {
    (void)step;
    (void)at;
    buffers_.DropHandedOver();
  }

  // The backend's counting allocator: the measured peak follows the walker's peak rule.
  std::optional<LiveSample> MeasureLive() override {
    const DeviceMemory m = backend_.Memory();
    return LiveSample{m.live_total, m.live};
  }

  Status RunStep(const Step& step, const ExecutionPoint& at) override {
    (void)at;
    switch (step.kind) {
      case StepKind::kAllocateParameters:
        return InitParameters();
      case StepKind::kInitLossScaler:
        return optimizer_.WriteScale();
      case StepKind::kLoadMicroBatch:
        return LoadMicroBatch();
      case StepKind::kForward:
      case StepKind::kRecompute:
        return compute_.Forward(step);
      case StepKind::kLoss: {
        MEMPLAN_TRY(double loss, compute_.Loss(step));
        // The micro-batch's loss is the sum of its terms: the first term starts it.
        if (p_.loss_terms.empty() || &p_.step(p_.loss_terms.front().step) == &step)
          record_.micro_batch_losses.push_back(loss);
        else if (!record_.micro_batch_losses.empty())
          record_.micro_batch_losses.back() += loss;
        return OkStatus();
      }
      case StepKind::kLossBackward:
        return compute_.LossBackward(step, optimizer_.CurrentScale() / static_cast<float>(k_));
      case StepKind::kBackward:
        return compute_.Backward(step);
      case StepKind::kAccumulateGradient:
        return compute_.Accumulate(step);
      case StepKind::kCastGradient:
        return compute_.CastGradient(step);
      case StepKind::kUnscaleAndCheckOverflow:
        return optimizer_.Unscale(step);
      case StepKind::kClipGradients:
        return optimizer_.Clip(step);
      case StepKind::kOptimizerStep:
        if (step.parameter >= 0)
          return optimizer_.UpdateInBackward(static_cast<size_t>(step.parameter));
        if (options_.observe_update_gradients) {
          MEMPLAN_TRY(std::vector<std::vector<float>> gradients, Gradients());
          options_.observe_update_gradients(std::move(gradients));
        }
        return optimizer_.Update();
      case StepKind::kZeroGradients:
        return optimizer_.ZeroGradients(step);
      case StepKind::kCollective:
        if (!collectives_)
          return MakeError("a per-rank data-parallel program (collective '" + step.name +
                           "') runs only as a rank of a group (verify --gpus)");
        return collectives_->Run(step, fresh_);
      case StepKind::kBucketCopy:
        if (!collectives_)
          return MakeError("a per-rank data-parallel program (bucket copy '" + step.name +
                           "') runs only as a rank of a group (verify --gpus)");
        return collectives_->CopyIntoBucket(step);
      case StepKind::kTransfer:
        // --offload programs are simulated; this executor keeps every buffer in one memory.
        return MakeError("an --offload program (host transfer '" + step.name +
                         "') is simulated only; the executor runs programs that keep everything "
                         "on the device");
    }
    return OkStatus();
  }

 private:
  // Every parameter from the same whole initial values; a rank stores its part where the master
  // (and working copy) is a shard.
  Status InitParameters() {
    for (const ParameterBuffers& pb : p_.parameters) {
      const Value& value = g_.value(pb.value);
      const bool sharded = p_.buffer(pb.master).shard_of_elements != 0;
      TensorShape shape = buffers_.shape(pb.master);
      if (sharded) {
        MEMPLAN_TRY(shape, EvaluateShape(value.shape, bindings_));
      }
      buffers_.set_value_shape(pb.value, shape);
      std::vector<float> values = InitialParameterValues(value, shape, options_.seed);
      if (sharded) {
        const ShardSlice slice = SliceOfShard(static_cast<int64_t>(values.size()), p_.shard_ranks,
                                              collectives_->shard_position());
        std::vector<float> part(static_cast<size_t>(buffers_.Get(pb.master).numel()), 0.0f);
        std::copy_n(values.begin() + slice.begin, slice.size, part.begin());
        values = std::move(part);
      }
      MEMPLAN_RETURN_IF_ERROR(backend_.Upload(buffers_.Get(pb.master), values));
      if (pb.working.valid()) {
        // A whole working copy beside a sharded master (ZeRO-1/2 in mixed precision) starts
        // from the whole values, as every rank's model does.
        const DeviceTensor& working = buffers_.Get(pb.working);
        if (working.numel() == buffers_.Get(pb.master).numel()) {
          MEMPLAN_RETURN_IF_ERROR(backend_.Cast(buffers_.Get(pb.master), working));
        } else {
          MEMPLAN_RETURN_IF_ERROR(
              backend_.Upload(working, InitialParameterValues(value, shape, options_.seed)));
        }
      }
    }
    return OkStatus();
  }

  Status LoadMicroBatch() {
    MEMPLAN_CHECK(batch_ != nullptr);
    const std::vector<BufferId> inputs = MicroBatchInputBuffers(p_);
    if (batch_->inputs.size() != inputs.size())
      return MakeError("the micro-batch has " + std::to_string(batch_->inputs.size()) +
                       " inputs, the program " + std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i)
      MEMPLAN_RETURN_IF_ERROR(backend_.Upload(buffers_.Get(inputs[i]), batch_->inputs[i]));
    for (size_t i = 0; i < p_.loss_terms.size(); ++i) {
      const BufferId label = p_.loss_terms[i].label;
      if (!label.valid()) continue;
      if (i >= batch_->labels.size())
        return MakeError("the micro-batch has no label for loss term " + std::to_string(i));
      MEMPLAN_RETURN_IF_ERROR(backend_.Upload(buffers_.Get(label), batch_->labels[i]));
    }
    return OkStatus();
  }

  // The walker's peaks and the backend allocator's counters into the measurement.
  void SyncMemory() {
    const WalkPeak& peak = walker_->measured_peak();
    memory_.peak_bytes = peak.bytes;
    memory_.peak_breakdown = peak.breakdown;
    memory_.peak_at = peak.at;
    memory_.peak_step_name = peak.step_name;
    memory_.caching_peak_allocated_bytes = walker_->model_peak_allocated_bytes();
    memory_.caching_peak_reserved_bytes = walker_->model_peak_reserved_bytes();
    memory_.num_allocations = walker_->num_allocations();
    const DeviceMemory m = backend_.Memory();
    memory_.allocator_peak_total = m.peak_total;
    memory_.allocator_category_peaks = m.peak;
    memory_.scratch_peak_bytes = m.scratch_peak_bytes;
  }

  const Graph& g_;
  const TrainingProgram& p_;
  Backend& backend_;
  ExecutorOptions options_;
  ProgramBuffers buffers_;
  ConstantValues constants_;
  ComputeSteps compute_;
  std::unique_ptr<CollectiveSteps> collectives_;  // on a rank of a group only
  OptimizerPhase optimizer_;
  Bindings bindings_;
  CachingAllocator caching_;
  std::optional<ProgramWalker> walker_;
  std::vector<BufferId> fresh_;  // allocated by the current step's Begin
  int64_t k_ = 1;

  MemoryMeasurement memory_;
  int iteration_ = 0;
  int64_t micro_batch_ = 0;
  uint64_t micro_batch_counter_ = 0;
  const MicroBatch* batch_ = nullptr;
  std::string site_name_;  // the current StepSite's name (the backend may keep the view)
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
const WalkTrace& Executor::trace() const { return impl_->trace(); }

}  // namespace memplan
