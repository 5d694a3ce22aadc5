#include "analyzer/simulation/memory_snapshot.h"

#include <array>
#include <fstream>
#include <sstream>
#include <utility>

namespace memplan {
namespace {

constexpr std::array<std::pair<SnapshotAction, std::string_view>, 9> kActionNames = {{
    {SnapshotAction::kAlloc, "alloc"},
    {SnapshotAction::kFreeRequested, "free_requested"},
    {SnapshotAction::kFreeCompleted, "free_completed"},
    {SnapshotAction::kSegmentAlloc, "segment_alloc"},
    {SnapshotAction::kSegmentFree, "segment_free"},
    {SnapshotAction::kSegmentMap, "segment_map"},
    {SnapshotAction::kSegmentUnmap, "segment_unmap"},
    {SnapshotAction::kOom, "oom"},
    {SnapshotAction::kSnapshot, "snapshot"},
}};

// A byte count or address: an integer in [0, kMaxSnapshotBytes] (addresses too: device
// pointers are below 2^49 on every CUDA GPU).
Expected<int64_t> Bytes(const nlohmann::json& value, const std::string& where) {
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() > static_cast<uint64_t>(kMaxSnapshotBytes))
      return MakeError(where + " is above 2^50 bytes");
    return static_cast<int64_t>(value.get<uint64_t>());
  }
  if (!value.is_number_integer()) return MakeError(where + " is not an integer");
  const int64_t v = value.get<int64_t>();
  if (v < 0) return MakeError(where + " is negative");
  if (v > kMaxSnapshotBytes) return MakeError(where + " is above 2^50 bytes");
  return v;
}

const nlohmann::json* Field(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Expected<int64_t> BytesField(const nlohmann::json& object, const char* key,
                             const std::string& where) {
  const nlohmann::json* value = Field(object, key);
  if (value == nullptr) return MakeError(where + ": no \"" + key + "\"");
  return Bytes(*value, where + "." + key);
}

Expected<std::vector<int32_t>> FrameIds(const nlohmann::json& value, size_t num_frames,
                                        const std::string& where) {
  if (!value.is_array()) return MakeError(where + " is not an array of frame ids");
  std::vector<int32_t> ids;
  ids.reserve(value.size());
  for (const nlohmann::json& id : value) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        static_cast<uint64_t>(id.get<int64_t>()) >= num_frames)
      return MakeError(where + ": frame id out of range (" + std::to_string(num_frames) +
                       " frames)");
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return ids;
}

Expected<SnapshotFrame> ParseFrame(const nlohmann::json& frame, const std::string& where) {
  if (!frame.is_array() || frame.size() != 3 || !frame[0].is_string() ||
      !frame[1].is_number_integer() || !frame[2].is_string())
    return MakeError(where + " is not [filename, line, name]");
  return SnapshotFrame{frame[0].get<std::string>(), frame[1].get<int64_t>(),
                       frame[2].get<std::string>()};
}

Expected<SnapshotBlock> ParseBlock(const nlohmann::json& block, size_t num_frames,
                                   const std::string& where) {
  if (!block.is_object()) return MakeError(where + " is not an object");
  SnapshotBlock b;
  MEMPLAN_TRY(b.address, BytesField(block, "address", where));
  MEMPLAN_TRY(b.size, BytesField(block, "size", where));
  b.requested_size = b.size;
  if (Field(block, "requested_size") != nullptr) {
    MEMPLAN_TRY(b.requested_size, BytesField(block, "requested_size", where));
  }
  const nlohmann::json* state = Field(block, "state");
  if (state == nullptr || !state->is_string()) return MakeError(where + ": no \"state\" string");
  const std::string s = state->get<std::string>();
  if (s != "active_allocated" && s != "active_awaiting_free" && s != "inactive")
    return MakeError(where + ".state '" + s + "' is not one of PyTorch's block states");
  b.allocated = s != "inactive";
  if (const nlohmann::json* frames = Field(block, "frames")) {
    MEMPLAN_TRY(b.frames, FrameIds(*frames, num_frames, where + ".frames"));
  }
  return b;
}

Expected<SnapshotSegment> ParseSegment(const nlohmann::json& segment, size_t num_frames,
                                       const std::string& where) {
  if (!segment.is_object()) return MakeError(where + " is not an object");
  SnapshotSegment s;
  MEMPLAN_TRY(s.address, BytesField(segment, "address", where));
  MEMPLAN_TRY(s.total_size, BytesField(segment, "total_size", where));
  MEMPLAN_TRY(s.stream, BytesField(segment, "stream", where));
  const nlohmann::json* type = Field(segment, "segment_type");
  if (type == nullptr || !type->is_string() ||
      (type->get<std::string>() != "small" && type->get<std::string>() != "large"))
    return MakeError(where + ".segment_type is not \"small\" or \"large\"");
  s.small = type->get<std::string>() == "small";
  const nlohmann::json* blocks = Field(segment, "blocks");
  if (blocks == nullptr || !blocks->is_array()) return MakeError(where + ": no \"blocks\" array");
  int64_t total = 0;
  for (size_t i = 0; i < blocks->size(); ++i) {
    MEMPLAN_TRY(SnapshotBlock b,
                ParseBlock((*blocks)[i], num_frames, where + ".blocks[" + std::to_string(i) + "]"));
    total += b.size;  // each <= 2^50 and the count bounded by the file: no overflow
    if (total > s.total_size)
      return MakeError(where + ": its blocks add up to more than total_size");
    s.blocks.push_back(std::move(b));
  }
  return s;
}

Expected<SnapshotEvent> ParseEvent(const nlohmann::json& event, size_t num_frames,
                                   const std::string& where) {
  // A sixth element is an oom's device_free (what cudaMemGetInfo still reported free).
  if (!event.is_array() || event.size() < 5 || event.size() > 6 || !event[0].is_string())
    return MakeError(where + " is not [action, addr, size, stream, frames(, device_free)]");
  SnapshotEvent e;
  const std::string action = event[0].get<std::string>();
  bool known = false;
  for (const auto& [value, name] : kActionNames) {
    if (name == action) {
      e.action = value;
      known = true;
    }
  }
  if (!known) return MakeError(where + ": unknown action '" + action + "'");
  MEMPLAN_TRY(e.address, Bytes(event[1], where + " addr"));
  MEMPLAN_TRY(e.size, Bytes(event[2], where + " size"));
  MEMPLAN_TRY(e.stream, Bytes(event[3], where + " stream"));
  MEMPLAN_TRY(e.frames, FrameIds(event[4], num_frames, where + " frames"));
  if (event.size() == 6) {
    if (e.action != SnapshotAction::kOom)
      return MakeError(where + ": only an oom event carries device_free");
    MEMPLAN_TRY(e.device_free, Bytes(event[5], where + " device_free"));
  }
  return e;
}

}  // namespace

std::string_view SnapshotActionName(SnapshotAction action) {
  for (const auto& [value, name] : kActionNames)
    if (value == action) return name;
  return "?";
}

Expected<MemorySnapshot> ParseMemorySnapshot(const nlohmann::json& document) {
  if (!document.is_object()) return MakeError("not a memplan snapshot: not a JSON object");
  const nlohmann::json* schema = Field(document, "schema");
  if (schema == nullptr || !schema->is_string() ||
      schema->get<std::string>() != kMemorySnapshotSchema) {
    return MakeError(std::string("not a memplan snapshot: expected \"schema\": \"") +
                     kMemorySnapshotSchema +
                     "\" (convert PyTorch's pickle with tools/snapshot_to_json.py)");
  }
  MemorySnapshot snapshot;
  MEMPLAN_TRY(snapshot.device, BytesField(document, "device", "snapshot"));
  const nlohmann::json* frames = Field(document, "frames");
  const nlohmann::json* segments = Field(document, "segments");
  const nlohmann::json* events = Field(document, "events");
  if (frames == nullptr || !frames->is_array()) return MakeError("snapshot: no \"frames\" array");
  if (segments == nullptr || !segments->is_array())
    return MakeError("snapshot: no \"segments\" array");
  if (events == nullptr || !events->is_array()) return MakeError("snapshot: no \"events\" array");
  for (size_t i = 0; i < frames->size(); ++i) {
    MEMPLAN_TRY(SnapshotFrame f, ParseFrame((*frames)[i], "frames[" + std::to_string(i) + "]"));
    snapshot.frames.push_back(std::move(f));
  }
  const size_t n = snapshot.frames.size();
  for (size_t i = 0; i < segments->size(); ++i) {
    MEMPLAN_TRY(SnapshotSegment s,
                ParseSegment((*segments)[i], n, "segments[" + std::to_string(i) + "]"));
    snapshot.segments.push_back(std::move(s));
  }
  snapshot.events.reserve(events->size());
  for (size_t i = 0; i < events->size(); ++i) {
    MEMPLAN_TRY(SnapshotEvent e, ParseEvent((*events)[i], n, "events[" + std::to_string(i) + "]"));
    snapshot.events.push_back(std::move(e));
  }
  return snapshot;
}

Expected<MemorySnapshot> ReadMemorySnapshot(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string bytes = std::move(text).str();
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
      static_cast<unsigned char>(bytes[1]) == 0x8b)
    return MakeError(path + " is gzip-compressed: unpack it first (gunzip -k " + path + ")");
  if (bytes.size() >= 1 && static_cast<unsigned char>(bytes[0]) == 0x80)
    return MakeError(path + " is a pickle: convert it first (tools/snapshot_to_json.py " + path +
                     " snapshot.json)");
  nlohmann::json document = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return MakeError(path + " is not valid JSON (truncated?)");
  Expected<MemorySnapshot> snapshot = ParseMemorySnapshot(document);
  if (!snapshot.ok()) return MakeError(path + ": " + snapshot.error().message);
  return snapshot;
}

}  // namespace memplan
