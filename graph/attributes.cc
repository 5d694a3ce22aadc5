#include "graph/attributes.h"

namespace memplan {

int64_t Attributes::GetInt(const std::string& name, int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  return fallback;
}

double Attributes::GetFloat(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (const auto* v = std::get_if<double>(&it->second)) return *v;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return fallback;
}

std::string Attributes::GetString(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (const auto* v = std::get_if<std::string>(&it->second)) return *v;
  return fallback;
}

std::vector<int64_t> Attributes::GetInts(const std::string& name,
                                         std::vector<int64_t> fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  return fallback;
}

std::vector<double> Attributes::GetFloats(const std::string& name,
                                          std::vector<double> fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (const auto* v = std::get_if<std::vector<double>>(&it->second)) return *v;
  return fallback;
}

const TensorAttribute* Attributes::GetTensor(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  return std::get_if<TensorAttribute>(&it->second);
}

}  // namespace memplan
