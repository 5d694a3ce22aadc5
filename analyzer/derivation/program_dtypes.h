#pragma once
// Derivation pass 2, precision: the dtype every node computes in and every activation is stored
// in, plus the loss's. The node and value dtypes come from PropagateDTypes
// (analyzer/precision/dtype_propagation.h), the function PlacePrecision runs, with
// ProgramOptions::node_dtype as overrides: a program given a placement runs exactly that
// placement, and one given none runs the AMP policy's.

#include <optional>
#include <vector>

#include "analyzer/precision/amp_regime.h"
#include "analyzer/program/training_program.h"
#include "graph/dtype.h"
#include "graph/graph.h"
#include "graph/ids.h"
#include "graph/ops/op_schema.h"

namespace memplan {

class OpRegistry;

struct ProgramDTypes {
  std::vector<DType> node_compute;  // per node: Step::compute_dtype (kUndefined: as the graph)
  std::vector<DType> value;         // per value: the activation's stored dtype (see
                                    // PropagatedDTypes::values)
  DType loss_compute = DType::kUndefined;  // the appended loss op's compute dtype
};

// REQUIRES: `order` is a topological order of `graph`; `loss_amp` is the loss op's registry
// category; `model_output` is the value the loss reads.
ProgramDTypes DeriveProgramDTypes(const Graph& graph, const OpRegistry& registry,
                                  const std::vector<NodeId>& order, const AmpRegime& regime,
                                  const std::vector<std::optional<DType>>& node_dtype,
                                  ValueId model_output, AmpCategory loss_amp);

}  // namespace memplan
