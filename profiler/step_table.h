#pragma once
// The executor's side of a trace: which external correlation id it pushed around which execution
// of which program step. A body step runs once per micro-batch, so one program step appears k
// times in the table, each time with its own external id.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/program/step_phase.h"
#include "analyzer/program/training_program.h"

namespace memplan::profiler {

struct ProfiledStep {
  uint64_t external_id = 0;  // the id pushed around this execution; unique within a table
  LogicalTime step = -1;     // index into TrainingProgram::steps
  std::string name;          // the step's name ("fc1", "loss", "optimizer")
  std::string node;          // graph node name; empty for steps that run no graph node
  StepPhase phase = StepPhase::kForward;  // analyzer/program/step_phase.h
  int64_t micro_batch = 0;  // 0-based micro-batch of the body; 0 for setup/optimizer steps
  // Host time (CUPTI clock) around the execution; 0/0 when unknown. Used only to attribute
  // memory records whose API call carried no external id.
  uint64_t host_start_ns = 0;
  uint64_t host_end_ns = 0;
};

using StepTable = std::vector<ProfiledStep>;

// The table entry for one execution of `program.steps[t]`.
// REQUIRES: 0 <= t < program.steps.size().
ProfiledStep DescribeStep(const TrainingProgram& program, LogicalTime t, int64_t micro_batch,
                          uint64_t external_id);

}  // namespace memplan::profiler
