// Tolerance parsing and its edges: growth exactly at the tolerance passes, one byte more fails.

#include <catch2/catch.hpp>

#include "analyzer/baseline/check_report.h"
#include "analyzer/text/tolerance.h"
#include "tests/analyzer/baseline/baseline_test_models.h"
#include "tests/require_value.h"

namespace memplan {
namespace {

Tolerance Parse(const char* text) { return testing::RequireValue(ParseTolerance(text), text); }

CheckStatus StatusFor(int64_t recorded_peak, int64_t current_peak, const char* tolerance) {
  MemoryResult before;
  before.peak_bytes = recorded_peak;
  MemoryResult after;
  after.peak_bytes = current_peak;
  CheckReport report = CompareToBaseline(
      baseline_test::BaselineOf({baseline_test::Entry("c", before)}),
      baseline_test::BaselineOf({baseline_test::Entry("c", after)}), Parse(tolerance));
  REQUIRE(report.configurations.size() == 1);
  return report.configurations[0].status;
}

TEST_CASE("Tolerances parse as percentages or sizes", "[baseline]") {
  Tolerance two = Parse("2%");
  CHECK(two.kind == Tolerance::Kind::kPercent);
  CHECK(two.percent_numerator == 2);
  CHECK(two.percent_denominator == 1);
  CHECK(two.text == "2%");
  Tolerance fraction = Parse(" 2.5 % ");
  CHECK(fraction.percent_numerator == 25);
  CHECK(fraction.percent_denominator == 10);
  CHECK(fraction.text == "2.5 %");
  CHECK(Parse("64MiB").bytes == 64 * 1024 * 1024);
  CHECK(Parse("64MB").bytes == 64'000'000);
  CHECK(Parse("1G").bytes == int64_t{1} << 30);
  CHECK(Parse("4096").bytes == 4096);
  CHECK(Parse("0").kind == Tolerance::Kind::kBytes);
  CHECK(Parse("0").bytes == 0);
  CHECK(Parse("0%").percent_numerator == 0);

  for (const char* bad : {"", "%", "two%", "-2%", "2.12345%", "64 parsecs", "-1", "1.5.5%"}) {
    Expected<Tolerance> t = ParseTolerance(bad);
    INFO(bad);
    REQUIRE_FALSE(t.ok());
    CHECK_THAT(t.error().message, Catch::StartsWith("invalid tolerance '"));
  }
}

TEST_CASE("Percentage allowance is exact: floor(recorded * percent / 100)", "[baseline]") {
  CHECK(AllowedChangeBytes(Parse("2%"), 1'000'000) == 20'000);
  CHECK(AllowedChangeBytes(Parse("2%"), 1'126'880) == 22'537);  // 22537.6 rounded down
  CHECK(AllowedChangeBytes(Parse("0.5%"), 1'000'000) == 5'000);
  CHECK(AllowedChangeBytes(Parse("0.0001%"), 1'000'000) == 1);
  CHECK(AllowedChangeBytes(Parse("64MiB"), 1) == 67'108'864);
  // 200% of a 4 EiB peak would overflow int64 in a naive multiply.
  CHECK(AllowedChangeBytes(Parse("200%"), int64_t{1} << 62) == INT64_MAX);
}

TEST_CASE("Tolerance edges are inclusive", "[baseline]") {
  // 2% of 1,000,000 B is 20,000 B.
  CHECK(StatusFor(1'000'000, 1'020'000, "2%") == CheckStatus::kPass);
  CHECK(StatusFor(1'000'000, 1'020'001, "2%") == CheckStatus::kRegression);
  CHECK(StatusFor(1'000'000, 980'000, "2%") == CheckStatus::kPass);
  CHECK(StatusFor(1'000'000, 979'999, "2%") == CheckStatus::kImprovement);
  CHECK(StatusFor(1'000'000, 1'000'000, "2%") == CheckStatus::kPass);
  // 64 MiB on a 1 GiB peak.
  const int64_t gib = int64_t{1} << 30;
  const int64_t mib64 = int64_t{64} << 20;
  CHECK(StatusFor(gib, gib + mib64, "64MiB") == CheckStatus::kPass);
  CHECK(StatusFor(gib, gib + mib64 + 1, "64MiB") == CheckStatus::kRegression);
  CHECK(StatusFor(gib, gib - mib64 - 1, "64MiB") == CheckStatus::kImprovement);
  // Zero tolerance: one byte either way changes the verdict.
  CHECK(StatusFor(1000, 1000, "0") == CheckStatus::kPass);
  CHECK(StatusFor(1000, 1001, "0") == CheckStatus::kRegression);
  CHECK(StatusFor(1000, 999, "0%") == CheckStatus::kImprovement);
}

TEST_CASE("A bare decimal is a fraction of the reference, verify reads the relative forms",
          "[baseline][vocabulary]") {
  // 0.01 = 1%: the same allowance as "1%" (1% of 1,000,000 B = 10,000 B).
  Tolerance one = Parse("0.01");
  CHECK(one.kind == Tolerance::Kind::kPercent);
  CHECK(AllowedChangeBytes(one, 1'000'000) == 10'000);
  // 0.5 = 50%, 2. = 200%, .025 = 2.5%.
  CHECK(AllowedChangeBytes(Parse("0.5"), 1'000'000) == 500'000);
  CHECK(AllowedChangeBytes(Parse("2."), 1'000) == 2'000);
  CHECK(AllowedChangeBytes(Parse(".025"), 1'000'000) == 25'000);
  CHECK(AllowedChangeBytes(Parse("0.0"), 1'000'000) == 0);

  CHECK(*RelativeFraction(Parse("1%")) == 0.01);
  CHECK(*RelativeFraction(Parse("0.01")) == 0.01);
  CHECK(*RelativeFraction(Parse("50%")) == 0.5);
  CHECK(*RelativeFraction(Parse("0")) == 0.0);
  Expected<double> sized = RelativeFraction(Parse("64MiB"));
  REQUIRE_FALSE(sized.ok());
  CHECK(sized.error().message ==
        "tolerance '64MiB' is a size; this comparison is relative (1% or 0.01)");
  for (const char* bad : {"0.01.", "1e-2", "0.12345"}) {
    INFO(bad);
    CHECK_FALSE(ParseTolerance(bad).ok());
  }
}

}  // namespace
}  // namespace memplan
