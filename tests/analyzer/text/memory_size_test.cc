#include <catch2/catch.hpp>

#include "analyzer/text/memory_size.h"
#include "tests/require_value.h"

namespace memplan {
namespace {

int64_t Parsed(const char* text) { return testing::RequireValue(ParseMemorySize(text), text); }

TEST_CASE("memory sizes: a bare letter is binary, B-suffixed is decimal, iB is binary",
          "[memory_size]") {
  // 24 * 2^30 = 25769803776: "24G" means what nvidia-smi prints for a 24 GiB card.
  CHECK(Parsed("24G") == 25769803776);
  CHECK(Parsed("24GiB") == 25769803776);
  CHECK(Parsed("24gib") == 25769803776);
  CHECK(Parsed("24 GiB") == 25769803776);
  // Decimal: 24 * 10^9 and 80 * 10^9.
  CHECK(Parsed("24GB") == 24000000000);
  CHECK(Parsed("80GB") == 80000000000);
  CHECK(Parsed("80gb") == 80000000000);
  // 512 * 2^20 = 536870912; 512 * 10^6.
  CHECK(Parsed("512M") == 536870912);
  CHECK(Parsed("512MiB") == 536870912);
  CHECK(Parsed("512MB") == 512000000);
  CHECK(Parsed("4K") == 4096);
  CHECK(Parsed("4KB") == 4000);
  // 1.5 * 2^40 = 1649267441664; 2 * 10^12.
  CHECK(Parsed("1.5T") == 1649267441664);
  CHECK(Parsed("2TB") == 2000000000000);
  // Plain bytes, with or without B.
  CHECK(Parsed("24000000000") == 24000000000);
  CHECK(Parsed("100B") == 100);
  // 0.5 KiB = 512 B exactly; 0.001 KiB = 1.024 B rounds down to 1.
  CHECK(Parsed("0.5K") == 512);
  CHECK(Parsed("0.001K") == 1);
  // INT64_MAX itself is representable.
  CHECK(Parsed("9223372036854775807") == INT64_MAX);
}

TEST_CASE("memory sizes: malformed, negative, zero and overflowing sizes are errors",
          "[memory_size]") {
  for (const char* bad : {"", "G", "24X", "24GG", "-1G", "0", "0G", "0.0001B", "abc", "24 G B",
                          "9223372036854775808", "9000000000T", "1e9", "24..5G", "24GiBs"}) {
    Expected<int64_t> bytes = ParseMemorySize(bad);
    INFO("'" << bad << "'");
    CHECK_FALSE(bytes.ok());
    if (!bytes.ok()) CHECK(bytes.error().message.find("invalid memory size") == 0);
  }
  CHECK(ParseMemorySize("-1G").error().message.find("positive") != std::string::npos);
  CHECK(ParseMemorySize("24X").error().message.find("unknown unit 'x'") != std::string::npos);
}

TEST_CASE("FormatBytes prints binary units with one decimal", "[memory_size]") {
  CHECK(FormatBytes(0) == "0 B");
  CHECK(FormatBytes(1023) == "1023 B");
  CHECK(FormatBytes(1024) == "1.0 KiB");
  CHECK(FormatBytes(1536) == "1.5 KiB");
  // 21.4 GiB = 21.4 * 2^30 = 22977936179.2 -> 22977936179 bytes.
  CHECK(FormatBytes(22977936179) == "21.4 GiB");
  CHECK(FormatBytes(int64_t{24} << 30) == "24.0 GiB");
  // 2^20 - 1 bytes is 1023.999 KiB: printed as the next unit, never "1024.0 KiB".
  CHECK(FormatBytes((int64_t{1} << 20) - 1) == "1.0 MiB");
  CHECK(FormatBytes(-1536) == "-1.5 KiB");
  CHECK(FormatBytes(INT64_MIN) == "-8192.0 PiB");
}

}  // namespace
}  // namespace memplan
