#pragma once
// `memplan check`: the current predictions of every baselined configuration compared with the
// recorded ones. The gate is the predicted peak: a configuration regresses when its peak grew by
// more than the tolerance, improves when it shrank by more than the tolerance (a pass, reported
// so the baseline can be re-recorded), and passes otherwise. The breakdown by category and the
// per-node saved bytes are reported to explain a change, never gate it.
//
// Exit-code policy (the CLI applies it): 0 when every configuration passed or improved, 1 when
// any regressed or is missing from the current run, 2 on an error (unreadable baseline, a model
// that failed to analyse) before any comparison.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/baseline/baseline.h"
#include "analyzer/program/memory_category.h"
#include "analyzer/text/tolerance.h"
#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_CHECK_STATUSES(X)                                                           \
  X(kPass, "pass")               /* |peak change| within tolerance */                       \
  X(kImprovement, "improvement") /* peak shrank by more than the tolerance (passes) */      \
  X(kRegression, "regression")   /* peak grew by more than the tolerance (fails) */         \
  X(kMissing, "missing")         /* in the baseline, absent from the current run (fails) */ \
  X(kNew, "new")                 /* in the current run only: nothing to compare (passes) */
MEMPLAN_NAMED_ENUM(CheckStatus, MEMPLAN_CHECK_STATUSES);

struct NodeGrowth {
  std::string node;
  int64_t recorded_bytes = 0;  // 0 for a node the baseline did not have
  int64_t current_bytes = 0;
  int64_t Growth() const { return current_bytes - recorded_bytes; }
  bool IsNew() const { return recorded_bytes == 0; }
};

struct ConfigurationCheck {
  std::string name;
  std::string model;  // as the baseline wrote it
  CheckStatus status = CheckStatus::kPass;
  MemoryResult recorded;      // empty for kNew
  MemoryResult current;       // empty for kMissing
  int64_t allowed_bytes = 0;  // the tolerance for this configuration's recorded peak
  // Nodes whose saved bytes grew, largest growth first (ties by name), at most
  // CompareOptions::top_nodes; grown_node_count counts them all.
  std::vector<NodeGrowth> grown_nodes;
  size_t grown_node_count = 0;
  bool flags_changed = false;  // the two sides were analysed with different flags
  // The plan the baseline recorded (nullopt in an old baseline) and whether the current side
  // was measured on that same plan (`check` replays it; pinned_plan.h).
  std::optional<PlanFlags> recorded_plan;
  bool plan_replayed = false;
  // The largest micro-batch that fits, each side (nullopt where not known).
  std::optional<int64_t> recorded_largest_micro_batch;
  std::optional<int64_t> current_largest_micro_batch;
  // The line of the configuration's "name" in the baseline file (0: unknown), for annotations.
  int baseline_line = 0;

  // The recorded plan's micro-batch no longer fits (the largest that fits is smaller now).
  bool PinnedMicroBatchNoLongerFits() const;

  int64_t PeakChange() const { return current.peak_bytes - recorded.peak_bytes; }
  bool Failed() const {
    return status == CheckStatus::kRegression || status == CheckStatus::kMissing;
  }
};

struct CheckReport {
  Tolerance tolerance;
  std::string baseline_path;  // as given on the command line; annotations point at it
  std::vector<ConfigurationCheck> configurations;  // baseline order, then new ones

  size_t Count(CheckStatus status) const;
  bool Failed() const;
  int ExitCode() const { return Failed() ? 1 : 0; }
};

struct CompareOptions {
  size_t top_nodes = 5;       // nodes listed per configuration
  std::string baseline_path;  // copied into CheckReport::baseline_path
  // Configuration name -> line in the baseline file (ConfigurationLines); copied per check.
  std::map<std::string, int> baseline_lines;
};

// Compares configurations by name. Deterministic: the order of `recorded`, then configurations
// only `current` has, in its order.
CheckReport CompareToBaseline(const Baseline& recorded, const Baseline& current,
                              const Tolerance& tolerance, const CompareOptions& options = {});

}  // namespace memplan
