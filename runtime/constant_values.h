#pragma once
// Graph constants as device tensors: initializer contents the importer kept, Constant /
// ConstantOfShape / Range nodes, and nodes computed only from constants (folded once with the
// op's own kernel). Constants are not program buffers: the simulator gives them no memory and
// the backend does not count them (Backend::Constant).
//
// Why Constant, ConstantOfShape and Range are evaluated here rather than by a registered kernel:
// their outputs are host-side facts (an attribute's tensor, a shape read from another constant,
// an arithmetic sequence) needed before any program step runs, on every backend alike; a
// backend kernel would only copy host values to the device, which Backend::Constant already does.
// A Range whose inputs are computed during the step is a program step instead, run by the CPU
// kernel (runtime/cpu/kernels/range.cc); both build the sequence with RangeSequence.

#include <map>
#include <optional>
#include <vector>

#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"
#include "runtime/backend.h"

namespace memplan {

class ConstantValues {
 public:
  // REQUIRES: graph and backend outlive this.
  ConstantValues(const Graph& graph, const Bindings& bindings, Backend& backend)
      : g_(graph), bindings_(bindings), backend_(backend) {}

  // The value of constant `u`, materialised on first use and cached. Errors: a constant whose
  // value the importer did not keep, a Range with delta 0 or non-scalar inputs.
  Expected<DeviceTensor> Get(ValueId u);
  void Clear() { constants_.clear(); }

 private:
  Expected<DeviceTensor> Fold(const Node& node, ValueId u);
  Expected<std::vector<float>> RangeValues(const Node& node);
  static Status ConstantNodeValues(const Node& node, std::vector<float>& values,
                                   std::optional<TensorShape>& shape);

  const Graph& g_;
  Bindings bindings_;
  Backend& backend_;
  std::map<size_t, DeviceTensor> constants_;  // by value index
};

}  // namespace memplan
