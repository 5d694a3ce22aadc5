// Saved-for-backward bytes of a BatchNorm the dynamo exporter's optimizer folded into the Conv
// before it (graph/folded_batch_norm.h), derived by hand from derivatives.yaml for
//
//   x [batch, 3, 8, 8] -> Conv(W [4, 3, 3, 3], pads 1) -> [BatchNorm] -> Relu -> r,  loss = sum(r)
//
// at batch 2, fp32: x is 384 elements = 1,536 B; the Conv's output y and r are 512 elements =
// 2,048 B each; save_mean and save_invstd are [4] fp32 = 16 B each.
//   convolution keeps x (for W's gradient):             1,536
//   native_batch_norm keeps y, save_mean, save_invstd:  2,048 + 16 + 16
//   relu keeps its result r:                            2,048
//   total 5,664 B. Planned as written (no BatchNorm): 1,536 + 2,048 = 3,584 B.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <string>

#include "graph/folded_batch_norm.h"
#include "graph/onnx_metadata.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using testing::ProtoModel;
using testing::SimulateSumLoss;

ProtoModel ConvRelu(bool with_rewriter_metadata) {
  ProtoModel m(/*opset=*/18);
  m.Input("x", onnx::TensorProto::FLOAT, {"batch", 3, 8, 8});
  m.Initializer("conv.weight", onnx::TensorProto::FLOAT, {4, 3, 3, 3});
  auto& conv = m.Node("Conv", {"x", "conv.weight"}, {"getitem"});
  testing::SetInts(conv, "pads", {1, 1, 1, 1});
  testing::SetInts(conv, "kernel_shape", {3, 3});
  if (with_rewriter_metadata) {
    onnx::StringStringEntryProto e;
    e.set_key(std::string(kRewriterRuleNameKey));
    e.set_value("RemoveOptionalBiasFromConv, FuseBatchNormIntoConv, RemoveOptionalBiasFromConv");
    conv.GetReflection()->MutableUnknownFields(&conv)->AddLengthDelimited(kNodeMetadataField,
                                                                          e.SerializeAsString());
  }
  m.Node("Relu", {"getitem"}, {"r"});
  m.Output("r", onnx::TensorProto::FLOAT, {{"batch", 4, 8, 8}});
  return m;
}

TEST_CASE("a BatchNorm folded into its Conv is planned as training runs it", "[batchnorm][saved]") {
  const Graph restored = ConvRelu(true).Import("folded_bn.onnx");
  CHECK(SimulateSumLoss(restored).saved_activation_bytes == 1536 + 2048 + 16 + 16 + 2048);
  const Graph as_written = ConvRelu(false).Import("conv_relu.onnx");
  CHECK(SimulateSumLoss(as_written).saved_activation_bytes == 1536 + 2048);
}

}  // namespace
}  // namespace memplan
