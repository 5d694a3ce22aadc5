#pragma once
// A dimension that is an integer or a polynomial in symbols: `768`, `batch`, `batch*seq`,
// `seq + 1`. Exported models compute Reshape targets from Shape sub-graphs, so products and
// sums of symbols occur; a polynomial with integer coefficients covers them and stays exact.
// Byte sizes are Dims too, so the analyzer evaluates them per micro-batch without re-deriving.
//
// Arithmetic is checked: an overflowing coefficient poisons the Dim (overflowed() is true) and
// Evaluate() reports it, so a malicious shape is an error, never undefined behaviour.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/expected.h"
#include "graph/ids.h"
#include "graph/symbols.h"

namespace memplan {

class Dim {
 public:
  // One term: coefficient * product of symbols (sorted, repeated for powers).
  struct Term {
    std::vector<SymbolId> symbols;
    int64_t coefficient = 0;
    friend bool operator==(const Term&, const Term&) = default;
  };

  Dim() = default;        // the constant 0
  Dim(int64_t constant);  // NOLINT(google-explicit-constructor): dims are integers most of the time
  static Dim Symbol(SymbolId id);

  bool is_constant() const;
  std::optional<int64_t> constant_value() const;  // nullopt when symbolic or overflowed
  bool overflowed() const { return overflowed_; }
  bool IsSingleSymbol() const;  // exactly `1 * s`
  std::optional<SymbolId> single_symbol() const;
  const std::vector<Term>& terms() const { return terms_; }
  // Highest power of `id` in any term (0 when the Dim does not depend on it).
  int DegreeIn(SymbolId id) const;

  friend Dim operator+(const Dim& a, const Dim& b);
  friend Dim operator-(const Dim& a, const Dim& b);
  friend Dim operator*(const Dim& a, const Dim& b);
  Dim& operator+=(const Dim& o) { return *this = *this + o; }
  Dim& operator*=(const Dim& o) { return *this = *this * o; }
  friend bool operator==(const Dim& a, const Dim& b) = default;

  // this / divisor when the division is exact in the polynomial ring (e.g. batch*seq*768 / 768 =
  // batch*seq); nullopt otherwise (the caller then introduces a fresh symbol).
  std::optional<Dim> DivideExactly(const Dim& divisor) const;
  // Integer floor division by a positive constant when this is a constant.
  std::optional<Dim> FloorDivide(int64_t divisor) const;

  // The value under `bindings`; errors name an unbound symbol or an overflow.
  Expected<int64_t> Evaluate(const Bindings& bindings) const;
  std::string ToString(const SymbolTable& symbols) const;

 private:
  void Normalize();
  std::vector<Term> terms_;  // sorted by symbols, no zero coefficients
  bool overflowed_ = false;
};

// A tensor shape; `known == false` means even the rank is unknown.
struct Shape {
  std::vector<Dim> dims;
  bool known = true;

  static Shape Unknown() { return Shape{{}, false}; }
  size_t rank() const { return dims.size(); }
  Dim NumElements() const;  // product of dims (1 for a scalar)
  bool IsFullyConstant() const;
  std::string ToString(const SymbolTable& symbols) const;  // "[batch, seq, 768]"
  friend bool operator==(const Shape&, const Shape&) = default;
};

}  // namespace memplan
