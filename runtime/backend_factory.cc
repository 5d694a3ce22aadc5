#include "runtime/backend_factory.h"

#include <string>

#include "runtime/cpu/cpu_backend.h"

namespace memplan {

std::vector<std::string_view> BackendNames() {
  std::vector<std::string_view> names{"cpu"};
  for (const BackendRegistration& r : AcceleratorBackends()) names.push_back(r.name);
  return names;
}

Expected<std::unique_ptr<Backend>> MakeBackend(std::string_view name) {
  if (name == "cpu") return std::unique_ptr<Backend>(std::make_unique<CpuBackend>());
  for (const BackendRegistration& r : AcceleratorBackends()) {
    if (r.name == name) return r.make();
  }
  std::string known;
  for (std::string_view n : BackendNames()) known += (known.empty() ? "" : " or ") + std::string(n);
  return MakeError("unknown backend '" + std::string(name) + "': this memplan has " + known);
}

}  // namespace memplan
