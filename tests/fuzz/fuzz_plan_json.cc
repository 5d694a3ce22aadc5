// libFuzzer target: the exported-plan reader (`memplan export --plan`): JSON parse, then
// ReadExportPlan. Bad input must be an Error value, never an exception or a crash.

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "analyzer/config_export/saved_plan_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Syntax errors are exceptions in nlohmann and are caught at the file reader
  // (analyzer/baseline/json_file.h); here only well-formed JSON goes on to the schema reader.
  nlohmann::json document = nlohmann::json::parse(data, data + size, nullptr,
                                                  /*allow_exceptions=*/false);
  if (document.is_discarded()) return 0;
  auto plan = memplan::ReadExportPlan(document);
  (void)plan;
  return 0;
}
