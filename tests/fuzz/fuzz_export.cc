// libFuzzer target: the exporters' plan input (`memplan export PLAN --to T`, `analyze --export`):
// the JSON parser every reader shares (ParseJsonText, which also names an out-of-range number),
// then every export target on the plan. Bad input must be an Error value, never an exception, a
// crash or an export that divides by a zero it read.

#include <cstddef>
#include <cstdint>
#include <string>

#include "analyzer/baseline/json_file.h"
#include "analyzer/config_export/export_config.h"
#include "analyzer/config_export/export_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto document = memplan::ParseJsonText(text, "fuzz.json");
  if (!document.ok()) return 0;
  memplan::ExportOptions options;
  options.plan_path = "fuzz.json";
  for (memplan::ExportTarget target : memplan::kAllExportTargets) {
    auto config = memplan::ExportConfig(*document, target, options);
    (void)config;
  }
  return 0;
}
