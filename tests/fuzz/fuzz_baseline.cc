// libFuzzer target: the baseline and configuration-list readers (`memplan check`), from parsed
// JSON (the file readers add only analyzer/baseline/json_file.h on top).

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "analyzer/baseline/baseline.h"
#include "analyzer/baseline/config_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json document = nlohmann::json::parse(data, data + size, nullptr,
                                                  /*allow_exceptions=*/false);
  if (document.is_discarded()) return 0;
  auto baseline = memplan::BaselineFromJson(document);
  auto configs = memplan::ConfigListFromJson(document);
  (void)baseline;
  (void)configs;
  return 0;
}
