// libFuzzer target: the memory-snapshot reader and the replay behind `memplan replay` (any
// document the reader accepts is replayed: the replay's own checks, never an abort).

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "analyzer/simulation/memory_snapshot.h"
#include "analyzer/simulation/snapshot_replay.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json document = nlohmann::json::parse(data, data + size, nullptr,
                                                  /*allow_exceptions=*/false);
  if (document.is_discarded()) return 0;
  auto snapshot = memplan::ParseMemorySnapshot(document);
  if (!snapshot.ok()) return 0;
  auto replay = memplan::ReplaySnapshot(*snapshot);
  (void)replay;
  return 0;
}
