#include "graph/bind_symbols.h"

#include <string>

#include "graph/bound_shape_check.h"

namespace memplan {

std::string ListSymbols(const SymbolTable& symbols) {
  if (symbols.size() == 0) return "none";
  std::string out;
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (i > 0) out += ", ";
    out += symbols.Name(static_cast<SymbolId>(i));
  }
  return out;
}

Expected<Bindings> BindSymbols(const Graph& graph, std::optional<int64_t> batch,
                               const std::vector<DimBinding>& dims) {
  const SymbolTable& symbols = graph.symbols();
  Bindings bindings(&symbols);
  // Which flag bound each symbol, for the "bound twice" message.
  std::vector<std::string> bound_by(symbols.size());

  if (batch) {
    std::optional<SymbolId> batch_symbol = graph.batch_symbol();
    if (!batch_symbol) {
      return MakeError(
          "--batch: the model has no symbolic batch dimension (the first input's first dimension "
          "is fixed); re-export it with a dynamic batch axis, e.g. torch.onnx.export(..., "
          "dynamic_axes={'input': {0: 'batch'}})");
    }
    bindings.Bind(*batch_symbol, *batch);
    bound_by[static_cast<size_t>(*batch_symbol)] = "--batch " + std::to_string(*batch);
  }

  for (const DimBinding& dim : dims) {
    std::optional<SymbolId> id = symbols.Find(dim.name);
    if (!id) {
      return MakeError("--dim " + dim.name + "=" + std::to_string(dim.value) +
                       ": the model has no dimension named '" + dim.name +
                       "'; its symbolic dimensions are: " + ListSymbols(symbols));
    }
    std::string flag = "--dim " + dim.name + "=" + std::to_string(dim.value);
    std::string& previous = bound_by[static_cast<size_t>(*id)];
    if (!previous.empty()) {
      return MakeError("dimension '" + dim.name + "' is bound twice (" + previous + " and " + flag +
                       ")");
    }
    bindings.Bind(*id, dim.value);
    previous = flag;
  }
  // A binding the graph's shapes cannot take (x[batch, s] @ W[4, 4] with s = 128) is refused
  // here, before anything is planned with it (graph/bound_shape_check.h).
  std::string bound;
  for (const std::string& flag : bound_by)
    if (!flag.empty()) bound += (bound.empty() ? "" : ", ") + flag;
  MEMPLAN_RETURN_IF_ERROR(CheckShapesUnderBindings(graph, bindings, bound));
  // Symbols a rule introduced for a dim the bound axes determine (a strided conv's length).
  for (const auto& [symbol, value] : DeterminedSymbols(graph, bindings))
    bindings.Bind(symbol, value);
  return bindings;
}

}  // namespace memplan
