// The names graph/torch_scoped_names.h gives a dynamo export's nodes fold back into the module
// paths torch recorded (analyzer/recompute/checkpoint_modules.h), so a dynamo export has the same
// checkpoint units as a TorchScript export of the model.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "analyzer/recompute/checkpoint_modules.h"
#include "graph/torch_scoped_names.h"

namespace memplan {
namespace {

using Strings = std::vector<std::string>;

// The generated name of a node whose recorded scopes are `scopes` (the FX name last), folded
// back: the recorded module paths, the root left out.
Strings RoundTrip(const Strings& scopes) {
  std::optional<std::string> name = TorchScopedName(scopes, "node_x");
  REQUIRE(name.has_value());
  return ModuleScopesOfNode(*name);
}

TEST_CASE("a dynamo node's generated name folds back to its recorded module paths",
          "[recompute][scopes]") {
  CHECK(RoundTrip({"", "h.0", "h.0.fc1", "linear"}) == Strings{"h.0", "h.0.fc1"});
  CHECK(RoundTrip({"", "layer3", "layer3.1", "layer3.1.conv1", "conv2d"}) ==
        Strings{"layer3", "layer3.1", "layer3.1.conv1"});
  CHECK(RoundTrip({"", "stages.0", "stages.0.blocks", "stages.0.blocks.1", "add"}) ==
        Strings{"stages.0", "stages.0.blocks", "stages.0.blocks.1"});
  CHECK(RoundTrip({"", "model", "model.layers.0", "model.layers.0.mlp", "mul"}) ==
        Strings{"model", "model.layers.0", "model.layers.0.mlp"});
  // The checkpoint unit is the shallowest indexed module, as for "/h.5/attn/MatMul".
  CHECK(CheckpointModuleForNode(*TorchScopedName(
            Strings{"", "model", "model.layers.3", "model.layers.3.self_attn", "matmul"},
            "node_matmul")) == "model.layers.3");
}

}  // namespace
}  // namespace memplan
