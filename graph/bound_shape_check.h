#pragma once
// Re-checking a graph's shapes once the command line binds its symbols. At import a MatMul of
// x[batch, s] and W[4, 4] is consistent for s = 4, and a Reshape or an Expand may work for only
// one value of a symbol: a shape rule cannot refuse what a later binding might make true. Once
// `--dim s=128` (or `--batch`) gives the value, the graph is propagated again with the bound
// symbols as numbers, so every constraint the registry's rules state (contraction dims, Reshape
// element counts, Expand and broadcast compatibility, Concat/Split sizes...) is checked against
// it: a violation is bad input naming the node and the binding, never a plan.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

// OK when no symbol is bound or every node's shape rule accepts the bound values; otherwise the
// rule's error, after "with <bound> " (`bound` names the flags, e.g. "--dim s=128").
Status CheckShapesUnderBindings(const Graph& graph, const Bindings& bindings,
                                const std::string& bound);

// The values of the symbols the bound ones determine. A shape rule that cannot write a dim as a
// polynomial of the input's symbols names it with a new one: a strided Conv's output length
// floor((L + 2p - k) / s) + 1 is `conv_out_0`, an exporter's dim ONNX inference could not
// relate (`unk__1`). Once the real axes are bound, the graph propagated with their values has a
// number in each such place; that number is the symbol's value, so the command line never asks
// for it. Returns (symbol, value) for each symbol that no graph input declares, that the
// bindings leave unbound and that takes one value everywhere it appears. The batch symbol is
// left symbolic in that propagation: a symbol that follows the batch (a Reshape of batch * seq)
// changes with the micro-batch the planner tries, so it is not fixed here.
// The same re-check for each micro-batch the planner's search tries (the batch symbol bound to
// it). A propagation costs about as much as the import's, and a search tries 10-30 micro-batches,
// so the graph is screened first at two micro-batches, 1 and kScreenMicroBatch (65537, a prime
// beyond the search's cap): where both hold, no micro-batch of the search is propagated on its
// own, only the plan's (At with `exact`). The screen is exact for the constraints a graph states
// about the batch in practice: a dim equal to a linear form of it (two points fix a line), a
// divisibility by a constant (checked at 1: k * 1 divisible by q means q divides k), a broadcast
// against a fixed size (fails at one of the two), a lower bound (at 1) and an upper bound (at
// 65537). A graph that fails the screen has every micro-batch tried checked on its own. Results
// are kept per micro-batch: the joint search plans one graph once per precision and recompute
// attempt, and each attempt tries mostly the same values.
class MicroBatchShapeCheck {
 public:
  static constexpr int64_t kScreenMicroBatch = 65537;

  // Checks `graph` itself (the planner's graph outlives the search).
  MicroBatchShapeCheck(const Graph& graph, Bindings bindings);
  // Checks a copy of `graph` made now: a --tp graph is split afterwards into one rank's slice
  // whose attributes (Reshape targets, Split sizes) still state the whole model's shapes, so its
  // micro-batches are checked against the model as it was before the split.
  static std::shared_ptr<MicroBatchShapeCheck> Snapshot(const Graph& graph, Bindings bindings);
  ~MicroBatchShapeCheck();

  // The same graph (the snapshot's copy, when this is one) checked under other bindings: an
  // alternative plan of a --tp model (another --dim, another GPU) is planned on the split graph,
  // so its micro-batches are checked against the snapshot, with the alternative's own bindings.
  std::shared_ptr<MicroBatchShapeCheck> Rebound(Bindings bindings) const;

  // OK when the graph's shapes hold with the batch symbol = `micro_batch` (and every other
  // binding), or, unless `exact`, when the screen above passed; otherwise "with micro-batch M
  // (tried by the micro-batch search; --micro-batch pins one): <the rule's error>", or "with
  // micro-batch M: ..." when `searched` is false (the user pinned M). A graph without a batch
  // symbol has nothing to check.
  Status At(int64_t micro_batch, bool searched, bool exact = false);

 private:
  // The rule's error at `micro_batch`, propagated once.
  const std::optional<std::string>& ErrorAt(int64_t micro_batch);

  std::shared_ptr<const Graph> owned_;  // the snapshot's copy, shared with its Rebound checks
  const Graph* graph_;
  Bindings bindings_;
  std::map<int64_t, std::optional<std::string>> errors_;  // per micro-batch: the rule's error
  std::optional<bool> screen_holds_;
};

std::vector<std::pair<SymbolId, int64_t>> DeterminedSymbols(const Graph& graph,
                                                            const Bindings& bindings);

}  // namespace memplan
