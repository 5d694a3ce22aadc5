// SyntheticConstantValues: the one data-less constant the runtime fills in by convention.

#include <catch2/catch.hpp>

#include "runtime/weight_init.h"

namespace memplan {
namespace {

TEST_CASE("a data-less square bool buffer is a causal mask", "[weights]") {
  Value mask;
  mask.name = "h.0.attn.bias";
  mask.dtype = DType::kBool;
  // [1, 1, 3, 3]: torch.tril(torch.ones(3, 3)) row by row.
  auto values = SyntheticConstantValues(mask, TensorShape{1, 1, 3, 3});
  REQUIRE(values.ok());
  CHECK(*values == std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1});
  // Leading dims repeat the same mask: [2, 2, 2] is tril(ones(2, 2)) twice.
  auto stacked = SyntheticConstantValues(mask, TensorShape{2, 2, 2});
  REQUIRE(stacked.ok());
  CHECK(*stacked == std::vector<float>{1, 0, 1, 1, 1, 0, 1, 1});
}

TEST_CASE("other data-less constants are an error naming them", "[weights]") {
  Value table;
  table.name = "position_ids";
  table.dtype = DType::kInt64;
  auto ints = SyntheticConstantValues(table, TensorShape{4, 4});
  REQUIRE_FALSE(ints.ok());
  CHECK(ints.error().message.find("position_ids") != std::string::npos);
  Value flat;
  flat.name = "flags";
  flat.dtype = DType::kBool;
  CHECK_FALSE(SyntheticConstantValues(flat, TensorShape{4}).ok());     // rank 1
  CHECK_FALSE(SyntheticConstantValues(flat, TensorShape{2, 3}).ok());  // not square
}

}  // namespace
}  // namespace memplan
