#include "graph/dim.h"

#include <algorithm>

#include "graph/checked_math.h"

namespace memplan {
namespace {

// Multiset difference: removes `part` from `whole` (both sorted); nullopt if not contained.
std::optional<std::vector<SymbolId>> RemoveSymbols(const std::vector<SymbolId>& whole,
                                                   const std::vector<SymbolId>& part) {
  std::vector<SymbolId> rest;
  size_t j = 0;
  for (SymbolId s : whole) {
    if (j < part.size() && part[j] == s) {
      ++j;
    } else {
      rest.push_back(s);
    }
  }
  if (j != part.size()) return std::nullopt;
  return rest;
}

}  // namespace

Dim::Dim(int64_t constant) {
  if (constant != 0) terms_.push_back(Term{{}, constant});
}

Dim Dim::Symbol(SymbolId id) {
  Dim d;
  d.terms_.push_back(Term{{id}, 1});
  return d;
}

// Sorts each term's symbols, merges terms of equal symbols (their coefficients summed in the
// order the terms come, an overflowing sum poisoning the Dim and restarting at 0) and drops zero
// coefficients; the terms end sorted by their symbols. A stable sort and one merging pass: every
// arithmetic operation on a Dim ends here, so it allocates nothing beyond the result.
void Dim::Normalize() {
  for (auto& t : terms_) std::sort(t.symbols.begin(), t.symbols.end());
  std::stable_sort(terms_.begin(), terms_.end(),
                   [](const Term& a, const Term& b) { return a.symbols < b.symbols; });
  size_t kept = 0;  // terms_[0, kept) are merged
  for (size_t i = 0; i < terms_.size(); ++i) {
    if (kept > 0 && terms_[kept - 1].symbols == terms_[i].symbols) {
      auto sum = CheckedAdd(terms_[kept - 1].coefficient, terms_[i].coefficient);
      if (!sum) {
        overflowed_ = true;
        sum = 0;
      }
      terms_[kept - 1].coefficient = *sum;
      continue;
    }
    if (kept != i) terms_[kept] = std::move(terms_[i]);
    ++kept;
  }
  terms_.resize(kept);
  std::erase_if(terms_, [](const Term& t) { return t.coefficient == 0; });
}

bool Dim::is_constant() const {
  return !overflowed_ && (terms_.empty() || (terms_.size() == 1 && terms_[0].symbols.empty()));
}

std::optional<int64_t> Dim::constant_value() const {
  if (!is_constant()) return std::nullopt;
  return terms_.empty() ? 0 : terms_[0].coefficient;
}

bool Dim::IsSingleSymbol() const { return single_symbol().has_value(); }

std::optional<SymbolId> Dim::single_symbol() const {
  if (overflowed_ || terms_.size() != 1 || terms_[0].coefficient != 1 ||
      terms_[0].symbols.size() != 1)
    return std::nullopt;
  return terms_[0].symbols[0];
}

int Dim::DegreeIn(SymbolId id) const {
  int degree = 0;
  for (const auto& t : terms_)
    degree = std::max(degree, static_cast<int>(std::count(t.symbols.begin(), t.symbols.end(), id)));
  return degree;
}

Dim operator+(const Dim& a, const Dim& b) {
  Dim r;
  r.terms_ = a.terms_;
  r.terms_.insert(r.terms_.end(), b.terms_.begin(), b.terms_.end());
  r.overflowed_ = a.overflowed_ || b.overflowed_;
  r.Normalize();
  return r;
}

Dim operator-(const Dim& a, const Dim& b) {
  Dim negated = b;
  for (auto& t : negated.terms_) {
    auto n = CheckedSub(0, t.coefficient);
    if (!n) negated.overflowed_ = true;
    t.coefficient = n.value_or(0);
  }
  return a + negated;
}

Dim operator*(const Dim& a, const Dim& b) {
  Dim r;
  r.overflowed_ = a.overflowed_ || b.overflowed_;
  // A nonzero constant factor (most dims are one; NumElements starts from 1) scales the other's
  // terms, which stay sorted and distinct: of the general product's Normalize only the dropping
  // of the terms whose product overflowed (to a zero coefficient) is left to do. The products
  // are formed in the same order (a's coefficient times b's) as below.
  const bool a_constant = a.terms_.size() == 1 && a.terms_[0].symbols.empty();
  const bool b_constant = b.terms_.size() == 1 && b.terms_[0].symbols.empty();
  if (a_constant || b_constant) {
    const Dim& scaled = a_constant ? b : a;
    const int64_t factor = a_constant ? a.terms_[0].coefficient : b.terms_[0].coefficient;
    r.terms_.reserve(scaled.terms_.size());
    for (const auto& t : scaled.terms_) {
      auto c = a_constant ? CheckedMul(factor, t.coefficient) : CheckedMul(t.coefficient, factor);
      if (!c) r.overflowed_ = true;
      if (c.value_or(0) == 0) continue;
      r.terms_.push_back(Dim::Term{t.symbols, *c});
    }
    return r;
  }
  for (const auto& x : a.terms_) {
    for (const auto& y : b.terms_) {
      Dim::Term t;
      t.symbols = x.symbols;
      t.symbols.insert(t.symbols.end(), y.symbols.begin(), y.symbols.end());
      auto c = CheckedMul(x.coefficient, y.coefficient);
      if (!c) r.overflowed_ = true;
      t.coefficient = c.value_or(0);
      r.terms_.push_back(std::move(t));
    }
  }
  r.Normalize();
  return r;
}

std::optional<Dim> Dim::DivideExactly(const Dim& divisor) const {
  if (overflowed_ || divisor.overflowed_ || divisor.terms_.empty()) return std::nullopt;
  if (*this == divisor) return Dim(1);
  if (divisor.terms_.size() == 1) {
    // Divide every term by the single-term divisor c*m.
    const Term& d = divisor.terms_[0];
    Dim r;
    for (const auto& t : terms_) {
      auto quotient = CheckedDivideExactly(t.coefficient, d.coefficient);
      if (!quotient) return std::nullopt;
      auto rest = RemoveSymbols(t.symbols, d.symbols);
      if (!rest) return std::nullopt;
      r.terms_.push_back(Term{*rest, *quotient});
    }
    r.Normalize();
    return r;
  }
  // Multi-term divisor: accept only this == q * divisor for a single-term q (e.g. 2*(seq+1)).
  if (terms_.empty()) return Dim(0);
  const Term& lead = terms_[0];
  const Term& dlead = divisor.terms_[0];
  auto quotient = CheckedDivideExactly(lead.coefficient, dlead.coefficient);
  if (!quotient) return std::nullopt;
  auto rest = RemoveSymbols(lead.symbols, dlead.symbols);
  if (!rest) return std::nullopt;
  Dim q;
  q.terms_.push_back(Term{*rest, *quotient});
  if (q * divisor == *this) return q;
  return std::nullopt;
}

std::optional<Dim> Dim::FloorDivide(int64_t divisor) const {
  auto c = constant_value();
  if (!c || divisor <= 0) return std::nullopt;
  return Dim(*c / divisor);
}

Expected<int64_t> Dim::Evaluate(const Bindings& bindings) const {
  if (overflowed_) return MakeError("shape arithmetic overflows 64 bits");
  int64_t total = 0;
  for (const auto& t : terms_) {
    int64_t product = t.coefficient;
    for (SymbolId s : t.symbols) {
      auto v = bindings.Get(s);
      if (!v) {
        std::string name = bindings.symbols() ? bindings.symbols()->Name(s) : std::to_string(s);
        return MakeError("dimension '" + name + "' is not bound; pass --dim " + name + "=N");
      }
      auto p = CheckedMul(product, *v);
      if (!p) return MakeError("shape arithmetic overflows 64 bits");
      product = *p;
    }
    auto sum = CheckedAdd(total, product);
    if (!sum) return MakeError("shape arithmetic overflows 64 bits");
    total = *sum;
  }
  return total;
}

std::string Dim::ToString(const SymbolTable& symbols) const {
  if (overflowed_) return "<overflow>";
  if (terms_.empty()) return "0";
  std::string out;
  // Print higher-degree terms first so `seq + 1` reads naturally.
  std::vector<Term> ordered = terms_;
  std::stable_sort(ordered.begin(), ordered.end(), [](const Term& a, const Term& b) {
    return a.symbols.size() > b.symbols.size();
  });
  for (size_t i = 0; i < ordered.size(); ++i) {
    const Term& t = ordered[i];
    const int64_t c = t.coefficient;
    // After the first term the sign is the operator; the magnitude is the number's text without
    // its '-' (negating INT64_MIN itself would overflow).
    std::string number = std::to_string(c);
    if (i > 0) {
      out += c < 0 ? " - " : " + ";
      if (c < 0) number.erase(0, 1);
    }
    std::string body;
    for (SymbolId s : t.symbols) body += (body.empty() ? "" : "*") + symbols.Name(s);
    if (body.empty()) {
      out += number;
    } else if (number == "1") {
      out += body;
    } else if (number == "-1") {
      out += "-" + body;
    } else {
      out += number + "*" + body;
    }
  }
  return out;
}

Dim Shape::NumElements() const {
  Dim n(1);
  for (const Dim& d : dims) n = n * d;
  return n;
}

bool Shape::IsFullyConstant() const {
  if (!known) return false;
  for (const Dim& d : dims)
    if (!d.is_constant()) return false;
  return true;
}

std::string Shape::ToString(const SymbolTable& symbols) const {
  if (!known) return "[?]";
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + dims[i].ToString(symbols);
  return out + "]";
}

}  // namespace memplan
