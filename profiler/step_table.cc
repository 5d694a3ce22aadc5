#include "profiler/step_table.h"

#include "graph/expected.h"

namespace memplan::profiler {

ProfiledStep DescribeStep(const TrainingProgram& program, LogicalTime t, int64_t micro_batch,
                          uint64_t external_id) {
  MEMPLAN_CHECK(t >= 0 && static_cast<size_t>(t) < program.steps.size());
  const Step& step = program.step(t);
  ProfiledStep described;
  described.external_id = external_id;
  described.step = t;
  described.name = step.name;
  if (step.node.valid()) described.node = step.name;
  described.phase = PhaseOfStep(step.kind);
  described.micro_batch = program.micro_batch.contains(t) ? micro_batch : 0;
  return described;
}

}  // namespace memplan::profiler
