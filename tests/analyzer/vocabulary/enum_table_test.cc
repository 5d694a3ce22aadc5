#include "analyzer/vocabulary/enum_table.h"

#include <string_view>

#include <catch2/catch.hpp>

namespace memplan {
namespace {

// A vocabulary of this test's own whose X carries a column after the name, as
// analyzer/config_export/export_target.h's does (each target's file name).
#define MEMPLAN_TEST_SHAPES(X) \
  X(kTriangle, "triangle", 3)  \
  X(kSquare, "square", 4)      \
  X(kPentagon, "pentagon", 5)
MEMPLAN_NAMED_ENUM(TestShape, MEMPLAN_TEST_SHAPES);
constexpr auto kTestShapeCorners = MEMPLAN_ENUM_COLUMN(TestShape, MEMPLAN_TEST_SHAPES, int);

constexpr EnumTable<TestShape, std::string_view, 3> kTestShapeGreek = {{
    {TestShape::kTriangle, "trigon"},
    {TestShape::kSquare, "tetragon"},
    {TestShape::kPentagon, "pentagon"},
}};
constexpr EnumTable<TestShape, std::string_view, 2> kTestShapeSome = {{
    {TestShape::kTriangle, "trigon"},
    {TestShape::kSquare, "tetragon"},
}};
constexpr EnumTable<TestShape, std::string_view, 3> kTestShapeOutOfOrder = {{
    {TestShape::kSquare, "tetragon"},
    {TestShape::kTriangle, "trigon"},
    {TestShape::kPentagon, "pentagon"},
}};

TEST_CASE("ListsEvery accepts a table with every enumerator in the name table's order",
          "[vocabulary]") {
  static_assert(ListsEvery(kTestShapeGreek, kTestShapeNames));
  static_assert(ListsEvery(kTestShapeCorners, kTestShapeNames));
  static_assert(!ListsEvery(kTestShapeSome, kTestShapeNames));
  static_assert(!ListsEvery(kTestShapeOutOfOrder, kTestShapeNames));
  // The extra column leaves the enum and its names as a two-column list makes them.
  CHECK(TestShapeName(TestShape::kSquare) == "square");
}

TEST_CASE("ValueOf and ValueOr read a table", "[vocabulary]") {
  CHECK(ValueOf(kTestShapeGreek, TestShape::kSquare) == "tetragon");
  CHECK(ValueOf(kTestShapeCorners, TestShape::kPentagon) == 5);
  CHECK(ValueOr(kTestShapeSome, TestShape::kTriangle, std::string_view("?")) == "trigon");
  CHECK(ValueOr(kTestShapeSome, TestShape::kPentagon, std::string_view("?")) == "?");
}

}  // namespace
}  // namespace memplan
