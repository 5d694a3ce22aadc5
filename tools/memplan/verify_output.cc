#include "tools/memplan/verify_output.h"

#include <cstdio>
#include <sstream>

#include "analyzer/program/category_bytes_json.h"
#include "analyzer/text/json_fields.h"
#include "analyzer/text/memory_size.h"

namespace memplan::cli {
namespace {

nlohmann::ordered_json Equivalence(const EquivalenceResult& r) {
  nlohmann::ordered_json j;
  MEMPLAN_JSON_FIELDS(j, r, checked, passed, max_rel_error, bound, note);
  return j;
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

const char* Verdict(bool passed) { return passed ? "PASS" : "FAIL"; }

}  // namespace

nlohmann::ordered_json VerificationToJson(const VerificationReport& r,
                                          const VerifiedPlanInfo& info) {
  nlohmann::ordered_json j;
  j["schema"] = "memplan/1";
  j["command"] = "verify";
  j["model"] = info.model;
  j["device"] = r.device;
  j["plan_source"] = info.plan_source;
  nlohmann::ordered_json plan;
  plan["micro_batch"] = r.micro_batch;
  plan["accumulation_steps"] = r.accumulation_steps;
  plan["global_batch"] = r.micro_batch * r.accumulation_steps * (r.ranks ? r.ranks->ranks : 1);
  plan["precision"] = std::string(PrecisionName(info.program.precision));
  if (info.program.precision != Precision::kFp32)
    plan["amp_mode"] = std::string(AmpModeName(info.program.amp_mode));
  plan["optimizer"] = std::string(OptimizerKindName(info.program.optimizer));
  plan["loss"] = std::string(LossKindName(r.loss));
  if (!r.loss_terms.empty()) {
    nlohmann::ordered_json terms = nlohmann::ordered_json::array();
    for (const auto& [output, loss] : r.loss_terms)
      terms.push_back({{"output", output}, {"loss", std::string(LossKindName(loss))}});
    plan["loss_terms"] = terms;
  }
  plan["zero_grad"] = std::string(ZeroGradModeName(info.program.zero_grad));
  plan["clip_gradients"] = info.program.clip_gradients;
  plan["recompute"] = info.recompute;
  if (info.fused_loss) plan["fused_loss"] = true;
  j["plan"] = plan;
  j["predicted_peak_bytes"] = r.predicted.peak_bytes;
  j["measured_peak_bytes"] = r.measured.peak_bytes;
  j["predicted_breakdown"] = CategoryBytesJson(r.predicted.peak_breakdown);
  j["measured_breakdown"] = CategoryBytesJson(r.measured.peak_breakdown);
  nlohmann::ordered_json memory;
  memory["passed"] = r.memory_passed;
  memory["tolerance"] = r.tolerance;
  memory["exact_match"] = r.measured.peak_bytes == r.predicted.peak_bytes;
  memory["predicted_peak_step"] = r.predicted.peak_step_name;
  memory["measured_peak_step"] = r.measured.peak_step_name;
  memory["predicted_reserved_bytes"] = r.predicted_caching.peak_reserved_bytes;
  memory["measured_reserved_bytes"] = r.measured.caching_peak_reserved_bytes;
  memory["allocator_peak_bytes"] = r.measured.allocator_peak_total;
  memory["scratch_peak_bytes"] = r.measured.scratch_peak_bytes;
  j["memory"] = memory;
  j["gradient_equivalence"] = Equivalence(r.gradient);
  j["recompute_equivalence"] = Equivalence(r.recompute);
  // --fused-loss plans only: the fused head and loss against the unfused graph.
  if (r.fused_loss.checked || !r.fused_loss.note.empty())
    j["fused_loss_equivalence"] = Equivalence(r.fused_loss);
  if (r.ranks) {
    // verify --gpus: every simulated rank's measurement (the top-level one is rank 0's).
    nlohmann::ordered_json ranks;
    ranks["parallel"] = r.ranks->strategy;
    ranks["gpus"] = r.ranks->ranks;
    ranks["shard_ranks"] = r.ranks->shard_ranks;
    nlohmann::ordered_json peaks = nlohmann::ordered_json::array();
    for (const MemoryMeasurement& m : r.ranks->measured) peaks.push_back(m.peak_bytes);
    ranks["measured_peak_bytes"] = peaks;
    ranks["weight_equivalence"] = Equivalence(r.ranks->weights);
    j["ranks"] = ranks;
  }
  nlohmann::ordered_json losses = nlohmann::ordered_json::array();
  for (const StepRecord& s : r.steps) losses.push_back(s.loss);
  j["losses"] = losses;
  if (r.loss_decreased) {
    j["loss_decreased"] = *r.loss_decreased;
  } else {
    j["loss_decreased"] = nullptr;
  }
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  for (const LossScalerEvent& e : r.scaler_events) {
    nlohmann::ordered_json ev;
    MEMPLAN_JSON_FIELDS(ev, e, step, event, scale_before, scale_after);
    events.push_back(ev);
  }
  j["loss_scaler_events"] = events;
  MEMPLAN_JSON_FIELDS(j, r, step_seconds, samples_per_second, passed);
  return j;
}

namespace {

// The loss the step trained: its kind, or the sum of its terms ("cross_entropy(logits) +
// mse(boxes)") for a loss over several outputs.
std::string LossText(const VerificationReport& r) {
  if (r.loss_terms.empty()) return std::string(LossKindName(r.loss));
  std::string text;
  for (const auto& [output, loss] : r.loss_terms)
    text += (text.empty() ? "" : " + ") + std::string(LossKindName(loss)) + "(" + output + ")";
  return text;
}

}  // namespace

std::string FormatVerificationText(const VerificationReport& r, const VerifiedPlanInfo& info) {
  std::ostringstream out;
  out << "memplan verify: " << info.model << " on " << r.device << " (plan from "
      << info.plan_source << ")\n";
  out << "  plan: micro-batch " << r.micro_batch << " x " << r.accumulation_steps
      << " accumulation steps, " << PrecisionName(info.program.precision) << ", "
      << OptimizerKindName(info.program.optimizer) << ", loss " << LossText(r)
      << (info.fused_loss ? " (of the fused linear cross entropy)" : "") << ", recompute "
      << info.recompute.size() << " nodes\n\n";
  out << "memory      predicted " << FormatBytes(r.predicted.peak_bytes) << " ("
      << r.predicted.peak_bytes << " B)  measured " << FormatBytes(r.measured.peak_bytes) << " ("
      << r.measured.peak_bytes << " B)";
  out << (r.measured.peak_bytes == r.predicted.peak_bytes ? "  exact match" : "") << "  "
      << Verdict(r.memory_passed) << "\n";
  out << "            peak at " << r.measured.peak_step_name << "; caching model reserved "
      << FormatBytes(r.measured.caching_peak_reserved_bytes) << " (predicted "
      << FormatBytes(r.predicted_caching.peak_reserved_bytes) << ")\n";
  for (MemoryCategory c : kAllMemoryCategories) {
    if (r.predicted.peak_breakdown[c] == 0 && r.measured.peak_breakdown[c] == 0) continue;
    char line[160];
    std::snprintf(line, sizeof line, "            %-16s predicted %12lld  measured %12lld\n",
                  std::string(MemoryCategoryName(c)).c_str(),
                  static_cast<long long>(r.predicted.peak_breakdown[c]),
                  static_cast<long long>(r.measured.peak_breakdown[c]));
    out << line;
  }
  auto equivalence = [&](const char* name, const EquivalenceResult& e, bool bitwise) {
    out << name;
    if (!e.checked) {
      out << e.note << "\n";
      return;
    }
    if (bitwise) {
      out << (e.passed ? "bitwise identical"
                       : "differ (max rel error " + Number(e.max_rel_error) + ")");
    } else {
      out << "max rel error " << Number(e.max_rel_error) << " (bound " << Number(e.bound) << ")";
    }
    out << "  " << Verdict(e.passed) << "\n            " << e.note << "\n";
  };
  if (r.ranks) {
    out << "ranks       " << r.ranks->ranks << " simulated " << r.ranks->strategy
        << " ranks, measured peaks";
    for (const MemoryMeasurement& m : r.ranks->measured) out << " " << m.peak_bytes;
    out << " B (each against the prediction above)\n";
  }
  equivalence("gradients   ", r.gradient, false);
  if (r.ranks) equivalence("weights     ", r.ranks->weights, false);
  equivalence("recompute   ", r.recompute, true);
  if (r.fused_loss.checked || !r.fused_loss.note.empty())
    equivalence("fused loss  ", r.fused_loss, false);
  out << "loss        ";
  for (size_t i = 0; i < r.steps.size(); ++i) out << (i ? " -> " : "") << Number(r.steps[i].loss);
  if (r.loss_decreased) {
    out << (*r.loss_decreased ? "  falls  PASS" : "  does not fall  FAIL");
  } else {
    out << "  (not enough applied steps to judge)";
  }
  out << "\n";
  for (const LossScalerEvent& e : r.scaler_events)
    out << "scaler      step " << e.step << ": " << e.event << ", scale " << e.scale_before
        << " -> " << e.scale_after << "\n";
  out << "speed       " << Number(r.step_seconds * 1e3) << " ms/step, "
      << Number(r.samples_per_second) << " samples/s\n\n";
  out << "result: " << Verdict(r.passed) << "\n";
  return out.str();
}

}  // namespace memplan::cli
