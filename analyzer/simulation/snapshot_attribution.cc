#include "analyzer/simulation/snapshot_attribution.h"

#include <map>

#include <unordered_set>
#include <utility>
#include "analyzer/program/step_phase.h"
#include "analyzer/simulation/snapshot_breakdown.h"

namespace memplan {
namespace {

// The phase class of an allocation: PyTorch's from its frames (snapshot_breakdown.h's rule),
// memplan's from its step. kAny: no frames recorded, matches every phase.
enum class PhaseClass { kSetup, kForward, kBackward, kOptimizer, kAny };

PhaseClass ClassOfFrames(const MemorySnapshot& snapshot, const std::vector<int32_t>& frames) {
  switch (CategoryOfFrames(snapshot, frames)) {
    case SnapshotCategory::kParameters:
      return PhaseClass::kSetup;
    case SnapshotCategory::kOptimizerState:
      return PhaseClass::kOptimizer;
    case SnapshotCategory::kBackward:
      return PhaseClass::kBackward;
    case SnapshotCategory::kActivations:
      return PhaseClass::kForward;
    case SnapshotCategory::kUnattributed:
      break;
  }
  return PhaseClass::kAny;
}

PhaseClass ClassOfStep(const TrainingProgram& program, LogicalTime t) {
  switch (PhaseOfStep(program, t)) {
    case StepPhase::kSetup:
      return PhaseClass::kSetup;
    case StepPhase::kLoad:
    case StepPhase::kForward:
      return PhaseClass::kForward;
    case StepPhase::kBackward:
    case StepPhase::kRecompute:
      return PhaseClass::kBackward;
    case StepPhase::kOptimizer:
      break;
  }
  return PhaseClass::kOptimizer;
}

// memplan's device allocations in walk order, as indices into the trace's events, cut into
// segments: setup, then one per iteration.
struct Script {
  std::vector<size_t> events;
  std::vector<PhaseClass> phase;
  std::vector<size_t> segment_start;  // ascending; the last segment ends at events.size()
  bool has_setup = false;
};

Script ScriptOf(const TrainingProgram& program, const WalkTrace& trace) {
  Script script;
  int iteration = -2;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const WalkEvent& e = trace.events[i];
    if (e.kind != WalkEvent::Kind::kAlloc || program.buffer(e.buffer).on_host()) continue;
    if (e.at.iteration != iteration) {
      if (e.at.iteration < 0) script.has_setup = true;
      iteration = e.at.iteration;
      script.segment_start.push_back(script.events.size());
    }
    script.events.push_back(i);
    script.phase.push_back(ClassOfStep(program, e.at.step));
  }
  return script;
}

// The search of the header's rule. The segment is explicit: matching the last allocation of
// an iteration does not move the search into the next one; only the iteration rule does.
class Matcher {
 public:
  Matcher(const WalkTrace& trace, Script script) : trace_(trace), script_(std::move(script)) {}

  std::optional<size_t> Match(int64_t bytes, PhaseClass phase) {
    if (script_.events.empty()) return std::nullopt;
    // A forward allocation after a backward or optimizer one starts PyTorch's next iteration;
    // any but a parameter's leaves the setup.
    if (phase == PhaseClass::kForward &&
        (last_ == PhaseClass::kBackward || last_ == PhaseClass::kOptimizer))
      NextSegment();
    if (phase != PhaseClass::kSetup && phase != PhaseClass::kAny && script_.has_setup &&
        segment_ == 0)
      NextSegment();
    if (phase != PhaseClass::kAny) last_ = phase;
    for (size_t i = cursor_; i < SegmentEnd(); ++i) {
      if (trace_.events[script_.events[i]].bytes != bytes) continue;
      if (phase != PhaseClass::kAny && script_.phase[i] != phase) continue;
      cursor_ = i + 1;
      return script_.events[i];
    }
    return std::nullopt;
  }

 private:
  size_t SegmentEnd() const {
    return segment_ + 1 < script_.segment_start.size() ? script_.segment_start[segment_ + 1]
                                                       : script_.events.size();
  }
  // The segment after the current one; after the last, the last again (a longer run repeats
  // memplan's steady state).
  void NextSegment() {
    if (segment_ + 1 < script_.segment_start.size()) ++segment_;
    cursor_ = script_.segment_start[segment_];
  }

  const WalkTrace& trace_;
  Script script_;
  size_t segment_ = 0;
  size_t cursor_ = 0;
  PhaseClass last_ = PhaseClass::kAny;
};

bool IsFree(SnapshotAction action) {
  return action == SnapshotAction::kFreeRequested || action == SnapshotAction::kFreeCompleted;
}

}  // namespace

Expected<SnapshotAttribution> AttributeSnapshot(const MemorySnapshot& snapshot, int64_t focus_event,
                                                const TrainingProgram& program,
                                                const WalkTrace& trace) {
  const auto& events = snapshot.events;
  if (focus_event < -1 || focus_event >= static_cast<int64_t>(events.size()))
    return MakeError("event " + std::to_string(focus_event) + " is not in the trace");
  SnapshotAttribution out;
  Script script = ScriptOf(program, trace);
  out.script_allocations = static_cast<int64_t>(script.events.size());
  Matcher matcher(trace, std::move(script));

  // Live blocks by address; `order` numbers them by allocation.
  std::map<int64_t, std::pair<int64_t, AttributedBlock>> live;
  int64_t order = 0;
  auto allocate = [&](AttributedBlock block) {
    ++out.snapshot_allocations;
    block.matched_event = matcher.Match(block.size, ClassOfFrames(snapshot, block.frames));
    if (block.matched_event) {
      ++out.matched_allocations;
      const WalkEvent& e = trace.events[*block.matched_event];
      block.buffer = e.buffer;
      block.category = program.buffer(e.buffer).category;
      const Step& step = program.step(e.at.step);
      block.step =
          std::string(StepKindName(step.kind)) + (step.name.empty() ? "" : " " + step.name);
    }
    const int64_t address = block.address;
    return live.emplace(address, std::make_pair(order++, std::move(block))).second;
  };

  // The blocks live when the trace began (snapshot_replay.h): freed without a recorded alloc,
  // or held by the final segments without ever being named; in address order.
  std::unordered_set<int64_t> named;
  std::map<int64_t, AttributedBlock> preexisting;
  for (const SnapshotEvent& e : events) {
    if (e.action != SnapshotAction::kAlloc && !IsFree(e.action)) continue;
    if (named.insert(e.address).second && IsFree(e.action))
      preexisting[e.address] = AttributedBlock{e.address, e.size, e.stream, e.frames};
  }
  for (const SnapshotSegment& s : snapshot.segments)
    for (const SnapshotBlock& b : s.blocks)
      if (b.allocated && named.count(b.address) == 0)
        preexisting[b.address] = AttributedBlock{b.address, b.requested_size, s.stream, b.frames};
  for (auto& [address, block] : preexisting) allocate(std::move(block));

  const bool at_oom =
      focus_event >= 0 && events[static_cast<size_t>(focus_event)].action == SnapshotAction::kOom;
  const int64_t last = at_oom ? focus_event - 1 : focus_event;
  for (int64_t i = 0; i <= last; ++i) {
    const SnapshotEvent& e = events[static_cast<size_t>(i)];
    if (e.action == SnapshotAction::kAlloc) {
      if (!allocate(AttributedBlock{e.address, e.size, e.stream, e.frames}))
        return MakeError("events[" + std::to_string(i) + "]: alloc at an address (" +
                         std::to_string(e.address) + ") that is already allocated");
    } else if (e.action == SnapshotAction::kFreeCompleted) {
      if (live.erase(e.address) == 0)
        return MakeError("events[" + std::to_string(i) + "]: free_completed at an address (" +
                         std::to_string(e.address) + ") that is not allocated");
    }
  }
  std::map<int64_t, AttributedBlock> by_order;
  for (auto& [address, entry] : live) by_order.emplace(entry.first, std::move(entry.second));
  for (auto& [n, block] : by_order) {
    if (block.matched_event)
      out.attributed[block.category] += block.size;
    else
      out.unattributed_bytes += block.size;
    out.live.push_back(std::move(block));
  }
  return out;
}

}  // namespace memplan
