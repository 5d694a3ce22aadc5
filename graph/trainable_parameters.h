#pragma once
// Which floating initializers training really updates. ONNX has no notion of buffers: PyTorch
// exports BatchNorm running_mean/running_var (and float mask buffers) as initializers like any
// weight. A parameter is trainable when a gradient can reach it: some consumer takes a gradient
// through that input slot (the registry's gradient_inputs) and that consumer's output itself
// leads, differentiably, to a graph output.
//
// A fine-tuning plan then freezes some trainable parameters (Value::frozen), as
// `param.requires_grad_(False)` does: --train REGEX keeps only the parameters whose name matches,
// --freeze REGEX freezes the ones that match. Both are NamePatterns (graph/name_pattern.h).

#include <cstdint>
#include <optional>
#include <string>

#include "graph/graph.h"

namespace memplan {

// Sets Value::trainable for every kParameter. REQUIRES: shapes propagated (rules read dtypes).
Status MarkTrainableParameters(Graph& graph);

// A parameter training updates: trainable (gradient reaches it) and not frozen.
inline bool IsTrainedParameter(const Value& value) {
  return value.kind == ValueKind::kParameter && IsFloating(value.dtype) && value.trainable &&
         !value.frozen;
}

struct TrainableSelection {
  // Only the trainable parameters whose name matches train; the others are frozen. nullopt = all.
  std::optional<std::string> train;
  // Trainable parameters whose name matches are frozen (applied after `train`). nullopt = none.
  std::optional<std::string> freeze;
};

// Marks the parameters `selection` freezes (Value::frozen). Errors (one line naming the flag): a
// pattern that is not a valid ECMAScript regex, a pattern that matches no trainable parameter,
// and (with `require_trained`) a selection that leaves nothing to train.
Status ApplyTrainableSelection(Graph& graph, const TrainableSelection& selection,
                               bool require_trained = true);

// Elements of the parameters training updates (IsTrainedParameter), with `bindings`-free shapes:
// REQUIRES parameter shapes to be constant (initializers always are).
int64_t TrainedParameterCount(const Graph& graph);

// Elements of the model's trainable parameters, frozen or not (model.parameter_count): what a
// checkpoint of the model holds. Parameters with a symbolic shape are not counted.
int64_t ModelParameterCount(const Graph& graph);

}  // namespace memplan
