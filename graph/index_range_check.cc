#include "graph/index_range_check.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <unordered_set>

#include "graph/checked_math.h"

namespace memplan {
namespace {

// Ops that pass their input 0's values through unchanged (reshaped or converted): the indices a
// Gather reads are still the Range's.
bool KeepsValues(const Node& node) {
  static const std::unordered_set<std::string> kPassThrough = {
      "Unsqueeze", "Squeeze", "Reshape", "Flatten", "Expand", "Cast", "Identity"};
  return node.domain.empty() && kPassThrough.contains(node.op_type);
}

// The Range node whose output `indices` is, through value-keeping ops; nullptr otherwise.
const Node* RangeBehind(const Graph& graph, ValueId indices) {
  for (int hops = 0; hops < 16 && indices.valid(); ++hops) {
    const Value& value = graph.value(indices);
    if (!value.producer.valid()) return nullptr;
    const Node& node = graph.node(value.producer);
    if (node.domain.empty() && node.op_type == "Range" && node.inputs.size() >= 3) return &node;
    if (!KeepsValues(node) || node.inputs.empty()) return nullptr;
    indices = node.inputs[0];
  }
  return nullptr;
}

// A Range input as one Dim (a scalar whose value folding knows).
std::optional<Dim> ScalarOf(const Graph& graph, ValueId id) {
  if (!id.valid()) return std::nullopt;
  const Value& value = graph.value(id);
  if (!value.contents || value.contents->size() != 1) return std::nullopt;
  return value.contents->front();
}

struct RangeBounds {
  Dim start, limit, delta;
};

// The lowest and highest index the Range yields under `bindings`; nullopt when a bound is
// unknown or the range is empty.
std::optional<std::pair<int64_t, int64_t>> IndexSpan(const RangeBounds& r,
                                                     const Bindings& bindings) {
  auto s = r.start.Evaluate(bindings), l = r.limit.Evaluate(bindings),
       d = r.delta.Evaluate(bindings);
  if (!s.ok() || !l.ok() || !d.ok() || *d == 0) return std::nullopt;
  auto span = CheckedSub(*l, *s);
  if (!span || (*d == -1 && *span == std::numeric_limits<int64_t>::min())) return std::nullopt;
  int64_t n = *span / *d;  // ceil((limit - start) / delta), as ONNX's Range
  if (*span % *d != 0 && ((*span < 0) == (*d < 0))) ++n;
  if (n <= 0) return std::nullopt;
  auto last = CheckedMul(n - 1, *d);
  if (!last) return std::nullopt;
  auto end = CheckedAdd(*s, *last);
  if (!end) return std::nullopt;
  return std::pair{std::min(*s, *end), std::max(*s, *end)};
}

bool Inside(const std::pair<int64_t, int64_t>& span, int64_t rows) {
  return span.first >= -rows && span.second < rows;
}

// The one symbol the bounds depend on; nullopt when none or several.
std::optional<SymbolId> OnlySymbol(const RangeBounds& r) {
  std::set<SymbolId> symbols;
  for (const Dim* d : {&r.start, &r.limit, &r.delta})
    for (const Dim::Term& t : d->terms()) symbols.insert(t.symbols.begin(), t.symbols.end());
  if (symbols.size() != 1) return std::nullopt;
  return *symbols.begin();
}

// The largest value of `symbol` (below its bound value) for which the range stays inside the
// table: a binary search, since the rows read grow with the symbol for the ranges exporters
// write (arange(seq), arange(past, past + seq)). 0 when even 1 does not fit.
int64_t LargestInside(const RangeBounds& r, const Bindings& bindings, SymbolId symbol,
                      int64_t bound, int64_t rows) {
  Bindings trial = bindings;
  auto fits = [&](int64_t v) {
    trial.Bind(symbol, v);
    auto span = IndexSpan(r, trial);
    return !span || Inside(*span, rows);
  };
  int64_t lo = 0, hi = bound;  // fits(lo) assumed (lo = 0: none), !fits(hi) known
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (mid >= 1 && fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

std::vector<std::string> IndexRangeWarnings(const Graph& graph, const Bindings& bindings) {
  std::vector<std::string> warnings;
  for (const Node& node : graph.nodes()) {
    if (!node.domain.empty() || node.op_type != "Gather" || node.inputs.size() < 2 ||
        !node.inputs[0].valid())
      continue;
    const Value& table = graph.value(node.inputs[0]);
    if (!table.shape.known || table.shape.rank() == 0) continue;
    int64_t axis = node.attributes.GetInt("axis", 0);
    const auto rank = static_cast<int64_t>(table.shape.rank());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) continue;
    auto rows = table.shape.dims[static_cast<size_t>(axis)].Evaluate(bindings);
    if (!rows.ok()) continue;
    const Node* range = RangeBehind(graph, node.inputs[1]);
    if (range == nullptr) continue;
    auto start = ScalarOf(graph, range->inputs[0]), limit = ScalarOf(graph, range->inputs[1]),
         delta = ScalarOf(graph, range->inputs[2]);
    if (!start || !limit || !delta) continue;
    const RangeBounds bounds{*start, *limit, *delta};
    auto span = IndexSpan(bounds, bindings);
    if (!span || Inside(*span, *rows)) continue;
    const int64_t beyond = span->second >= *rows ? span->second : span->first;
    std::string warning = "node '" + node.name + "' (Gather) reads row " + std::to_string(beyond) +
                          " of '" + table.name + "', which has " + std::to_string(*rows) + " rows";
    if (auto symbol = OnlySymbol(bounds); symbol && bindings.Get(*symbol)) {
      const std::string name = graph.symbols().Name(*symbol);
      const int64_t value = *bindings.Get(*symbol);
      warning += ", at " + name + " = " + std::to_string(value) +
                 ": PyTorch raises an index error there; ";
      const int64_t largest = LargestInside(bounds, bindings, *symbol, value, *rows);
      warning += largest >= 1
                     ? "the largest " + name + " this table serves is " + std::to_string(largest)
                     : "no " + name + " stays inside this table";
    } else {
      warning += ": PyTorch raises an index error there";
    }
    warnings.push_back(std::move(warning));
  }
  return warnings;
}

}  // namespace memplan
