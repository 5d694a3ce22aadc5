#include "analyzer/derivation/program_rewrite.h"

#include <algorithm>

namespace memplan {
namespace {

void Widen(LogicalTime t, LogicalTime& first, LogicalTime& last) {
  if (first < 0 || t < first) first = t;
  if (t > last) last = t;
}

}  // namespace

BodyUses RecordBodyUses(const TrainingProgram& program) {
  BodyUses uses;
  uses.steps.assign(program.buffers.size(), {});
  uses.last_accumulation.assign(program.parameters.size(), -1);
  for (LogicalTime t = program.micro_batch.begin; t < program.micro_batch.end; ++t) {
    const Step& s = program.step(t);
    auto use = [&](BufferId b) {
      if (b.valid() && (uses.steps[b.index()].empty() || uses.steps[b.index()].back() != t))
        uses.steps[b.index()].push_back(t);
    };
    for (BufferId b : s.inputs) use(b);
    for (BufferId b : s.outputs) use(b);
    for (const CastOp& c : s.casts) use(c.source);
    for (BufferId b : s.saved) use(b);
    if (s.kind == StepKind::kAccumulateGradient && s.parameter >= 0)
      uses.last_accumulation[static_cast<size_t>(s.parameter)] = t;
  }
  return uses;
}

void StepInsertions::Apply(TrainingProgram& program) {
  const size_t n = program.steps.size();
  MEMPLAN_CHECK(before_.size() == n && after_.size() == n);
  std::vector<Step> steps;
  std::vector<LogicalTime> block_begin(n + 1, 0);  // where before_[t] starts
  std::vector<LogicalTime> position(n, 0);
  for (size_t t = 0; t < n; ++t) {
    block_begin[t] = static_cast<LogicalTime>(steps.size());
    for (Step& s : before_[t]) steps.push_back(std::move(s));
    position[t] = static_cast<LogicalTime>(steps.size());
    steps.push_back(std::move(program.steps[t]));
    for (Step& s : after_[t]) steps.push_back(std::move(s));
  }
  block_begin[n] = static_cast<LogicalTime>(steps.size());
  auto begin_of = [&](LogicalTime t) { return block_begin[static_cast<size_t>(t)]; };
  program.setup = StepRange{0, begin_of(program.micro_batch.begin)};
  program.micro_batch =
      StepRange{begin_of(program.micro_batch.begin), begin_of(program.optimizer.begin)};
  program.optimizer =
      StepRange{begin_of(program.optimizer.begin), static_cast<LogicalTime>(steps.size())};
  program.loss_step = position[static_cast<size_t>(program.loss_step)];
  for (LossTerm& term : program.loss_terms) {
    if (term.step >= 0) term.step = position[static_cast<size_t>(term.step)];
    if (term.backward_step >= 0)
      term.backward_step = position[static_cast<size_t>(term.backward_step)];
  }
  program.steps = std::move(steps);
  before_.assign(n, {});
  after_.assign(n, {});
}

void ComputeUnitSpan(const TrainingProgram& program, const BodyUses& uses, ParameterUnit& unit) {
  for (BufferId b : unit.buffers) {
    for (LogicalTime t : uses.steps[b.index()]) {
      if (t < program.loss_step) {
        Widen(t, unit.forward_first, unit.forward_last);
        const Step& s = program.step(t);
        if (s.kind == StepKind::kForward && s.node.valid() &&
            std::find(unit.nodes.begin(), unit.nodes.end(), s.node) == unit.nodes.end())
          unit.nodes.push_back(s.node);
      } else {
        Widen(t, unit.backward_first, unit.backward_last);
      }
    }
  }
  for (LogicalTime t = program.loss_step + 1; t < program.micro_batch.end; ++t) {
    const Step& s = program.step(t);
    if (s.kind == StepKind::kBackward &&
        std::find(unit.nodes.begin(), unit.nodes.end(), s.node) != unit.nodes.end())
      Widen(t, unit.backward_first, unit.backward_last);
  }
}

void PlaceUnitFetches(TrainingProgram& program, const std::vector<ParameterUnit>& units,
                      int64_t prefetch_units, bool reshard_after_forward,
                      const std::function<Step(size_t unit, bool backward)>& fetch,
                      StepInsertions& insertions) {
  const auto prefetch = static_cast<size_t>(std::max<int64_t>(0, prefetch_units));
  auto free_at_end = [&](LogicalTime t, const std::vector<BufferId>& buffers) {
    for (BufferId b : buffers) program.steps[static_cast<size_t>(t)].end.push_back(FreeEvent(b));
  };
  std::vector<size_t> order(units.size());
  for (size_t u = 0; u < units.size(); ++u) order[u] = u;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return units[a].forward_first < units[b].forward_first;
  });
  std::vector<size_t> forward;
  std::vector<size_t> backward;
  for (size_t u : order) {
    if (units[u].forward_first >= 0) forward.push_back(u);
    if (units[u].backward_first >= 0) backward.push_back(u);
  }
  std::stable_sort(backward.begin(), backward.end(), [&](size_t a, size_t b) {
    return units[a].backward_first < units[b].backward_first;
  });
  for (size_t j = 0; j < forward.size(); ++j) {
    const ParameterUnit& unit = units[forward[j]];
    const ParameterUnit& anchor = units[forward[j >= prefetch ? j - prefetch : 0]];
    insertions.Before(anchor.forward_first).push_back(fetch(forward[j], /*backward=*/false));
    const bool keep = (!reshard_after_forward || unit.keep_gathered) && unit.backward_last >= 0;
    free_at_end(keep ? unit.backward_last : unit.forward_last, unit.buffers);
  }
  if (!reshard_after_forward) return;
  // Units kept gathered are not fetched again (nor counted in the prefetch distance).
  backward.erase(std::remove_if(backward.begin(), backward.end(),
                                [&](size_t u) {
                                  return units[u].keep_gathered && units[u].forward_first >= 0;
                                }),
                 backward.end());
  for (size_t j = 0; j < backward.size(); ++j) {
    const ParameterUnit& unit = units[backward[j]];
    const ParameterUnit& anchor = units[backward[j >= prefetch ? j - prefetch : 0]];
    insertions.Before(anchor.backward_first).push_back(fetch(backward[j], /*backward=*/true));
    free_at_end(unit.backward_last, unit.buffers);
  }
}

}  // namespace memplan
