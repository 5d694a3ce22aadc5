// Normalisation, reduction, softmax, Pad/Resize and loss rules. Saved sets and statistic shapes
// follow derivatives.yaml and were read back from torch 1.13's grad_fn._saved_* for the same
// shapes: batch_norm result1/result2 (3,), layer_norm result1/result2 (2,3,1) for x [2,3,8],
// group_norm result1/result2 (2,1) for N=2, G=1, instance_norm (via batch_norm on [1,N*C,H,W])
// weight/result1/result2 (6,) for N=2, C=3.

#include <catch2/catch.hpp>

#include "tests/graph/op_registry_test_helpers.h"

namespace memplan {
namespace {

using namespace memplan::testing;
using V = std::vector<std::string>;
using Ints = std::vector<int64_t>;

TEST_CASE("BatchNormalization keeps input, weight, running stats and fp32 mean/invstd",
          "[registry]") {
  SymbolTable table;
  Dim n = Dim::Symbol(table.Intern("n"));
  TensorInfo x = Tensor(DType::kFloat16, {n, 64, 56, 56});
  OpCase bn("BatchNormalization", {x, Param({64}), Param({64}), Param({64}), Param({64})},
            /*num_outputs=*/3);
  auto outs = bn.Outputs();
  CHECK(outs[0].shape == Dims({n, 64, 56, 56}));
  CHECK(outs[0].dtype == DType::kFloat16);
  CHECK(outs[1].shape == Dims({64}));
  CHECK(outs[2].dtype == DType::kFloat32);
  auto saved = bn.Saved();
  REQUIRE(Describe(saved) == V{"in0", "in1", "in3", "in4", "extra:save_mean", "extra:save_invstd"});
  CHECK(saved[4].dtype == DType::kFloat32);  // accumulate type even for an fp16 input
  CHECK(saved[4].shape == Dims({64}));
  CHECK(saved[5].shape == Dims({64}));
  // Running statistics are not trained.
  CHECK(bn.Gradients() == std::vector<bool>{true, true, true, false, false});
  CHECK(bn.Cost().flops == n * Dim(64 * 56 * 56 * 5));
}

TEST_CASE("LayerNormalization statistics have the leading dims", "[registry]") {
  SymbolTable table;
  Dim b = Dim::Symbol(table.Intern("b"));
  Dim s = Dim::Symbol(table.Intern("s"));
  OpCase ln("LayerNormalization", {F32({b, s, 768}), Param({768}), Param({768})});
  auto saved = ln.Saved();
  REQUIRE(Describe(saved) == V{"in0", "in1", "in2", "extra:mean", "extra:rstd"});
  CHECK(saved[3].shape == Dims({b, s, 1}));  // torch: result1 (2,3,1) for x [2,3,8]
  CHECK(saved[3].dtype == DType::kFloat32);
  CHECK(saved[3].shape.NumElements() == b * s);

  // axis=1 on [2,3,8]: statistics [2,1,1]; Mean/InvStdDev outputs are reused when present.
  OpCase with_outputs("LayerNormalization", {F32({2, 3, 8}), Param({3, 8})}, 3);
  with_outputs.Attr("axis", int64_t{1});
  auto outs = with_outputs.Outputs();
  CHECK(outs[1].shape == Dims({2, 1, 1}));
  CHECK(outs[2].dtype == DType::kFloat32);
  CHECK(Describe(with_outputs.Saved()) == V{"in0", "in1", "out1", "out2"});

  OpCase bad_axis("LayerNormalization", {F32({2, 3}), Param({3})});
  bad_axis.Attr("axis", int64_t{2});
  CHECK_FALSE(bad_axis.Infer().ok());
}

TEST_CASE("GroupNormalization and InstanceNormalization statistics", "[registry]") {
  OpCase gn("GroupNormalization", {F32({2, 32, 8, 8}), Param({32}), Param({32})});
  gn.Attr("num_groups", int64_t{8});
  auto saved = gn.Saved();
  REQUIRE(Describe(saved) == V{"in0", "in1", "extra:mean", "extra:rstd"});
  CHECK(saved[2].shape == Dims({2, 8}));  // [N, G]
  OpCase no_groups("GroupNormalization", {F32({2, 32, 8, 8}), Param({32}), Param({32})});
  CHECK_FALSE(no_groups.Infer().ok());

  OpCase in("InstanceNormalization", {F32({2, 3, 8, 8}), Param({3}), Param({3})});
  auto in_saved = in.Saved();
  REQUIRE(Describe(in_saved) ==
          V{"in0", "extra:repeated_weight", "extra:save_mean", "extra:save_invstd"});
  for (size_t i = 1; i < 4; ++i) CHECK(in_saved[i].shape == Dims({6}));  // N*C
}

TEST_CASE("reductions: axes as attribute or input, keepdims, noop", "[registry]") {
  SECTION("attribute axes (opset < 18)") {
    OpCase mean("ReduceMean", {F32({2, 3, 4, 5})});
    mean.Attr("axes", Ints{2, -1});
    CHECK(mean.OutputShape() == Dims({2, 3, 1, 1}));
    mean.Attr("keepdims", int64_t{0});
    CHECK(mean.OutputShape() == Dims({2, 3}));
  }
  SECTION("axes input (ReduceSum-13, others 18)") {
    OpCase sum("ReduceSum", {F32({2, 3, 4}), IntContents({1})});
    sum.Attr("keepdims", int64_t{0});
    CHECK(sum.OutputShape() == Dims({2, 4}));
  }
  SECTION("empty axes reduce everything unless noop_with_empty_axes") {
    OpCase all("ReduceMax", {F32({2, 3})});
    all.Attr("keepdims", int64_t{0});
    CHECK(all.OutputShape() == Dims({}));
    OpCase noop("ReduceSum", {F32({2, 3}), Absent()});
    noop.Attr("noop_with_empty_axes", int64_t{1});
    CHECK(noop.OutputShape() == Dims({2, 3}));
  }
  SECTION("out-of-range axis is an error") {
    OpCase bad("ReduceMean", {F32({2, 3})});
    bad.Attr("axes", Ints{2});
    CHECK_FALSE(bad.Infer().ok());
  }
  SECTION("saved sets: mean/sum nothing, amax self and result") {
    OpCase mean("ReduceMean", {F32({2, 3})});
    CHECK(mean.Saved().empty());
    OpCase sum("ReduceSum", {F32({2, 3})});
    CHECK(sum.Saved().empty());
    OpCase max("ReduceMax", {F32({2, 3})});
    CHECK(Describe(max.Saved()) == V{"in0", "out0"});
    CHECK(Eval(max.Cost().flops) == 6);  // one compare per input element
  }
}

TEST_CASE("Softmax and LogSoftmax keep their output", "[registry]") {
  OpCase softmax("Softmax", {F32({2, 12, 16, 16})});
  CHECK(Describe(softmax.Saved()) == V{"out0"});
  CHECK(Eval(softmax.Cost().flops) == 5 * 2 * 12 * 16 * 16);
  OpCase log_softmax("LogSoftmax", {F32({4, 10})});
  log_softmax.Attr("axis", int64_t{1});
  CHECK(Describe(log_softmax.Saved()) == V{"out0"});
  OpCase bad("Softmax", {F32({4, 10})});
  bad.Attr("axis", int64_t{2});
  CHECK_FALSE(bad.Infer().ok());
}

TEST_CASE("Pad and Resize", "[registry]") {
  SymbolTable table;
  Dim h = Dim::Symbol(table.Intern("h"));
  SECTION("pads input, possibly symbolic") {
    OpCase pad("Pad", {F32({1, 3, h, 8}), IntContents({0, 0, 1, 2, 0, 0, 1, Dim(2) * h})});
    // H: h + 1 + 1; W: 8 + 2 + 2h.
    CHECK(pad.OutputShape() == Dims({1, 3, h + Dim(2), Dim(10) + Dim(2) * h}));
    CHECK(pad.Saved().empty());  // constant_pad_nd keeps nothing
  }
  SECTION("pads attribute (opset < 11) and axes input (opset 18)") {
    OpCase old("Pad", {F32({2, 3})});
    old.Attr("pads", Ints{1, 0, 1, 0});
    CHECK(old.OutputShape() == Dims({4, 3}));
    OpCase axes("Pad", {F32({2, 3, 4}), IntContents({1, 2}), Absent(), IntContents({-1})});
    CHECK(axes.OutputShape() == Dims({2, 3, 7}));
  }
  SECTION("reflect/edge padding keep the input") {
    OpCase reflect("Pad", {F32({1, 3, 8, 8}), IntContents({0, 0, 1, 1, 0, 0, 1, 1})});
    reflect.Attr("mode", std::string("reflect"));
    CHECK(Describe(reflect.Saved()) == V{"in0"});
    CHECK(reflect.Gradients() == std::vector<bool>{true, false});
  }
  SECTION("Resize from sizes; nothing saved") {
    OpCase resize("Resize", {F32({1, 3, 8, 8}), Absent(), Absent(), IntContents({1, 3, 16, 16})});
    CHECK(resize.OutputShape() == Dims({1, 3, 16, 16}));
    CHECK(resize.Saved().empty());
    OpCase from_scales("Resize", {F32({1, 3, 8, 8}), Absent(), F32({4}, ValueKind::kConstant)});
    CHECK_FALSE(from_scales.OutputShape().known);  // scales with no known values
  }
  SECTION("Resize from scales known at import: floor(d * scale)") {
    TensorInfo twice = F32({4}, ValueKind::kConstant);
    twice.float_values = std::vector<double>{1, 1, 2, 2};
    OpCase up("Resize", {F32({h, 3, h, 8}), Absent(), twice});
    // A symbolic dim scales by a whole number exactly.
    CHECK(up.OutputShape() == Dims({h, 3, Dim(2) * h, 16}));
    TensorInfo odd = F32({4}, ValueKind::kConstant);
    odd.float_values = std::vector<double>{1, 1, 1.5, 0.6};
    OpCase fractional("Resize", {F32({1, 3, 7, 8}), Absent(), odd});
    CHECK(fractional.OutputShape() == Dims({1, 3, 10, 4}));  // floor(10.5), floor(4.8)
    OpCase symbolic("Resize", {F32({1, 3, h, 8}), Absent(), odd});
    CHECK_FALSE(symbolic.OutputShape().known);  // h * 1.5 has no Dim
    TensorInfo opset10 = F32({4}, ValueKind::kConstant);
    opset10.float_values = std::vector<double>{1, 1, 2, 2};
    OpCase old("Resize", {F32({1, 3, 8, 8}), opset10});  // Resize-10: (X, scales)
    CHECK(old.OutputShape() == Dims({1, 3, 16, 16}));
  }
}

TEST_CASE("losses", "[registry]") {
  SymbolTable table;
  Dim n = Dim::Symbol(table.Intern("n"));
  SECTION("SoftmaxCrossEntropyLoss keeps log-probs in the scores' dtype and the labels") {
    TensorInfo labels = Tensor(DType::kInt64, {n}, ValueKind::kInput);
    OpCase ce("SoftmaxCrossEntropyLoss", {Tensor(DType::kFloat16, {n, 1000}), labels});
    auto outs = ce.Outputs();
    CHECK(outs[0].shape == Dims({}));
    auto saved = ce.Saved();
    REQUIRE(Describe(saved) == V{"extra:log_prob", "in1"});
    // cross_entropy_loss calls log_softmax(self, dim, self.scalar_type()): half scores, half
    // log-probs (autocast upcasts the scores before the op, which the program shows as a cast).
    CHECK(saved[0].dtype == DType::kFloat16);
    CHECK(saved[0].shape == Dims({n, 1000}));
    CHECK(ce.Gradients() == std::vector<bool>{true, false});

    OpCase none("SoftmaxCrossEntropyLoss", {F32({n, 10, 7}), Tensor(DType::kInt64, {n, 7})}, 2);
    none.Attr("reduction", std::string("none"));
    auto none_outs = none.Outputs();
    CHECK(none_outs[0].shape == Dims({n, 7}));
    CHECK(none_outs[1].shape == Dims({n, 10, 7}));
    CHECK(Describe(none.Saved()) == V{"out1", "in1"});
  }
  SECTION("memplan MseLoss and SumLoss") {
    TensorInfo label = F32({n, 10}, ValueKind::kInput);
    OpCase mse("MseLoss", {F32({n, 10}), label}, 1, "memplan");
    auto outs = mse.Outputs();
    CHECK(outs[0].dtype == DType::kFloat32);
    CHECK(outs[0].shape == Dims({}));
    CHECK(Describe(mse.Saved()) == V{"in0", "in1"});
    CHECK(mse.Gradients() == std::vector<bool>{true, false});
    CHECK(mse.Cost().flops == n * Dim(30));  // sub, square, add per element

    OpCase sum("SumLoss", {F32({n, 10}), label}, 1, "memplan");
    CHECK(sum.OutputShape() == Dims({}));
    CHECK(sum.Saved().empty());

    OpCase mismatch("MseLoss", {F32({4, 10}), F32({4, 3})}, 1, "memplan");
    CHECK_FALSE(mismatch.Infer().ok());
  }
}

}  // namespace
}  // namespace memplan
