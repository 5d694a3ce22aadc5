#pragma once
// Derivation pass 4, step emission: the one place that writes the program's steps and buffers.
// It reads the analysis passes' values (gradient flow, dtypes, recompute set, the resolved loss)
// and emits, in order: setup (parameters, loss scaler), the micro-batch body (load, forward in
// topological order, loss, loss backward, backward in reverse with recompute steps and gradient
// accumulation), then the optimizer phase (unscale, clip, optimizer, zero). Every rule a backend
// must apply is written here as a step or a guarded event, never left to the interpreter.
// Frees by liveness come after (liveness.h).

#include <vector>

#include "analyzer/derivation/gradient_flow.h"
#include "analyzer/derivation/program_builder.h"
#include "analyzer/derivation/program_derivation.h"
#include "analyzer/derivation/program_dtypes.h"
#include "analyzer/derivation/recompute_set.h"
#include "analyzer/derivation/view_aliasing.h"
#include "analyzer/program/loss_spec.h"
#include "graph/expected.h"

namespace memplan {

class OpRegistry;

// One term of the loss: the value it reads, the loss resolved against it, the dtype it computes
// in (analyzer/precision/loss_precision.h).
struct AnalyzedLoss {
  ValueId output;
  LossSpec spec;
  DType compute = DType::kUndefined;
};

// What the analysis passes decided, for emission to read.
struct DerivationAnalysis {
  std::vector<NodeId> order;         // topological
  std::vector<AnalyzedLoss> losses;  // one per term, in the order the terms are summed
  LossScaling loss_scaling;          // resolved: none in fp32
  AmpRegime regime;                  // what the precision and AMP mode imply
  GradientFlow gradients;
  ProgramDTypes dtypes;
  RecomputeSet recompute;
  ViewAliasing views;
  // --compile (compiled_partition.h): per node, whether it saves OpSchema::saved_when_compiled
  // instead of its eager tensors. Empty without --compile.
  std::vector<bool> saves_compiled;
};

struct EmittedProgram {
  TrainingProgram program;      // steps and buffers, without liveness frees
  std::vector<BufferUse> uses;  // per buffer, for the liveness pass
};

// Errors: a graph input or node output of unknown shape, a node reading a value nothing earlier
// produces.
Expected<EmittedProgram> EmitSteps(const Graph& graph, const ProgramOptions& options,
                                   const OpRegistry& registry, const DerivationAnalysis& analysis);

}  // namespace memplan
