// The registry's training-behaviour flags the executor and verify read instead of op names:
// which ops draw random numbers in training (torch.nn.Dropout, F.scaled_dot_product_attention
// with dropout_p) and which normalise over the batch (torch.nn.BatchNorm in train mode), so that
// accumulating k micro-batches of m differs from one batch of k*m.

#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "graph/ops/op_registry.h"
#include "graph/ops/sdpa_op.h"

namespace memplan {
namespace {

std::set<std::string> OpsWhere(bool OpSchema::*flag) {
  std::set<std::string> ops;
  for (const OpSchema* schema : OpRegistry::Get().Schemas())
    if (schema->*flag) ops.insert(schema->op_type);
  return ops;
}

TEST_CASE("Dropout, the fused attention and the random draws are the stochastic ops",
          "[registry]") {
  CHECK(OpsWhere(&OpSchema::stochastic) ==
        std::set<std::string>{"Bernoulli", "Dropout", "RandomNormalLike", "RandomUniformLike",
                              std::string(sdpa::kOpType)});
}

TEST_CASE("BatchNormalization alone couples the samples of a batch", "[registry]") {
  // GroupNorm, InstanceNorm and LayerNorm normalise within one sample.
  CHECK(OpsWhere(&OpSchema::couples_batch) == std::set<std::string>{"BatchNormalization"});
}

}  // namespace
}  // namespace memplan
