#pragma once
// Turns the command line's `--batch N` and `--dim name=value` flags into Bindings for a graph.
// Symbols the flags leave unbound stay unbound: whoever evaluates a Dim reports the missing one
// (Dim::Evaluate names it and the flag that binds it), and the planner binds the batch itself.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

// Binds `batch` to graph.batch_symbol() and each `--dim` to the symbol of that name.
// Errors (bad input, exit 2 at the CLI):
//  * a --dim naming a symbol the model does not have (the message lists the symbols it has);
//  * a symbol bound twice (two --dim for one name, or --batch and --dim <batch symbol>=N);
//  * --batch for a model without a symbolic batch dimension (its first input's first dim is a
//    constant), since the batch cannot be varied.
//  * a value the graph's shapes cannot take: the graph is propagated again with the bound values
//    (graph/bound_shape_check.h), and a rule's error names the node and the flag;
// Values are already validated as positive by ParsePositiveInt / ParseDimBinding.
Expected<Bindings> BindSymbols(const Graph& graph, std::optional<int64_t> batch,
                               const std::vector<DimBinding>& dims);

// "batch, seq" (in SymbolTable order), or "none" when the model has no symbols.
std::string ListSymbols(const SymbolTable& symbols);

}  // namespace memplan
