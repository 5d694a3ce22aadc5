#include "analyzer/derivation/python_references.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_set>

#include "analyzer/recompute/checkpoint_modules.h"

namespace memplan {

std::vector<LogicalTime> PythonReferenceHolds(const Graph& graph, const TrainingProgram& program) {
  std::vector<LogicalTime> hold(program.buffers.size(), -1);
  const LogicalTime body_end = program.micro_batch.end - 1;
  // The buffer that holds each graph value's own storage (views and casts excluded: a cast is
  // made inside the op, a view's base is held through its own value).
  std::vector<BufferId> buffer_of(graph.num_values());
  for (const Buffer& b : program.buffers) {
    if (b.role == BufferRole::kInput || b.role == BufferRole::kLabel) {
      hold[b.id.index()] = body_end;  // the training loop's batch variables
      if (b.value.valid()) buffer_of[b.value.index()] = b.id;
    } else if (b.role == BufferRole::kValue && b.value.valid() &&
               !buffer_of[b.value.index()].valid()) {
      buffer_of[b.value.index()] = b.id;
    }
  }
  // The forward steps of the micro-batch body and each module's last one.
  std::vector<std::pair<LogicalTime, std::vector<std::string>>> forward;
  std::map<std::string, LogicalTime> module_end;
  for (LogicalTime t = program.micro_batch.begin; t < program.loss_step; ++t) {
    const Step& step = program.step(t);
    if (step.kind != StepKind::kForward || !step.node.valid()) continue;
    std::vector<std::string> scopes = ModuleScopesOfNode(graph.node(step.node).name);
    for (const std::string& s : scopes) module_end[s] = std::max(module_end[s], t);
    forward.emplace_back(t, std::move(scopes));
  }
  for (const auto& [t, scopes] : forward) {
    if (scopes.empty()) continue;
    const Node& node = graph.node(program.step(t).node);
    for (ValueId u : node.inputs) {
      if (!u.valid() || !buffer_of[u.index()].valid()) continue;
      const Value& value = graph.value(u);
      std::unordered_set<std::string> producer_scopes;
      if (value.producer.valid())
        for (std::string& s : ModuleScopesOfNode(graph.node(value.producer).name))
          producer_scopes.insert(std::move(s));
      LogicalTime& h = hold[buffer_of[u.index()].index()];
      for (const std::string& s : scopes)
        if (producer_scopes.count(s) == 0) h = std::max(h, module_end[s]);
    }
  }
  return hold;
}

}  // namespace memplan
