// Values libonnx 1.12's shape inference divides or loops by (issue 45): each is refused before
// libonnx runs, as one error line naming the node. Every model below killed the process before the
// guard (graph/libonnx_crash_guards.h); python3-onnx 1.12, the same library, still dies on them:
// `onnx.shape_inference.infer_shapes(m, data_prop=True)` gives SIGFPE for the zero strides,
// SIGSEGV for a Slice step of 2^31 and std::bad_alloc (unbounded growth) for INT64_MIN.

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tests/graph/import_test_util.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using onnx::TensorProto;
using testing::ProtoDim;
using testing::ProtoModel;

// y = op(x[1, 3, 8, 8]) with a 3x3 weight for Conv; `strides` etc. set by the caller.
ProtoModel WindowModel(const std::string& op, onnx::NodeProto** node,
                       std::optional<std::vector<ProtoDim>> output_dims = std::nullopt) {
  ProtoModel m(/*opset=*/13);
  m.Input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}});
  std::vector<std::string> inputs = {"x"};
  if (op == "Conv") {
    m.Initializer("W", TensorProto::FLOAT, {4, 3, 3, 3});
    inputs.push_back("W");
  }
  *node = &m.Node(op, inputs, {"y"});
  m.Output("y", TensorProto::FLOAT, output_dims);
  return m;
}

TEST_CASE("a zero stride, dilation or kernel in Conv and pools is refused before libonnx",
          "[import][bad-input]") {
  onnx::NodeProto* n = nullptr;
  {
    ProtoModel m = WindowModel("Conv", &n);
    testing::SetInts(*n, "strides", {0, 1});
    CHECK(m.ImportError("conv_stride0.onnx") ==
          "node 'y_node' (Conv): strides[0] is 0; strides must be positive");
  }
  {
    ProtoModel m = WindowModel("Conv", &n);
    testing::SetInts(*n, "strides", {1, 0});
    testing::SetString(*n, "auto_pad", "SAME_UPPER");
    CHECK(m.ImportError("conv_same_stride0.onnx") ==
          "node 'y_node' (Conv): strides[1] is 0; strides must be positive");
  }
  {
    ProtoModel m = WindowModel("Conv", &n);
    testing::SetInts(*n, "dilations", {1, -2});
    CHECK(m.ImportError("conv_dilation.onnx") ==
          "node 'y_node' (Conv): dilations[1] is -2; dilations must be positive");
  }
  for (const char* pool : {"MaxPool", "AveragePool", "LpPool"}) {
    INFO(pool);
    ProtoModel m = WindowModel(pool, &n);
    testing::SetInts(*n, "kernel_shape", {2, 2});
    testing::SetInts(*n, "strides", {0, 1});
    CHECK(m.ImportError(std::string(pool) + "_stride0.onnx") ==
          "node 'y_node' (" + std::string(pool) + "): strides[0] is 0; strides must be positive");
  }
  {
    ProtoModel m = WindowModel("MaxPool", &n);
    testing::SetInts(*n, "kernel_shape", {0, 2});
    CHECK(m.ImportError("maxpool_kernel0.onnx") ==
          "node 'y_node' (MaxPool): kernel_shape[0] is 0; kernel_shape must be positive");
  }
  {
    ProtoModel m = WindowModel("AveragePool", &n);
    testing::SetInts(*n, "kernel_shape", {2, 2});
    testing::SetInts(*n, "pads", {0, -1, 0, 0});
    CHECK(m.ImportError("avgpool_negative_pad.onnx") ==
          "node 'y_node' (AveragePool): pads[1] is -1; pads must be non-negative");
  }
  {
    // The guard refuses nothing valid: stride 2 on 8 gives (8 - 2) / 2 + 1 = 4.
    ProtoModel m = WindowModel(
        "MaxPool", &n, std::vector<ProtoDim>{int64_t{1}, int64_t{3}, int64_t{4}, int64_t{4}});
    testing::SetInts(*n, "kernel_shape", {2, 2});
    testing::SetInts(*n, "strides", {2, 2});
    Graph graph = m.Import("maxpool_ok.onnx");
    CHECK(testing::ShapeOf(graph, "y") == "[1, 3, 4, 4]");
  }
}

TEST_CASE("a blocksize of 0 is refused before libonnx", "[import][bad-input]") {
  ProtoModel m(/*opset=*/13);
  m.Input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{16}, int64_t{8}, int64_t{8}});
  testing::SetInt(m.Node("DepthToSpace", {"x"}, {"y"}), "blocksize", 0);
  m.Output("y", TensorProto::FLOAT);
  CHECK(m.ImportError("depth_to_space0.onnx") ==
        "node 'y_node' (DepthToSpace): blocksize is 0; it must be positive");
}

// y = Reshape(x, Concat(t, tail)), t = Slice(Shape(x), [start], [end], [0], [step]): libonnx's
// data propagation computes t's values with the step. x is [2, 16, 8, 8].
ProtoModel ShapeSliceModel(int64_t step, int64_t start, int64_t end, bool constant_node,
                           std::vector<int64_t> tail = {},
                           std::optional<std::vector<ProtoDim>> output_dims = std::nullopt) {
  ProtoModel m(/*opset=*/13);
  m.Input("x", TensorProto::FLOAT, {int64_t{2}, int64_t{16}, int64_t{8}, int64_t{8}});
  m.Int64s("starts", {start});
  m.Int64s("ends", {end});
  m.Int64s("axes", {0});
  m.Int64s("tail", tail);
  if (constant_node) {
    testing::SetInts(m.Node("Constant", {}, {"steps"}), "value_ints", {step});
  } else {
    m.Int64s("steps", {step});
  }
  m.Node("Shape", {"x"}, {"s"});
  m.Node("Slice", {"s", "starts", "ends", "axes", "steps"}, {"t"});
  testing::SetInt(m.Node("Concat", {"t", "tail"}, {"t2"}), "axis", 0);
  m.Node("Reshape", {"x", "t2"}, {"y"});
  m.Output("y", TensorProto::FLOAT, output_dims);
  return m;
}

TEST_CASE("Slice steps libonnx's data propagation cannot take are refused before it runs",
          "[import][bad-input]") {
  const int64_t max = std::numeric_limits<int64_t>::max();
  const int64_t min = std::numeric_limits<int64_t>::min();
  // INT64_MIN from the last element backwards: libonnx allocated without bound (10 GB in 29 s).
  CHECK(ShapeSliceModel(min, max, min, false).ImportError("slice_step_min.onnx") ==
        "node 't_node' (Slice): step -9223372036854775808 (steps[0]) is beyond +-(2^31-1); no "
        "dimension is that long");
  // 2^31 wraps to INT32_MIN in libonnx's int: SIGSEGV. Here the step is a Constant node's.
  CHECK(ShapeSliceModel(int64_t{1} << 31, 0, 4, true).ImportError("slice_step_2_31.onnx") ==
        "node 't_node' (Slice): step 2147483648 (steps[0]) is beyond +-(2^31-1); no dimension is "
        "that long");
  CHECK(ShapeSliceModel(0, 0, 4, false).ImportError("slice_step0.onnx") ==
        "node 't_node' (Slice): step 0 (steps[0]) is 0; a Slice step must not be 0");
  // What exporters write imports. x.flip() of the shape (INT64_MAX down to INT64_MIN by -1):
  // t = [8, 8, 16, 2], 2048 elements as x has.
  const std::vector<ProtoDim> reversed = {int64_t{8}, int64_t{8}, int64_t{16}, int64_t{2}};
  CHECK(testing::ShapeOf(
            ShapeSliceModel(-1, max, min, false, {}, reversed).Import("slice_reverse.onnx"), "y") ==
        "[8, 8, 16, 2]");
  // The largest step the guard lets through: t = [2] (only element 0), then [2, 1024].
  const std::vector<ProtoDim> rows = {int64_t{2}, int64_t{1024}};
  CHECK(testing::ShapeOf(
            ShapeSliceModel(2147483647, 0, 4, false, {1024}, rows).Import("slice_big.onnx"), "y") ==
        "[2, 1024]");
}

TEST_CASE("an integer Div or Mod by zero in a shape computation names the node",
          "[import][bad-input]") {
  // y = Reshape(x, Shape(x) op [1, 0]): seq // 0 used to leave the target unknown, a generated
  // unk_N symbol the user was then asked to bind.
  for (const char* op : {"Div", "Mod"}) {
    INFO(op);
    ProtoModel m(/*opset=*/13);
    m.Input("x", TensorProto::FLOAT, {std::string("batch"), int64_t{8}});
    m.Int64s("k", {1, 0});
    m.Node("Shape", {"x"}, {"s"});
    m.Node(op, {"s", "k"}, {"d"});
    m.Node("Reshape", {"x", "d"}, {"y"});
    m.Output("y", TensorProto::FLOAT, std::vector<ProtoDim>{std::string("batch"), int64_t{8}});
    CHECK(m.ImportError(std::string(op) + "_by_zero.onnx") ==
          "node 'd_node' (" + std::string(op) +
              "): an integer division by zero in a shape computation");
  }
}

}  // namespace
}  // namespace memplan
