#include "analyzer/derivation/attention_plan.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "analyzer/text/json_fields.h"

namespace memplan {

Expected<AttentionPlan> ApplyAttentionMode(Graph& graph, AttentionMode mode,
                                           const std::string& model, bool fp32_only) {
  AttentionPlan plan;
  plan.requested = mode;
  // What stays as written (all of it under eager) runs without the exporter's NaN guard.
  if (mode == AttentionMode::kEager) {
    graph = StripSoftmaxNanGuards(std::move(graph));
    return plan;
  }
  KeepEager math_kernel;
  if (fp32_only) math_kernel = [](const FusedAttention& f) { return f.grouped_query; };
  AttentionFusion fusion = FuseAttention(std::move(graph), math_kernel);
  graph = StripSoftmaxNanGuards(std::move(fusion.graph));
  plan.fused = std::move(fusion.fused);
  plan.math_kernel = std::move(fusion.kept_eager);
  // A trained score bias under --attention auto keeps the old reading: models that learn one
  // (torchvision's Swin) write their attention by hand and never call SDPA. Under
  // --attention sdpa the user says the model calls it: the math kernel (HF's T5).
  if (mode == AttentionMode::kAuto)
    std::erase_if(plan.math_kernel, [](const FusedAttention& f) { return f.mask_requires_grad; });
  if (mode == AttentionMode::kSdpa && plan.fused.empty() && plan.math_kernel.empty()) {
    return MakeError("--attention sdpa: model '" +
                     std::filesystem::path(model).filename().string() +
                     "' has no attention memplan recognises (MatMul -> Softmax -> MatMul or the "
                     "ONNX Attention op); use --attention eager or auto");
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

namespace {

// Why the attentions kept as written run SDPA's math kernel, which keeps the softmax outputs as
// eager does: grouped-query attention in an fp32-only plan, a mask that requires grad.
std::string MathKernelText(const std::vector<FusedAttention>& kept) {
  size_t trained = 0;
  for (const FusedAttention& f : kept) trained += f.mask_requires_grad ? 1 : 0;
  const size_t grouped = kept.size() - trained;
  std::string text;
  if (grouped > 0)
    text = std::to_string(grouped) +
           " grouped-query attentions run SDPA's math kernel in fp32 (flash needs fp16/bf16)";
  if (trained > 0)
    text += (text.empty() ? "" : "; ") + std::to_string(trained) +
            " attentions with a trained score bias run SDPA's math kernel (their mask requires "
            "grad)";
  return text + ", which keeps the softmax outputs as eager does";
}

}  // namespace

std::vector<std::string> AttentionPlanText(const AttentionPlan& plan) {
  if (plan.fused.empty() && !plan.math_kernel.empty())
    return {"eager: " + MathKernelText(plan.math_kernel)};
  if (plan.fused.empty()) {
    return {plan.requested == AttentionMode::kEager
                ? "eager (--attention eager: softmax outputs and dropout masks saved)"
                : "eager (no attention recognised)"};
  }
  const size_t n = plan.fused.size();
  std::vector<std::string> lines = {
      "sdpa: " + std::to_string(n) + (n == 1 ? " attention" : " attentions") +
          " fused into scaled_dot_product_attention (flash kernel)",
      "first " + plan.fused.front().node + "; all: --json, plan.attention"};
  if (!plan.math_kernel.empty()) lines.push_back("and " + MathKernelText(plan.math_kernel));
  return lines;
}

}  // namespace memplan
