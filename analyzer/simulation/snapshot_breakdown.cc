#include "analyzer/simulation/snapshot_breakdown.h"

#include <algorithm>
#include <array>
#include <map>
#include <unordered_set>

namespace memplan {
namespace {

constexpr int64_t kMinBlockSize = 512;  // CUDACachingAllocator's kMinBlockSize (round_size)

int64_t Rounded(int64_t bytes) {
  return bytes < kMinBlockSize ? kMinBlockSize
                               : kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

bool IsFree(SnapshotAction action) {
  return action == SnapshotAction::kFreeRequested || action == SnapshotAction::kFreeCompleted;
}

}  // namespace

std::string_view SnapshotCategoryName(SnapshotCategory category) {
  constexpr std::array<std::string_view, kSnapshotCategories> kNames = {
      "parameters", "optimizer_state", "backward", "activations", "unattributed"};
  return kNames[static_cast<size_t>(category)];
}

SnapshotCategory CategoryOfFrames(const MemorySnapshot& snapshot,
                                  const std::vector<int32_t>& frames) {
  if (frames.empty()) return SnapshotCategory::kUnattributed;
  auto any = [&](auto&& predicate) {
    for (int32_t id : frames)
      if (predicate(snapshot.frames[static_cast<size_t>(id)])) return true;
    return false;
  };
  if (any([](const SnapshotFrame& f) { return Contains(f.filename, "torch/optim/"); }))
    return SnapshotCategory::kOptimizerState;
  if (any([](const SnapshotFrame& f) {
        return Contains(f.filename, "torch/nn/modules/module.py") && f.name == "_apply";
      }))
    return SnapshotCategory::kParameters;
  if (any([](const SnapshotFrame& f) { return Contains(f.filename, "torch/autograd/"); }))
    return SnapshotCategory::kBackward;
  return SnapshotCategory::kActivations;
}

Expected<SnapshotBreakdown> BreakdownAt(const MemorySnapshot& snapshot, int64_t event,
                                        int64_t reserved, size_t keep) {
  const auto& events = snapshot.events;
  if (event < -1 || event >= static_cast<int64_t>(events.size()))
    return MakeError("event " + std::to_string(event) + " is not in the trace");
  SnapshotBreakdown out;
  out.event = event;
  out.at_oom = event >= 0 && events[static_cast<size_t>(event)].action == SnapshotAction::kOom;
  if (out.at_oom) out.oom_request = events[static_cast<size_t>(event)].size;
  out.reserved = reserved;
  // Live by address: the blocks live when the trace began (as snapshot_replay.h finds them),
  // then every alloc and free_completed up to the focus.
  std::map<int64_t, SnapshotLiveBlock> live;
  std::unordered_set<int64_t> named;
  for (const SnapshotEvent& e : events) {
    if (e.action != SnapshotAction::kAlloc && !IsFree(e.action)) continue;
    if (named.insert(e.address).second && IsFree(e.action))
      live[e.address] = SnapshotLiveBlock{e.address, e.size, e.stream,
                                          CategoryOfFrames(snapshot, e.frames), e.frames};
  }
  for (const SnapshotSegment& s : snapshot.segments)
    for (const SnapshotBlock& b : s.blocks)
      if (b.allocated && named.count(b.address) == 0)
        live[b.address] = SnapshotLiveBlock{b.address, b.requested_size, s.stream,
                                            CategoryOfFrames(snapshot, b.frames), b.frames};
  const int64_t last = out.at_oom ? event - 1 : event;
  for (int64_t i = 0; i <= last; ++i) {
    const SnapshotEvent& e = events[static_cast<size_t>(i)];
    if (e.action == SnapshotAction::kAlloc) {
      if (!live.emplace(e.address,
                        SnapshotLiveBlock{e.address, e.size, e.stream,
                                          CategoryOfFrames(snapshot, e.frames), e.frames})
               .second)
        return MakeError("events[" + std::to_string(i) + "]: alloc at an address (" +
                         std::to_string(e.address) + ") that is already allocated");
    } else if (e.action == SnapshotAction::kFreeCompleted) {
      if (live.erase(e.address) == 0)
        return MakeError("events[" + std::to_string(i) + "]: free_completed at an address (" +
                         std::to_string(e.address) + ") that is not allocated");
    }
  }
  std::vector<SnapshotLiveBlock> blocks;
  for (auto& [address, block] : live) {
    out.live_bytes += block.size;
    out.rounded_bytes += Rounded(block.size);
    out.by_category[static_cast<int>(block.category)] += block.size;
    blocks.push_back(std::move(block));
  }
  out.cached_free = reserved - out.rounded_bytes;
  // Largest first; equal sizes by address, so the listing is stable.
  std::sort(blocks.begin(), blocks.end(), [](const auto& a, const auto& b) {
    return a.size != b.size ? a.size > b.size : a.address < b.address;
  });
  if (blocks.size() > keep) blocks.resize(keep);
  out.largest = std::move(blocks);
  return out;
}

}  // namespace memplan
