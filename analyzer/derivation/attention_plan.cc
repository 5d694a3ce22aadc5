#include "analyzer/derivation/attention_plan.h"

#include <filesystem>
#include <utility>

#include "analyzer/text/json_fields.h"

namespace memplan {

Expected<AttentionPlan> ApplyAttentionMode(Graph& graph, AttentionMode mode,
                                           const std::string& model, bool fp32_only) {
  AttentionPlan plan;
  plan.requested = mode;
  if (mode == AttentionMode::kEager) return plan;
  KeepEager math_kernel;
  if (fp32_only) math_kernel = [](const FusedAttention& f) { return f.grouped_query; };
  AttentionFusion fusion = FuseAttention(std::move(graph), math_kernel);
  graph = std::move(fusion.graph);
  plan.fused = std::move(fusion.fused);
  plan.math_kernel = std::move(fusion.kept_eager);
  if (mode == AttentionMode::kSdpa && plan.fused.empty() && plan.math_kernel.empty()) {
    return MakeError("--attention sdpa: model '" +
                     std::filesystem::path(model).filename().string() +
                     "' has no attention memplan recognises (MatMul -> Softmax -> MatMul or the "
                     "ONNX Attention op; scores with a trained bias, as Swin's, stay eager); use "
                     "--attention eager or auto");
  }
  return plan;
}

nlohmann::ordered_json AttentionPlanToJson(const AttentionPlan& plan) {
  nlohmann::ordered_json j;
  j["mode"] = std::string(plan.mode());
  j["requested"] = std::string(AttentionModeName(plan.requested));
  j["fused"] = plan.fused.size();
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const FusedAttention& f : plan.fused) {
    nlohmann::ordered_json g;
    MEMPLAN_JSON_FIELDS(g, f, node, mask, grouped_query, dropout, replaced);
    groups.push_back(std::move(g));
  }
  j["groups"] = std::move(groups);
  j["math_kernel"] = plan.math_kernel.size();
  return j;
}

std::vector<std::string> AttentionPlanText(const AttentionPlan& plan) {
  if (plan.fused.empty() && !plan.math_kernel.empty()) {
    return {"eager: " + std::to_string(plan.math_kernel.size()) +
            " grouped-query attentions run SDPA's math kernel in fp32 (flash needs fp16/bf16), "
            "which keeps the softmax outputs as eager does"};
  }
  if (plan.fused.empty()) {
    return {plan.requested == AttentionMode::kEager
                ? "eager (--attention eager: softmax outputs and dropout masks saved)"
                : "eager (no attention recognised)"};
  }
  const size_t n = plan.fused.size();
  return {"sdpa: " + std::to_string(n) + (n == 1 ? " attention" : " attentions") +
              " fused into scaled_dot_product_attention (flash kernel)",
          "first " + plan.fused.front().node + "; all: --json, plan.attention"};
}

}  // namespace memplan
