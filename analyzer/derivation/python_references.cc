#include "analyzer/derivation/python_references.h"

#include <algorithm>
#include <string>
#include <unordered_map>

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
  // What the model returns: the caller holds it until the loss has been computed from it
  // (torchtune: `logits = self._model(**batch)`, `loss = self._loss_fn(logits, labels)`, then
  // `del logits`; with --loss-chunks that is the list of every chunk's logits), so each loss
  // term's output lives at least to the last loss step.
  for (const LossTerm& term : program.loss_terms) {
    if (!term.output.valid() || !buffer_of[term.output.index()].valid()) continue;
    LogicalTime& h = hold[buffer_of[term.output.index()].index()];
    h = std::max(h, program.loss_step);
  }
  // Each node's module scopes, parsed once (outermost first) and numbered (a derivation runs this
  // per probe of the recompute search: ids, not strings, in the loops below), and each module's
  // last forward step in the micro-batch body (0 for a module with no forward step).
  std::unordered_map<std::string, size_t> scope_ids;
  std::vector<std::vector<size_t>> scopes(graph.num_nodes());
  for (const Node& n : graph.nodes()) {
    for (std::string& s : ModuleScopesOfNode(n.name)) {
      const size_t id = scope_ids.try_emplace(std::move(s), scope_ids.size()).first->second;
      scopes[n.id.index()].push_back(id);
    }
  }
  std::vector<LogicalTime> module_end(scope_ids.size(), 0);
  std::vector<LogicalTime> forward;
  for (LogicalTime t = program.micro_batch.begin; t < program.loss_step; ++t) {
    const Step& step = program.step(t);
    if (step.kind != StepKind::kForward || !step.node.valid()) continue;
    for (size_t s : scopes[step.node.index()]) module_end[s] = std::max(module_end[s], t);
    forward.push_back(t);
  }
  for (LogicalTime t : forward) {
    const Node& node = graph.node(program.step(t).node);
    const std::vector<size_t>& inside = scopes[node.id.index()];
    if (inside.empty()) continue;
    for (ValueId u : node.inputs) {
      if (!u.valid() || !buffer_of[u.index()].valid()) continue;
      const Value& value = graph.value(u);
      static const std::vector<size_t> kNone;
      const std::vector<size_t>& made_in =
          value.producer.valid() ? scopes[value.producer.index()] : kNone;
      LogicalTime& h = hold[buffer_of[u.index()].index()];
      // Scopes are outermost first: the modules the value enters are those past the common prefix.
      size_t common = 0;
      while (common < inside.size() && common < made_in.size() && inside[common] == made_in[common])
        ++common;
      for (size_t i = common; i < inside.size(); ++i) h = std::max(h, module_end[inside[i]]);
    }
  }
  return hold;
}

}  // namespace memplan
