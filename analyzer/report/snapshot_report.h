#pragma once
// `memplan explain`'s reports (text, JSON, HTML): at a PyTorch memory snapshot's OOM (or its
// reserved peak), what held the memory (analyzer/simulation/snapshot_breakdown.h) and, with the
// model, which of memplan's program buffers the blocks are (snapshot_attribution.h) and what
// would have fit the device (analyzer/alternatives/alternative_search.h, SearchOomAlternatives).
// docs/snapshots.md describes the rules, docs/json_schema.md the JSON.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/alternatives/alternatives_report.h"
#include "analyzer/planning/planner.h"
#include "analyzer/simulation/memory_snapshot.h"
#include "analyzer/simulation/snapshot_attribution.h"
#include "analyzer/simulation/snapshot_breakdown.h"
#include "graph/expected.h"

namespace memplan {

// The part `explain` adds when the model and the run's plan flags are given.
struct SnapshotModelExplanation {
  std::string model_path;
  int64_t capacity_bytes = 0;   // the device the run had (the budget every change is planned at)
  std::string capacity_source;  // how it was found: "the OOM's reserved + device_free", "--gpu"
  const TrainingPlan* plan = nullptr;  // the run's plan: at its micro-batch, on that device
  SnapshotAttribution attribution;
  AlternativesReport alternatives;
};

struct SnapshotExplanation {
  std::string path;
  const MemorySnapshot* snapshot = nullptr;
  SnapshotBreakdown breakdown;
  // PyTorch's reserved and live requested bytes after every event (for the HTML timeline).
  std::vector<int64_t> reserved_after;
  std::vector<int64_t> live_after;
  std::optional<SnapshotModelExplanation> model;
};

// What held the reserved bytes, each byte once (they add up to `reserved`): the live blocks by
// memplan category (unattributed: no match), `fragmentation` (the live blocks' rounding to 512 B,
// and at an OOM the cached-but-free bytes: PyTorch released every all-free segment before it
// failed, so what stays cached are pieces beside live blocks that did not hold the request) and
// `cached_free` (at a peak: free blocks PyTorch kept for reuse).
struct HeldBytes {
  CategoryBytes attributed;
  int64_t unattributed = 0;
  int64_t fragmentation = 0;
  int64_t cached_free = 0;
};
HeldBytes HeldBytesOf(const SnapshotBreakdown& breakdown, const SnapshotAttribution& attribution);

// PyTorch's reserved (from its segment events, from `start_reserved`) and live requested bytes
// (from its allocs and frees, from `start_live`) after each event.
void FillSnapshotTimeline(SnapshotExplanation& explanation, int64_t start_reserved,
                          int64_t start_live);

std::string SnapshotExplanationText(const SnapshotExplanation& explanation);
std::string SnapshotExplanationJson(const SnapshotExplanation& explanation);
// A self-contained page: the reserved and live bytes over the trace's events as an SVG (the
// focus marked), then the text's tables.
std::string SnapshotExplanationHtml(const SnapshotExplanation& explanation);

}  // namespace memplan
