#pragma once
// The training programs derived from one or more graphs, kept so that plans asking for the same
// program do not derive it again. DeriveTrainingProgram is a pure function of the graph and the
// ProgramOptions (the program is symbolic in every dim, so the bindings, the GPU and the allocator
// do not enter it), and `analyze`'s alternatives plan the same graph with the same program options
// many times over: a larger GPU, another --dim seq, expandable segments and --recompute auto each
// derive the fp32 and 16-bit programs the others derived (GPT-2 XL's 12 joint searches derived
// 31 programs).
//
// Usage (PlannerOptions::derivations; the planner asks it instead of deriving):
//   options.derivations = std::make_shared<DerivationCache>();
//   MEMPLAN_TRY(std::shared_ptr<TrainingProgram> program,
//               options.derivations->Program(graph, program_options));

#include <memory>
#include <vector>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/program/training_program.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

class DerivationCache {
 public:
  // DeriveTrainingProgram(graph, options), derived on the first call with equal options on the
  // same graph (which must outlive the cache). The program is shared: callers copy it before
  // changing it. Errors are the derivation's, not kept (the next call derives again).
  Expected<std::shared_ptr<TrainingProgram>> Program(const Graph& graph,
                                                     const ProgramOptions& options);

  size_t size() const { return entries_.size(); }

  // The programs kept, the least recently used dropped first. A program is as large as its graph
  // (two steps and three buffers per node), so keeping every one a search derives costs more than
  // deriving again: GPT-2 XL's --global-batch 64 alternatives derive 108 programs, kept whole
  // they held 954 MB (278 MB without a cache) and the page faults cost more CPU than the 12
  // derivations they saved. The programs that repeat are the ones the alternatives just planned
  // (the fp32 and 16-bit programs of the options asked, their recompute sets), so a few suffice.
  static constexpr size_t kMaxPrograms = 4;

 private:
  struct Entry {
    const Graph* graph = nullptr;
    ProgramOptions options;
    std::shared_ptr<TrainingProgram> program;
  };
  // At most kMaxPrograms, least recently used first: a linear search compares fewer options than
  // a map's ordering would need.
  std::vector<Entry> entries_;
};

}  // namespace memplan
