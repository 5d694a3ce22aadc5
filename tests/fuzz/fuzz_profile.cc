// libFuzzer target: the measured-profile reader (`memplan analyze --profile`).

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "profiler/profile_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json document = nlohmann::json::parse(data, data + size, nullptr,
                                                  /*allow_exceptions=*/false);
  if (document.is_discarded()) return 0;
  auto profile = memplan::profiler::ParseProfile(document, "fuzz.json");
  (void)profile;
  return 0;
}
