#pragma once
// A snapshot event's Python frames as `replay` and `explain` print them: the innermost frame on
// one line ("train.py:42 forward"), and every frame as JSON.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/simulation/memory_snapshot.h"

namespace memplan {

// "file:line name" of the first (innermost) frame, or "(no frames recorded)".
std::string FrameText(const MemorySnapshot& snapshot, const std::vector<int32_t>& frames);

// [{"filename", "line", "name"}, ...] for every frame, innermost first.
nlohmann::ordered_json FramesJson(const MemorySnapshot& snapshot,
                                  const std::vector<int32_t>& frames);

}  // namespace memplan
