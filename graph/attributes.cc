#include "graph/attributes.h"

namespace memplan {

namespace {

// The value of attribute `name` when it is present and holds a T, else null: every getter's
// lookup (a present attribute of another type reads as absent).
template <class T>
const T* Find(const std::map<std::string, AttributeValue>& values, const std::string& name) {
  auto it = values.find(name);
  if (it == values.end()) return nullptr;
  return std::get_if<T>(&it->second);
}

}  // namespace

int64_t Attributes::GetInt(const std::string& name, int64_t fallback) const {
  const auto* v = Find<int64_t>(values_, name);
  return v != nullptr ? *v : fallback;
}

double Attributes::GetFloat(const std::string& name, double fallback) const {
  if (const auto* v = Find<double>(values_, name)) return *v;
  if (const auto* i = Find<int64_t>(values_, name)) return static_cast<double>(*i);
  return fallback;
}

std::string Attributes::GetString(const std::string& name, const std::string& fallback) const {
  const auto* v = Find<std::string>(values_, name);
  return v != nullptr ? *v : fallback;
}

std::vector<int64_t> Attributes::GetInts(const std::string& name,
                                         std::vector<int64_t> fallback) const {
  const auto* v = Find<std::vector<int64_t>>(values_, name);
  return v != nullptr ? *v : fallback;
}

std::vector<double> Attributes::GetFloats(const std::string& name,
                                          std::vector<double> fallback) const {
  const auto* v = Find<std::vector<double>>(values_, name);
  return v != nullptr ? *v : fallback;
}

const TensorAttribute* Attributes::GetTensor(const std::string& name) const {
  return Find<TensorAttribute>(values_, name);
}

}  // namespace memplan
