#include "analyzer/planning/derivation_cache.h"

#include <utility>

namespace memplan {

Expected<std::shared_ptr<TrainingProgram>> DerivationCache::Program(const Graph& graph,
                                                                    const ProgramOptions& options) {
  for (const Entry& entry : entries_)
    if (entry.graph == &graph && entry.options == options) return entry.program;
  MEMPLAN_TRY(TrainingProgram program, DeriveTrainingProgram(graph, options));
  Entry entry;
  entry.graph = &graph;
  entry.options = options;
  entry.program = std::make_shared<TrainingProgram>(std::move(program));
  entries_.push_back(std::move(entry));
  return entries_.back().program;
}

}  // namespace memplan
