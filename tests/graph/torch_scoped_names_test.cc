// Node names of dynamo exports (graph/torch_scoped_names.h): the module scopes torch.onnx.export
// (dynamo=True) records in pkg.torch.onnx.name_scopes become TorchScript-style names at import.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/onnx_metadata.h"
#include "graph/torch_scoped_names.h"
#include "tests/graph/import_test_util.h"

namespace memplan {
namespace {

using Strings = std::vector<std::string>;

TEST_CASE("repr() of a list of module paths parses, anything else does not", "[import][scopes]") {
  CHECK(ParsePythonStringList("['', 'h.0', 'h.0.fc1', 'linear']") ==
        Strings{"", "h.0", "h.0.fc1", "linear"});
  CHECK(ParsePythonStringList("[]") == Strings{});
  CHECK(ParsePythonStringList("[\"a\", 'b']") == Strings{"a", "b"});
  CHECK_FALSE(ParsePythonStringList("['a', 'b'").has_value());  // unclosed list
  CHECK_FALSE(ParsePythonStringList("['a' 'b']").has_value());  // no comma
  CHECK_FALSE(ParsePythonStringList("['a\\'b']").has_value());  // an escape
  CHECK_FALSE(ParsePythonStringList("[1, 2]").has_value());     // not strings
  CHECK_FALSE(ParsePythonStringList("['a', 'b]").has_value());  // unterminated string
}

TEST_CASE("the scopes become the TorchScript exporter's node name", "[import][scopes]") {
  // A child is written relative to its module; an index qualified from the enclosing segment,
  // as the TorchScript exporter writes "/layer3/layer3.1/conv1/Conv".
  CHECK(TorchScopedName(Strings{"", "h.0", "h.0.fc1", "linear"}, "node_linear") ==
        "/h.0/fc1/node_linear");
  CHECK(TorchScopedName(Strings{"", "layer3", "layer3.1", "layer3.1.conv1", "conv2d"}, "n") ==
        "/layer3/layer3.1/conv1/n");
  CHECK(TorchScopedName(Strings{"", "stages.0", "stages.0.blocks", "stages.0.blocks.1", "add"},
                        "node_add") == "/stages.0/blocks/blocks.1/node_add");
  CHECK(TorchScopedName(Strings{"", "model", "model.layers.0", "model.layers.0.mlp", "mul"},
                        "node_mul") == "/model/layers.0/mlp/node_mul");
  // Run in the root module only, scopes that do not nest, a name with '/': kept as exported.
  CHECK_FALSE(TorchScopedName(Strings{"", "add"}, "node_add").has_value());
  CHECK_FALSE(
      TorchScopedName(Strings{"_empty_nn_module_stack_from_metadata_hook", "sym_size_int_3"},
                      "node_Shape_0")
          .has_value());
  CHECK_FALSE(TorchScopedName(Strings{"", "a", "b.c", "x"}, "node_x").has_value());
  CHECK_FALSE(TorchScopedName(Strings{"", "a", "x"}, "/a/x").has_value());
}

TEST_CASE("node metadata this protobuf may not know is read", "[import][scopes]") {
  // NodeProto.metadata_props is field 9 (IR 10), an unknown field to Debian 12's libonnx.
  onnx::NodeProto node;
  node.set_name("node_linear_1");
  onnx::StringStringEntryProto e;
  e.set_key(std::string(kTorchNameScopesKey));
  e.set_value("['', 'blocks', 'blocks.0', 'blocks.0.fc1', 'linear_1']");
  node.GetReflection()->MutableUnknownFields(&node)->AddLengthDelimited(kNodeMetadataField,
                                                                        e.SerializeAsString());
  CHECK(TorchScopedName(node) == "/blocks/blocks.0/fc1/node_linear_1");
  onnx::NodeProto bare;
  bare.set_name("node_add");
  CHECK_FALSE(TorchScopedName(bare).has_value());
}

TEST_CASE("a dynamo export's nodes are named after their modules", "[import][scopes]") {
  // tests/fixtures/make_dynamo_scoped_fixture.py: inp, blocks = Sequential(Block, Block) of
  // fc1 -> relu -> fc2, head; exported by torch 2.15 with dynamo=True.
  const Graph graph = testing::ImportFixture("dynamo_scoped_blocks.onnx");
  Strings names;
  for (const Node& node : graph.nodes()) names.push_back(node.name);
  CHECK(names == Strings{"/inp/node_linear", "/blocks/blocks.0/fc1/node_linear_1",
                         "/blocks/blocks.0/node_relu", "/blocks/blocks.0/fc2/node_linear_2",
                         "/blocks/blocks.1/fc1/node_linear_3", "/blocks/blocks.1/node_relu_1",
                         "/blocks/blocks.1/fc2/node_linear_4", "/head/node_linear_5"});
}

}  // namespace
}  // namespace memplan
