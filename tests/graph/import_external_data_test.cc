// ValidateExternalDataLocation: which locations stay inside the model's folder.

#include <catch2/catch.hpp>

#include "graph/external_data.h"

namespace memplan {
namespace {

TEST_CASE("external data locations inside the folder are accepted", "[import][bad-input]") {
  for (const char* ok : {"w.bin", "data/w.bin", "./w.bin", "a/../w.bin", "a/b/../../w.bin"}) {
    INFO(ok);
    CHECK(ValidateExternalDataLocation("w", ok).ok());
  }
}

TEST_CASE("external data locations outside the folder are rejected", "[import][bad-input]") {
  for (const char* bad : {"../w.bin", "a/../../w.bin", "./../w.bin", "..\\w.bin", "/etc/passwd",
                          "\\\\server\\share", "C:\\w.bin", "", "a/..", "."}) {
    INFO(bad);
    auto status = ValidateExternalDataLocation("w", bad);
    REQUIRE_FALSE(status.ok());
    CHECK(status.error().message.rfind("initializer 'w': external data location '", 0) == 0);
  }
}

}  // namespace
}  // namespace memplan
