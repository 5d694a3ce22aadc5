#include "analyzer/report/snapshot_frames.h"

namespace memplan {

std::string FrameText(const MemorySnapshot& snapshot, const std::vector<int32_t>& frames) {
  if (frames.empty()) return "(no frames recorded)";
  const SnapshotFrame& f = snapshot.frames[static_cast<size_t>(frames.front())];
  return f.filename + ":" + std::to_string(f.line) + " " + f.name;
}

nlohmann::ordered_json FramesJson(const MemorySnapshot& snapshot,
                                  const std::vector<int32_t>& frames) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (int32_t id : frames) {
    const SnapshotFrame& f = snapshot.frames[static_cast<size_t>(id)];
    out.push_back({{"filename", f.filename}, {"line", f.line}, {"name", f.name}});
  }
  return out;
}

}  // namespace memplan
