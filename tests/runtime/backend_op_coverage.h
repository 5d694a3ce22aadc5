#pragma once
// A backend's coverage of the op registry (graph/ops): every op of the default domain has the
// backend's implementation or is declared, with the reason, as not executed by it. A new registry
// op without one fails the check until someone writes it or declares the gap; a declared op that
// gains one fails it too, so the list stays true.

#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/ops/op_registry.h"

namespace memplan::testing {

// `gaps` (op type -> why a backend does not execute it) and the default-domain ops no backend runs
// as a kernel of its own: the executor materialises them from constants (runtime/executor.cc,
// ConstantTensor; never a step of the program), or the backend's loss path computes them (the
// loss the program appends, analyzer/program/loss_spec.h, runs in Backend::LossForward).
inline std::map<std::string, std::string> WithOpsNoBackendRuns(
    std::map<std::string, std::string> gaps) {
  gaps.insert({
      {"Constant", "materialised from its attribute by the executor"},
      {"ConstantOfShape", "materialised from its constant shape input by the executor"},
      {"Size", "output known at import (contents), materialised as a constant"},
      {"SoftmaxCrossEntropyLoss", "computed by the backend's loss path"},
  });
  return gaps;
}

// `declared`: op type -> why the backend does not execute it. `implemented`: whether the backend
// has an implementation of a registry op. `what` names that implementation in the messages
// ("a CPU kernel", "a CUDA op").
inline void CheckEveryOpImplementedOrDeclared(
    const std::map<std::string, std::string>& declared,
    const std::function<bool(const OpSchema&)>& implemented, std::string_view what) {
  const OpRegistry& ops = OpRegistry::Get();
  std::vector<std::string> undeclared;
  std::vector<std::string> stale;
  for (const std::string& type : ops.OpTypes()) {
    const OpSchema* op = ops.Find(type);
    if (op == nullptr) continue;  // another domain
    const bool has = implemented(*op);
    const bool is_declared = declared.count(type) > 0;
    if (!has && !is_declared) undeclared.push_back(type);
    if (has && is_declared) stale.push_back(type);
  }
  INFO("registry ops without " << what
                               << " and not declared: " << ::Catch::Detail::stringify(undeclared));
  CHECK(undeclared.empty());
  INFO("declared as not executable but have " << what << ": " << ::Catch::Detail::stringify(stale));
  CHECK(stale.empty());
  // Every declared name is a registry op (a typo would hide a gap).
  for (const auto& [type, why] : declared) {
    INFO(type << ": " << why);
    CHECK(ops.Find(type) != nullptr);
  }
}

}  // namespace memplan::testing
