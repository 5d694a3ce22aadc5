#pragma once
// Named symbolic dimensions (`batch`, `seq`, generated `unk_3`) and their later bindings
// (`--batch 32`, `--dim seq=512`).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/expected.h"
#include "graph/ids.h"

namespace memplan {

class SymbolTable {
 public:
  // Returns the id of `name`, adding it when new.
  SymbolId Intern(std::string_view name);
  std::optional<SymbolId> Find(std::string_view name) const;
  // A new symbol for an unnamed/unknown dim: "<prefix>_<n>", unique in this table.
  SymbolId Fresh(std::string_view prefix = "unk");
  const std::string& Name(SymbolId id) const { return names_.at(static_cast<size_t>(id)); }
  size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, SymbolId> ids_;
  int64_t fresh_counter_ = 0;
};

// Values for symbols, indexed by SymbolId. Unbound symbols make evaluation fail with a message
// naming the symbol and the flag that binds it.
class Bindings {
 public:
  Bindings() = default;
  explicit Bindings(const SymbolTable* symbols) : symbols_(symbols) {}

  void Bind(SymbolId id, int64_t value);
  std::optional<int64_t> Get(SymbolId id) const;
  const SymbolTable* symbols() const { return symbols_; }

 private:
  const SymbolTable* symbols_ = nullptr;
  std::vector<std::optional<int64_t>> values_;
};

// Parses a `--dim name=value` flag ("seq=512"); value must be a positive integer.
struct DimBinding {
  std::string name;
  int64_t value = 0;
};
Expected<DimBinding> ParseDimBinding(std::string_view text);
// Parses a positive integer flag value such as `--batch 32`, naming `flag` in the error.
Expected<int64_t> ParsePositiveInt(std::string_view text, std::string_view flag);

}  // namespace memplan
