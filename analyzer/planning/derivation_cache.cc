#include "analyzer/planning/derivation_cache.h"

#include <algorithm>
#include <utility>

namespace memplan {

Expected<std::shared_ptr<TrainingProgram>> DerivationCache::Program(const Graph& graph,
                                                                    const ProgramOptions& options) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->graph != &graph || !(it->options == options)) continue;
    // The most recently used last.
    std::rotate(it, it + 1, entries_.end());
    return entries_.back().program;
  }
  MEMPLAN_TRY(TrainingProgram program, DeriveTrainingProgram(graph, options));
  if (entries_.size() == kMaxPrograms) entries_.erase(entries_.begin());
  Entry entry;
  entry.graph = &graph;
  entry.options = options;
  entry.program = std::make_shared<TrainingProgram>(std::move(program));
  entries_.push_back(std::move(entry));
  return entries_.back().program;
}

}  // namespace memplan
