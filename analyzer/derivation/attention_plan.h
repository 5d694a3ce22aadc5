#pragma once
// `--attention eager|sdpa|auto` applied to a loaded graph, and what the plan reports about it
// (`plan.attention` in JSON, one "Attention" line in text). The recogniser itself is
// graph/attention/attention_fusion.h; this decides whether to use it and what a request that
// finds nothing means.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/vocabulary/attention_mode.h"
#include "graph/attention/attention_fusion.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

struct AttentionPlan {
  AttentionMode requested = AttentionMode::kEager;
  std::vector<FusedAttention> fused;  // empty under eager or when nothing was recognised
  // Recognised, but PyTorch's SDPA would run its math kernel on them, which keeps what eager
  // keeps: grouped-query attention in an fp32 plan (the flash kernel needs fp16/bf16, the
  // memory-efficient one takes no grouped K/V, so HF's enable_gqa=True falls back to math).
  std::vector<FusedAttention> math_kernel;

  // What the plan models: "sdpa" when an attention was fused, "eager" otherwise.
  std::string_view mode() const { return fused.empty() ? "eager" : "sdpa"; }
};

// Rewrites `graph` per `mode` (eager: unchanged). `fp32_only`: the plan runs in fp32 alone
// (--precision fp32), so grouped-query attentions stay as written (AttentionPlan::math_kernel).
// Error (bad input): `sdpa` on a model in which no attention is recognised; `model` names it in
// the message.
Expected<AttentionPlan> ApplyAttentionMode(Graph& graph, AttentionMode mode,
                                           const std::string& model, bool fp32_only = false);

// {"mode", "requested", "fused", "groups": [{"node", "mask", "grouped_query", "dropout",
// "replaced": [...]}]} (docs/json_schema.md).
nlohmann::ordered_json AttentionPlanToJson(const AttentionPlan& plan);

// The text report's lines (without the row label): "sdpa: 12 attentions fused into
// scaled_dot_product_attention (flash kernel)" and "first <node>; all: --json, plan.attention",
// or one "eager (...)" line saying why.
std::vector<std::string> AttentionPlanText(const AttentionPlan& plan);

}  // namespace memplan
