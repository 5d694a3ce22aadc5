#pragma once
// Dense integer ids: outside graph/ everything names nodes and values by these, never by BGL
// descriptors or strings (names appear only at import and in reports).

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace memplan {

template <class Tag>
struct StrongId {
  int32_t value = -1;

  constexpr StrongId() = default;
  constexpr explicit StrongId(int32_t v) : value(v) {}
  constexpr explicit StrongId(size_t v) : value(static_cast<int32_t>(v)) {}

  constexpr bool valid() const { return value >= 0; }
  constexpr size_t index() const { return static_cast<size_t>(value); }
  friend constexpr auto operator<=>(StrongId, StrongId) = default;
};

using NodeId = StrongId<struct NodeIdTag>;
using ValueId = StrongId<struct ValueIdTag>;
using SymbolId = int32_t;  // index into SymbolTable

}  // namespace memplan

template <class Tag>
struct std::hash<memplan::StrongId<Tag>> {
  size_t operator()(memplan::StrongId<Tag> id) const noexcept {
    return std::hash<int32_t>{}(id.value);
  }
};
