#include "analyzer/program/program_walker.h"

#include <algorithm>
#include <sstream>

namespace memplan {

bool operator==(const WalkEvent& a, const WalkEvent& b) {
  return a.at.step == b.at.step && a.at.iteration == b.at.iteration &&
         a.at.micro_batch == b.at.micro_batch && a.kind == b.kind && a.buffer == b.buffer &&
         a.bytes == b.bytes && a.live_bytes == b.live_bytes;
}

std::string ToString(const TrainingProgram& program, const WalkTrace& trace) {
  std::ostringstream out;
  for (const WalkEvent& e : trace.events) {
    out << "t" << e.at.step << " it" << e.at.iteration << " mb" << e.at.micro_batch << " "
        << (e.kind == WalkEvent::Kind::kAlloc ? "+" : "-") << program.buffer(e.buffer).name << " "
        << e.bytes << " live=" << e.live_bytes << "\n";
  }
  return out.str();
}

ProgramTape ProgramTape::Of(const TrainingProgram& program) {
  ProgramTape tape;
  size_t total = 0;
  for (const Step& step : program.steps) total += step.begin.size() + step.end.size();
  MEMPLAN_CHECK(total <= UINT32_MAX);
  tape.events.reserve(total);
  tape.steps.reserve(program.steps.size());
  for (const Step& step : program.steps) {
    StepEvents s;
    s.begin = static_cast<uint32_t>(tape.events.size());
    tape.events.insert(tape.events.end(), step.begin.begin(), step.begin.end());
    s.end_first = static_cast<uint32_t>(tape.events.size());
    tape.events.insert(tape.events.end(), step.end.begin(), step.end.end());
    s.end_last = static_cast<uint32_t>(tape.events.size());
    s.hands_over = std::any_of(step.begin.begin(), step.begin.end(),
                               [](const MemoryEvent& e) { return e.storage_of.valid(); });
    tape.steps.push_back(s);
  }
  tape.category.reserve(program.buffers.size());
  tape.host.reserve(program.buffers.size());
  for (const Buffer& b : program.buffers) {
    tape.category.push_back(static_cast<uint8_t>(b.category));
    tape.host.push_back(b.on_host() ? 1 : 0);
  }
  return tape;
}

ProgramWalker::ProgramWalker(const TrainingProgram& program, std::vector<int64_t> buffer_bytes,
                             AllocatorModel* model, WalkListener* listener, WalkOptions options)
    : program_(program),
      bytes_(std::move(buffer_bytes)),
      model_(model),
      listener_(listener),
      options_(options) {
  MEMPLAN_CHECK(bytes_.size() == program.buffers.size());
  live_.assign(program.buffers.size(), 0);
  for (int64_t bytes : bytes_) MEMPLAN_CHECK(bytes >= 0);
  tape_ = options.tape;
  if (tape_ == nullptr) tape_ = &own_tape_.emplace(ProgramTape::Of(program));
  MEMPLAN_CHECK(tape_->steps.size() == program.steps.size() &&
                tape_->category.size() == program.buffers.size() &&
                tape_->host.size() == program.buffers.size());
  if (model_ != nullptr) model_->Reset();
}

Status ProgramWalker::RunSetup() { return RunRange(program_.setup, -1, -1); }

Status ProgramWalker::RunMicroBatch(int iteration, int64_t micro_batch) {
  MEMPLAN_RETURN_IF_ERROR(RunRange(program_.micro_batch, iteration, micro_batch));
  return CheckOnlyPersistentLive("the end of a micro-batch");
}

Status ProgramWalker::RunOptimizerPhase(int iteration) {
  return RunRange(program_.optimizer, iteration, -1);
}

Status ProgramWalker::CheckOnlyPersistentLive(const char* when) const {
  for (size_t i = 0; i < live_.size(); ++i) {
    if (live_[i] && !program_.buffers[i].persistent) {
      return MakeError("inconsistent training program: buffer '" + program_.buffers[i].name +
                       "' is still live at " + when + " but is not persistent (a leak)");
    }
  }
  return OkStatus();
}

Status ProgramWalker::RunRange(StepRange range, int iteration, int64_t micro_batch) {
  for (LogicalTime t = range.begin; t < range.end; ++t) {
    const Step& step = program_.step(t);
    const ProgramTape::StepEvents& events = tape_->steps[static_cast<size_t>(t)];
    const ExecutionPoint at{t, iteration, micro_batch};
    if (listener_ != nullptr) listener_->OnStepEnter(step, at);
    handed_over_.clear();
    for (size_t i = events.begin; i < events.end_first; ++i)
      MEMPLAN_RETURN_IF_ERROR(Apply(step, /*in_begin=*/true, i, events.end_first, at));
    if (!handed_over_.empty()) {
      return Inconsistent(step, "hands over the storage of '" +
                                    program_.buffer(handed_over_.front()).name +
                                    "' but no allocation takes it");
    }
    if (options_.check_operands) MEMPLAN_RETURN_IF_ERROR(CheckOperands(step));
    SamplePeak(at);
    if (listener_ != nullptr) {
      listener_->OnStepBegun(step, at);
      Status status = listener_->RunStep(step, at);
      if (!status.ok())
        return MakeError("step '" + StepToString(program_, t) + "': " + status.error().message);
    }
    for (size_t i = events.end_first; i < events.end_last; ++i)
      MEMPLAN_RETURN_IF_ERROR(Apply(step, /*in_begin=*/false, i, events.end_last, at));
    if (listener_ != nullptr) listener_->OnStepEnded(step, at);
  }
  return OkStatus();
}

Status ProgramWalker::Apply(const Step& step, bool in_begin, size_t index, size_t last,
                            const ExecutionPoint& at) {
  const std::vector<MemoryEvent>& events = tape_->events;
  const MemoryEvent& e = events[index];
  if (e.guard != MemoryEvent::Guard::kNone &&
      (e.guard == MemoryEvent::Guard::kIfLive) != live(e.guard_buffer))
    return OkStatus();
  const size_t b = e.buffer.index();
  if (e.action == MemoryEvent::Action::kAlloc) {
    if (live_[b]) {
      return Inconsistent(
          step, "allocates '" + program_.buffer(e.buffer).name + "', which is already live");
    }
    if (e.storage_of.valid()) {
      const std::string& name = program_.buffer(e.buffer).name;
      auto it = std::find(handed_over_.begin(), handed_over_.end(), e.storage_of);
      if (it == handed_over_.end()) {
        return Inconsistent(step, "gives '" + name + "' the storage of '" +
                                      program_.buffer(e.storage_of).name +
                                      "', which this Begin did not free");
      }
      handed_over_.erase(it);
    }
    live_[b] = 1;
    ++num_allocations_;
    if (tape_->host[b]) {
      // Pinned host memory: counted apart, never against the GPU or its allocator.
      host_stat_.Allocate(bytes_[b]);
      host_by_category_.bytes[tape_->category[b]] += bytes_[b];
    } else {
      live_stat_.Allocate(bytes_[b]);
      by_category_.bytes[tape_->category[b]] += bytes_[b];
      // PyTorch's out-of-memory error ends the run: the model takes no request after its first
      // refusal (nor the frees of buffers it never placed).
      if (model_ != nullptr && !out_of_memory() &&
          !model_->Allocate(static_cast<int64_t>(b), bytes_[b]))
        out_of_memory_at_ = at;
    }
    if (options_.record_trace) Trace(WalkEvent::Kind::kAlloc, e.buffer, at);
    if (listener_ != nullptr) return listener_->OnAlloc(e.buffer, e.storage_of);
    return OkStatus();
  }
  if (!live_[b])
    return Inconsistent(step, "frees '" + program_.buffer(e.buffer).name + "', which is not live");
  // A later event of this Begin takes the storage (its guard is evaluated now: hand-overs pair a
  // free and an allocation under the same guard, which the free does not change).
  bool handed_over = false;
  if (in_begin && tape_->steps[static_cast<size_t>(at.step)].hands_over) {
    for (size_t j = index + 1; j < last; ++j) {
      const MemoryEvent& later = events[j];
      if (later.action != MemoryEvent::Action::kAlloc || later.storage_of != e.buffer) continue;
      handed_over = later.guard == MemoryEvent::Guard::kNone ||
                    (later.guard == MemoryEvent::Guard::kIfLive) == live(later.guard_buffer);
    }
  }
  if (handed_over) handed_over_.push_back(e.buffer);
  live_[b] = 0;
  if (tape_->host[b]) {
    host_stat_.Free(bytes_[b]);
    host_by_category_.bytes[tape_->category[b]] -= bytes_[b];
  } else {
    live_stat_.Free(bytes_[b]);
    by_category_.bytes[tape_->category[b]] -= bytes_[b];
    if (model_ != nullptr && !out_of_memory()) model_->Free(static_cast<int64_t>(b));
  }
  if (options_.record_trace) Trace(WalkEvent::Kind::kFree, e.buffer, at);
  if (listener_ != nullptr) listener_->OnFree(e.buffer, handed_over);
  return OkStatus();
}

// Every buffer the step's work touches must be live between its Begin and End.
Status ProgramWalker::CheckOperands(const Step& step) const {
  auto check = [&](BufferId b, const char* what) -> Status {
    if (!b.valid()) return OkStatus();
    if (b.index() >= program_.buffers.size())
      return Inconsistent(step, std::string("names a ") + what + " buffer that does not exist");
    if (!live_[b.index()])
      return Inconsistent(step, std::string("uses ") + what + " '" + program_.buffer(b).name +
                                    "' before it is allocated or after it is freed");
    return OkStatus();
  };
  // An accumulation's part may have been handed over to the gradient at Begin.
  if (step.kind != StepKind::kAccumulateGradient)
    for (BufferId b : step.inputs) MEMPLAN_RETURN_IF_ERROR(check(b, "input"));
  for (BufferId b : step.outputs) MEMPLAN_RETURN_IF_ERROR(check(b, "output"));
  for (const CastOp& c : step.casts) {
    MEMPLAN_RETURN_IF_ERROR(check(c.source, "cast source"));
    MEMPLAN_RETURN_IF_ERROR(check(c.target, "cast"));
  }
  for (BufferId b : step.extras) MEMPLAN_RETURN_IF_ERROR(check(b, "saved extra"));
  for (BufferId b : step.saved) MEMPLAN_RETURN_IF_ERROR(check(b, "saved"));
  for (BufferId b : step.output_gradients) MEMPLAN_RETURN_IF_ERROR(check(b, "output gradient"));
  for (const GradientWrite& w : step.input_gradients) {
    MEMPLAN_RETURN_IF_ERROR(check(w.target, "input gradient"));
    MEMPLAN_RETURN_IF_ERROR(check(w.part, "gradient part"));
  }
  return check(step.workspace, "workspace");
}

void ProgramWalker::SamplePeak(const ExecutionPoint& at) {
  UpdatePeak(peak_, LiveSample{live_stat_.current, by_category_}, at);
  if (host_stat_.current > 0)
    UpdatePeak(host_peak_, LiveSample{host_stat_.current, host_by_category_}, at);
  if (listener_ != nullptr) {
    if (std::optional<LiveSample> measured = listener_->MeasureLive())
      UpdatePeak(measured_peak_, *measured, at);
  }
  if (model_ != nullptr) {
    model_peak_allocated_ = std::max(model_peak_allocated_, model_->allocated_bytes());
    model_peak_reserved_ = std::max(model_peak_reserved_, model_->reserved_bytes());
  }
}

// The peak rule: the first sample, then only a strictly larger one (the earliest step of equal
// peaks is named).
void ProgramWalker::UpdatePeak(WalkPeak& peak, const LiveSample& sample, const ExecutionPoint& at) {
  if (sample.total <= peak.bytes && peak.at.step >= 0) return;
  peak.bytes = sample.total;
  peak.at = at;
  peak.breakdown = sample.by_category;
}

const WalkPeak& ProgramWalker::Named(WalkPeak& peak) const {
  if (peak.at.step < 0) return peak;
  const Step& step = program_.step(peak.at.step);
  peak.step_name =
      std::string(StepKindName(step.kind)) + (step.name.empty() ? "" : " " + step.name);
  return peak;
}

void ProgramWalker::Trace(WalkEvent::Kind kind, BufferId b, const ExecutionPoint& at) {
  trace_.events.push_back(WalkEvent{at, kind, b, bytes_[b.index()], live_stat_.current});
}

std::string ProgramWalker::Where(const Step& step) const {
  const auto t = static_cast<LogicalTime>(&step - program_.steps.data());
  return "step t" + std::to_string(t) + " (" + std::string(StepKindName(step.kind)) + " " +
         step.name + ")";
}

Error ProgramWalker::Inconsistent(const Step& step, const std::string& what) const {
  return MakeError("inconsistent training program: " + Where(step) + " " + what);
}

}  // namespace memplan
