#include <catch2/catch.hpp>

#include <limits>

#include "graph/dim.h"

namespace memplan {
namespace {

TEST_CASE("Dim arithmetic keeps products of symbols exact", "[symbols]") {
  SymbolTable symbols;
  Dim batch = Dim::Symbol(symbols.Intern("batch"));
  Dim seq = Dim::Symbol(symbols.Intern("seq"));

  Dim flat = batch * seq * Dim(768);
  CHECK(flat.ToString(symbols) == "768*batch*seq");
  auto rows = flat.DivideExactly(Dim(768));
  REQUIRE(rows.has_value());
  CHECK(*rows == batch * seq);
  // [batch*seq*768] reshaped to [batch, seq, 12, -1]: -1 = 768*b*s / (b*s*12) = 64.
  auto head = flat.DivideExactly(batch * seq * Dim(12));
  REQUIRE(head.has_value());
  CHECK(head->constant_value() == 64);
  // Not divisible: 768*b*s / 5 has no integer-coefficient quotient.
  CHECK_FALSE(flat.DivideExactly(Dim(5)).has_value());
  // seq + 1 (a class token) divided by itself is 1; 2*(seq+1) / (seq+1) is 2.
  Dim tokens = seq + Dim(1);
  CHECK(tokens.ToString(symbols) == "seq + 1");
  CHECK((Dim(2) * tokens).DivideExactly(tokens)->constant_value() == 2);
}

TEST_CASE("Dim evaluation binds symbols and reports unbound ones", "[symbols]") {
  SymbolTable symbols;
  SymbolId b = symbols.Intern("batch");
  SymbolId s = symbols.Intern("seq");
  Dim bytes = Dim::Symbol(b) * Dim::Symbol(s) * Dim(768 * 4);
  Bindings bindings(&symbols);
  bindings.Bind(b, 8);
  auto unbound = bytes.Evaluate(bindings);
  REQUIRE_FALSE(unbound.ok());
  CHECK(unbound.error().message.find("seq") != std::string::npos);
  bindings.Bind(s, 512);
  // 8 * 512 * 768 * 4 = 12,582,912 bytes.
  CHECK(bytes.Evaluate(bindings).value() == 12582912);
}

TEST_CASE("Dim arithmetic detects 64-bit overflow instead of wrapping", "[symbols]") {
  Dim huge(int64_t{1} << 40);
  Dim product = huge * huge;  // 2^80 does not fit in int64
  CHECK(product.overflowed());
  Bindings none;
  CHECK_FALSE(product.Evaluate(none).ok());
  Shape shape{{huge, huge, Dim(4)}};
  CHECK(shape.NumElements().overflowed());
}

TEST_CASE("Dim division of INT64_MIN by -1 is no quotient, not SIGFPE (issue 45)",
          "[symbols][bad-input]") {
  SymbolTable symbols;
  Dim seq = Dim::Symbol(symbols.Intern("seq"));
  const int64_t min = std::numeric_limits<int64_t>::min();
  // -2^63 / -1 = 2^63, one more than int64 holds: before the fix the division trapped.
  CHECK_FALSE(Dim(min).DivideExactly(Dim(-1)).has_value());
  CHECK_FALSE((Dim(min) * seq).DivideExactly(Dim(-1)).has_value());
  CHECK_FALSE((Dim(min) * seq).DivideExactly(Dim(-1) * seq).has_value());
  // A multi-term divisor whose leading coefficient is -1: the lead quotient overflows the same way.
  CHECK_FALSE((Dim(min) * seq + Dim(min)).DivideExactly(Dim(-1) * seq + Dim(-1)).has_value());
  // Its neighbours still divide: (-2^63 + 1) / -1 = 2^63 - 1, -2^63 / 1 = -2^63.
  CHECK(Dim(min + 1).DivideExactly(Dim(-1))->constant_value() ==
        std::numeric_limits<int64_t>::max());
  CHECK(Dim(min).DivideExactly(Dim(1))->constant_value() == min);
  // Printing a negative coefficient after the first term negates nothing: "seq -
  // 9223372036854775808".
  CHECK((seq + Dim(min)).ToString(symbols) == "seq - 9223372036854775808");
}

TEST_CASE("Dim::DegreeIn tells how a size grows with the batch", "[symbols]") {
  SymbolTable symbols;
  SymbolId b = symbols.Intern("batch");
  Dim scores = Dim::Symbol(b) * Dim::Symbol(b);
  CHECK(scores.DegreeIn(b) == 2);
  CHECK(Dim(3).DegreeIn(b) == 0);
}

}  // namespace
}  // namespace memplan
