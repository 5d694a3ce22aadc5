#pragma once
// Advice from the practice memplan encodes: what a plan with accumulation or mixed precision
// changes for the person training, each item with the numbers that triggered it.

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/planning/planner.h"
#include "graph/graph.h"

namespace memplan {

struct AdviceItem {
  std::string id;  // stable key: "batchnorm-accumulation", "learning-rate", ...
  std::string message;
};

struct AdviceOptions {
  // BatchNorm statistics degrade below this many samples per batch (Wu & He, "Group
  // Normalization", ECCV 2018, Fig. 1: ResNet-50 ImageNet error rises steeply below 16 images
  // per GPU and is ~10 points worse at 2). The advice suggests raising m to this, or to G.
  int64_t batchnorm_min_samples = 16;
};

// The model-summary warnings (graph/model_summary.h) that say the model looks like an inference
// (eval-mode) export, whose plan underestimates training memory. Reports put them first among
// the warnings and mark the plan (AnalysisReport::inference_export); which warnings fire is the
// summary's business, this only picks them out.
std::vector<std::string> InferenceExportWarnings(const Graph& graph, const Bindings& bindings);

// Advice for `plan` of `graph`, in a fixed order. (The inference-export warning is a warning,
// not advice: InferenceExportWarnings.)
std::vector<AdviceItem> AdvisePlan(const Graph& graph, const TrainingPlan& plan,
                                   const AdviceOptions& options = {});

}  // namespace memplan
