#include "graph/symbols.h"

#include <charconv>

namespace memplan {

SymbolId SymbolTable::Intern(std::string_view name) {
  if (auto it = ids_.find(std::string(name)); it != ids_.end()) return it->second;
  SymbolId id = static_cast<SymbolId>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

std::optional<SymbolId> SymbolTable::Find(std::string_view name) const {
  if (auto it = ids_.find(std::string(name)); it != ids_.end()) return it->second;
  return std::nullopt;
}

SymbolId SymbolTable::Fresh(std::string_view prefix) {
  for (;;) {
    std::string candidate = std::string(prefix) + "_" + std::to_string(fresh_counter_++);
    if (!Find(candidate)) return Intern(candidate);
  }
}

void Bindings::Bind(SymbolId id, int64_t value) {
  MEMPLAN_CHECK(id >= 0);
  if (values_.size() <= static_cast<size_t>(id)) values_.resize(static_cast<size_t>(id) + 1);
  values_[static_cast<size_t>(id)] = value;
}

std::optional<int64_t> Bindings::Get(SymbolId id) const {
  if (id < 0 || static_cast<size_t>(id) >= values_.size()) return std::nullopt;
  return values_[static_cast<size_t>(id)];
}

Expected<int64_t> ParsePositiveInt(std::string_view text, std::string_view flag) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value <= 0) {
    return MakeError(std::string(flag) + ": expected a positive integer, got '" +
                     std::string(text) + "'");
  }
  return value;
}

Expected<DimBinding> ParseDimBinding(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return MakeError("--dim: expected name=value (e.g. seq=512), got '" + std::string(text) + "'");
  }
  MEMPLAN_TRY(int64_t value,
              ParsePositiveInt(text.substr(eq + 1), "--dim " + std::string(text.substr(0, eq))));
  return DimBinding{std::string(text.substr(0, eq)), value};
}

}  // namespace memplan
