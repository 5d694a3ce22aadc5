#include <catch2/catch.hpp>

#include "graph/bind_symbols.h"

namespace memplan {
namespace {

// x: [batch, seq, 16] with `batch` the batch symbol; `seq` another symbol.
Graph MakeGraph() {
  Graph g;
  SymbolId batch = g.symbols().Intern("batch");
  SymbolId seq = g.symbols().Intern("seq");
  Value x;
  x.name = "x";
  x.dtype = DType::kFloat32;
  x.shape = Shape{{Dim::Symbol(batch), Dim::Symbol(seq), 16}};
  g.MarkInput(g.AddValue(std::move(x)));
  g.set_batch_symbol(batch);
  return g;
}

TEST_CASE("BindSymbols binds --batch to the batch symbol and --dim by name", "[symbols]") {
  Graph g = MakeGraph();
  auto bindings = BindSymbols(g, 32, {{"seq", 512}});
  REQUIRE(bindings.ok());
  CHECK(bindings->Get(*g.symbols().Find("batch")) == 32);
  CHECK(bindings->Get(*g.symbols().Find("seq")) == 512);
  // [batch, seq, 16] = 32 * 512 * 16 = 262144 elements.
  CHECK(g.value(g.inputs()[0]).shape.NumElements().Evaluate(*bindings).value() == 262144);
}

TEST_CASE("BindSymbols leaves unbound symbols unbound", "[symbols]") {
  Graph g = MakeGraph();
  auto bindings = BindSymbols(g, std::nullopt, {{"seq", 128}});
  REQUIRE(bindings.ok());
  CHECK_FALSE(bindings->Get(*g.symbols().Find("batch")).has_value());
  auto elements = g.value(g.inputs()[0]).shape.NumElements().Evaluate(*bindings);
  REQUIRE_FALSE(elements.ok());
  CHECK(elements.error().message.find("'batch' is not bound") != std::string::npos);
  // --dim may bind the batch symbol by name too.
  auto by_name = BindSymbols(g, std::nullopt, {{"batch", 8}});
  REQUIRE(by_name.ok());
  CHECK(by_name->Get(*g.symbols().Find("batch")) == 8);
}

TEST_CASE("BindSymbols rejects unknown names and double bindings", "[symbols]") {
  Graph g = MakeGraph();
  auto unknown = BindSymbols(g, std::nullopt, {{"sequence", 512}});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message ==
        "--dim sequence=512: the model has no dimension named 'sequence'; its symbolic "
        "dimensions are: batch, seq");

  auto twice = BindSymbols(g, std::nullopt, {{"seq", 512}, {"seq", 256}});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message ==
        "dimension 'seq' is bound twice (--dim seq=512 and --dim seq=256)");

  auto batch_twice = BindSymbols(g, 32, {{"batch", 16}});
  REQUIRE_FALSE(batch_twice.ok());
  CHECK(batch_twice.error().message ==
        "dimension 'batch' is bound twice (--batch 32 and --dim batch=16)");
}

TEST_CASE("BindSymbols: --batch needs a symbolic batch, --dim needs symbols", "[symbols]") {
  Graph fixed;  // x: [1, 3] with no symbols at all
  Value x;
  x.name = "x";
  x.dtype = DType::kFloat32;
  x.shape = Shape{{1, 3}};
  fixed.MarkInput(fixed.AddValue(std::move(x)));

  auto batch = BindSymbols(fixed, 4, {});
  REQUIRE_FALSE(batch.ok());
  CHECK(batch.error().message.find("--batch: the model has no symbolic batch dimension") == 0);

  auto dim = BindSymbols(fixed, std::nullopt, {{"seq", 4}});
  REQUIRE_FALSE(dim.ok());
  CHECK(dim.error().message.find("its symbolic dimensions are: none") != std::string::npos);

  CHECK(BindSymbols(fixed, std::nullopt, {}).ok());
}

TEST_CASE("malformed --dim/--batch values are rejected by the flag parsers", "[symbols]") {
  // BindSymbols only ever sees validated values; these are the parsers the CLI uses first.
  CHECK_FALSE(ParseDimBinding("seq").ok());
  CHECK_FALSE(ParseDimBinding("=5").ok());
  CHECK_FALSE(ParseDimBinding("seq=0").ok());
  CHECK_FALSE(ParseDimBinding("seq=-3").ok());
  CHECK_FALSE(ParseDimBinding("seq=12x").ok());
  CHECK_FALSE(ParsePositiveInt("0", "--batch").ok());
  CHECK_FALSE(ParsePositiveInt("abc", "--batch").ok());
  CHECK(ParseDimBinding("seq=512")->value == 512);
}

}  // namespace
}  // namespace memplan
