// Conv / ConvTranspose / pooling shape, cost and saved-for-backward rules. Expected shapes were
// checked once against PyTorch 1.13 (F.conv2d, F.conv_transpose2d, F.max_pool2d, F.avg_pool2d
// with the same arguments); the numbers in comments are the formulas worked by hand.

#include <catch2/catch.hpp>

#include "tests/graph/op_registry_test_helpers.h"

namespace memplan {
namespace {

using namespace memplan::testing;
using Ints = std::vector<int64_t>;

TEST_CASE("Conv output sizes with pads, strides, dilations, groups", "[registry]") {
  SECTION("ResNet stem keeps the symbolic batch") {
    SymbolTable table;
    Dim batch = Dim::Symbol(table.Intern("batch"));
    OpCase conv("Conv", {F32({batch, 3, 224, 224}), Param({64, 3, 7, 7}), Param({64})});
    conv.Attr("strides", Ints{2, 2}).Attr("pads", Ints{3, 3, 3, 3});
    // floor((224 + 3 + 3 - 7) / 2) + 1 = 112; F.conv2d(x, w, stride=2, padding=3) agrees.
    CHECK(conv.OutputShape() == Dims({batch, 64, 112, 112}));
  }
  SECTION("asymmetric strides/dilations with groups") {
    OpCase conv("Conv", {F32({1, 4, 32, 30}), Param({8, 2, 3, 5})});
    conv.Attr("pads", Ints{1, 0, 1, 0})
        .Attr("dilations", Ints{2, 1})
        .Attr("strides", Ints{1, 2})
        .Attr("group", int64_t{2});
    // H: 32 + 1 + 1 - (2*(3-1)+1) = 29, /1 + 1 = 30. W: (30 - 5) / 2 = 12, + 1 = 13.
    // torch: F.conv2d(.., padding=(1,0), dilation=(2,1), stride=(1,2), groups=2) -> [1,8,30,13].
    CHECK(conv.OutputShape() == Dims({1, 8, 30, 13}));
  }
  SECTION("auto_pad SAME_UPPER is ceil(in / stride)") {
    OpCase conv("Conv", {F32({1, 3, 225, 224}), Param({16, 3, 3, 3})});
    conv.Attr("strides", Ints{2, 2}).Attr("auto_pad", std::string("SAME_UPPER"));
    CHECK(conv.OutputShape() == Dims({1, 16, 113, 112}));  // ceil(225/2)=113, 224/2=112
  }
  SECTION("symbolic spatial dims") {
    SymbolTable table;
    Dim h = Dim::Symbol(table.Intern("h"));
    OpCase same("Conv", {F32({1, 3, h, 8}), Param({4, 3, 3, 3})});
    same.Attr("pads", Ints{1, 1, 1, 1});
    // Stride 1: h + 1 + 1 - 3 + 1 = h exactly.
    CHECK(same.OutputShape() == Dims({1, 4, h, 8}));

    OpCase strided("Conv", {F32({1, 3, h, 8}), Param({4, 3, 3, 3})});
    strided.Attr("pads", Ints{1, 1, 1, 1}).Attr("strides", Ints{2, 2}).UseSymbols(table);
    // floor((h - 1) / 2) + 1 has no polynomial form: a fresh symbol, not h and not a constant.
    Shape y = strided.OutputShape();
    REQUIRE(y.rank() == 4);
    CHECK_FALSE(y.dims[2].is_constant());
    CHECK_FALSE(y.dims[2] == h);
    CHECK(y.dims[3] == Dim(4));
  }
  SECTION("errors name the node") {
    OpCase wrong_channels("Conv", {F32({1, 3, 8, 8}), Param({4, 2, 3, 3})});
    const std::string error = wrong_channels.InferError();
    CHECK_THAT(error, Catch::Contains("node 'n' (Conv)"));
    CHECK_THAT(error, Catch::Contains("channels"));

    OpCase too_big("Conv", {F32({1, 3, 2, 2}), Param({4, 3, 3, 3})});
    CHECK_FALSE(too_big.Infer().ok());
  }
}

TEST_CASE("Conv FLOPs and saved tensors", "[registry]") {
  OpCase conv("Conv", {F32({2, 3, 224, 224}), Param({64, 3, 7, 7}), Param({64})});
  conv.Attr("strides", Ints{2, 2}).Attr("pads", Ints{3, 3, 3, 3});
  // 2 * N*Cout*OH*OW * Cin*KH*KW + bias N*Cout*OH*OW
  // = 2 * 2*64*112*112 * 3*7*7 + 2*64*112*112 = 472,055,808 + 1,605,632.
  OpCost cost = conv.Cost();
  CHECK(Eval(cost.flops) == 473661440);
  // Read x (2*3*224*224*4 B) + w (64*3*49*4) + b (64*4); write y (2*64*112*112*4).
  CHECK(Eval(cost.bytes_read) == 2 * 3 * 224 * 224 * 4 + 64 * 3 * 49 * 4 + 64 * 4);
  CHECK(Eval(cost.bytes_written) == 2 * 64 * 112 * 112 * 4);
  // convolution_backward(grad, input, weight, ...): input and weight.
  CHECK(Describe(conv.Saved()) == std::vector<std::string>{"in0", "in1"});

  OpCase frozen("Conv", {F32({1, 3, 8, 8}, ValueKind::kInput),
                         Tensor(DType::kFloat32, {4, 3, 3, 3}, ValueKind::kConstant)});
  CHECK(frozen.Saved().empty());  // nothing requires grad: autograd records nothing
}

TEST_CASE("ConvTranspose output sizes and FLOPs", "[registry]") {
  SECTION("stride 2 upsampling") {
    OpCase deconv("ConvTranspose", {F32({1, 8, 16, 16}), Param({8, 4, 4, 4})});
    deconv.Attr("strides", Ints{2, 2}).Attr("pads", Ints{1, 1, 1, 1});
    // 2*(16-1) + (4-1) + 1 - 1 - 1 = 32; F.conv_transpose2d(.., stride=2, padding=1) agrees.
    CHECK(deconv.OutputShape() == Dims({1, 4, 32, 32}));
    // 2 * elements(X) * W.dims[1]*KH*KW = 2 * (8*16*16) * (4*4*4) = 262,144.
    CHECK(Eval(deconv.Cost().flops) == 262144);
    CHECK(Describe(deconv.Saved()) == std::vector<std::string>{"in0", "in1"});
  }
  SECTION("output_padding and groups") {
    OpCase deconv("ConvTranspose", {F32({1, 8, 16, 16}), Param({8, 2, 3, 3})});
    deconv.Attr("strides", Ints{2, 2})
        .Attr("pads", Ints{1, 1, 1, 1})
        .Attr("output_padding", Ints{1, 1})
        .Attr("group", int64_t{2});
    // Cout = W.dims[1] * group = 4; 2*15 + 1 + 3 - 2 = 32.
    CHECK(deconv.OutputShape() == Dims({1, 4, 32, 32}));
  }
  SECTION("output_shape wins") {
    OpCase deconv("ConvTranspose", {F32({1, 8, 16, 16}), Param({8, 4, 3, 3})});
    deconv.Attr("strides", Ints{2, 2}).Attr("output_shape", Ints{33, 31});
    CHECK(deconv.OutputShape() == Dims({1, 4, 33, 31}));
  }
  SECTION("symbolic batch and spatial stay polynomial") {
    SymbolTable table;
    Dim n = Dim::Symbol(table.Intern("n"));
    Dim h = Dim::Symbol(table.Intern("h"));
    OpCase deconv("ConvTranspose", {F32({n, 8, h, 16}), Param({8, 4, 2, 2})});
    deconv.Attr("strides", Ints{2, 2});
    // 2*(h-1) + 2 = 2h.
    CHECK(deconv.OutputShape() == Dims({n, 4, Dim(2) * h, 32}));
  }
}

TEST_CASE("pooling output sizes", "[registry]") {
  OpCase max_pool("MaxPool", {F32({1, 64, 112, 112})});
  max_pool.Attr("kernel_shape", Ints{3, 3})
      .Attr("strides", Ints{2, 2})
      .Attr("pads", Ints{1, 1, 1, 1});
  CHECK(max_pool.OutputShape() == Dims({1, 64, 56, 56}));  // floor((112+2-3)/2)+1 = 56

  // ceil_mode: ceil((5+2-2)/2)+1 = 4, but the 4th window would start at 6 >= 5 + 1 (inside the
  // right padding only), so PyTorch and ONNX drop it: 3. F.max_pool2d(5x5, 2, 2, 1, ceil) -> 3.
  OpCase ceil_pool("MaxPool", {F32({1, 1, 5, 5})});
  ceil_pool.Attr("kernel_shape", Ints{2, 2})
      .Attr("strides", Ints{2, 2})
      .Attr("pads", Ints{1, 1, 1, 1})
      .Attr("ceil_mode", int64_t{1});
  CHECK(ceil_pool.OutputShape() == Dims({1, 1, 3, 3}));

  OpCase avg("AveragePool", {F32({1, 1, 6, 6})});
  avg.Attr("kernel_shape", Ints{3, 3}).Attr("strides", Ints{2, 2}).Attr("ceil_mode", int64_t{1});
  CHECK(avg.OutputShape() == Dims({1, 1, 3, 3}));  // ceil((6-3)/2)+1 = 3

  OpCase no_kernel("MaxPool", {F32({1, 1, 6, 6})});
  CHECK_FALSE(no_kernel.Infer().ok());
}

TEST_CASE("pooling cost and saved tensors", "[registry]") {
  SECTION("MaxPool without an Indices output keeps int64 indices of Y's shape") {
    OpCase pool("MaxPool", {F32({1, 1, 112, 112})});
    pool.Attr("kernel_shape", Ints{3, 3})
        .Attr("strides", Ints{2, 2})
        .Attr("pads", Ints{1, 1, 1, 1});
    CHECK(Eval(pool.Cost().flops) == 9 * 56 * 56);  // 3*3 compares per output element
    auto saved = pool.Saved();
    REQUIRE(Describe(saved) == std::vector<std::string>{"in0", "extra:indices"});
    CHECK(saved[1].dtype == DType::kInt64);
    CHECK(saved[1].shape == Dims({1, 1, 56, 56}));
  }
  SECTION("MaxPool with Indices output saves that output") {
    OpCase pool("MaxPool", {F32({1, 1, 8, 8})}, /*num_outputs=*/2);
    pool.Attr("kernel_shape", Ints{2, 2}).Attr("strides", Ints{2, 2});
    auto outs = pool.Outputs();
    CHECK(outs[1].dtype == DType::kInt64);
    CHECK(outs[1].shape == Dims({1, 1, 4, 4}));
    CHECK(Describe(pool.Saved()) == std::vector<std::string>{"in0", "out1"});
  }
  SECTION("AveragePool keeps its input") {
    OpCase pool("AveragePool", {F32({1, 1, 8, 8})});
    pool.Attr("kernel_shape", Ints{2, 2});
    CHECK(Describe(pool.Saved()) == std::vector<std::string>{"in0"});
  }
  SECTION("GlobalAveragePool lowers to mean: nothing saved") {
    SymbolTable table;
    Dim n = Dim::Symbol(table.Intern("n"));
    OpCase gap("GlobalAveragePool", {F32({n, 512, 7, 7})});
    CHECK(gap.OutputShape() == Dims({n, 512, 1, 1}));
    CHECK(gap.Saved().empty());
    CHECK(gap.Cost().flops == n * Dim(512 * 49));
  }
}

}  // namespace
}  // namespace memplan
