#include "analyzer/program/loss_scaling.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

namespace memplan {
namespace {

// A finite positive number spelled completely by `text` (no trailing characters).
std::optional<double> ParseNumber(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::string copy(text);
  char* end = nullptr;
  double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(value) || value <= 0) return std::nullopt;
  return value;
}

}  // namespace

Expected<LossScaling> ParseLossScaling(std::string_view text) {
  if (text == "none") return LossScaling{LossScalingMode::kNone, kDefaultInitialLossScale};
  if (text == "dynamic") return LossScaling{LossScalingMode::kDynamic, kDefaultInitialLossScale};
  std::string_view scale_text = text;
  constexpr std::string_view kStaticPrefix = "static:";
  if (text.substr(0, kStaticPrefix.size()) == kStaticPrefix)
    scale_text = text.substr(kStaticPrefix.size());
  if (auto scale = ParseNumber(scale_text)) {
    // torch's GradScaler keeps its scale in a float32 tensor: a larger one is inf there, and
    // every scaled gradient with it (the plan readers refuse the same, plan_json_fields.cc).
    if (*scale > static_cast<double>(std::numeric_limits<float>::max()))
      return MakeError("loss scaling '" + std::string(text) +
                       "': a loss scale is a positive float32 (at most 3.4e38)");
    return LossScaling{LossScalingMode::kStatic, *scale};
  }
  return MakeError("loss scaling '" + std::string(text) +
                   "' is not one of none, dynamic, static:<scale> or a positive scale such as "
                   "1024");
}

}  // namespace memplan
