// verify's initial biases (runtime/weight_init.h): a Conv, ConvTranspose or Gemm bias is drawn as
// torch's reset_parameters draws it, uniform(+-1/sqrt(fan_in)); other rank-1 biases start at 0.
// With zero biases SqueezeNet's plain Conv + ReLU stack shrank the logits to 7.9e-7 and verify's
// loss stayed ln 10 (docs/measurements.md, issue 44's seventh pass).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "runtime/weight_init.h"
#include "tests/graph/hand_built_graph.h"

namespace memplan {
namespace {

TEST_CASE("a Conv or Gemm bias starts uniform within 1/sqrt(fan_in), as torch's", "[weights]") {
  Graph g;
  auto param = [&](const std::string& name, std::vector<Dim> dims) {
    return testing::NewValue(g, name, Shape{std::move(dims)}, ValueKind::kParameter,
                             DType::kFloat32);
  };
  auto act = [&](const std::string& name) {
    return testing::NewValue(g, name, Shape{{2, 4}}, ValueKind::kIntermediate, DType::kFloat32);
  };
  // Conv weight [4 out, 2 in, 3, 3]: fan_in = 2 * 3 * 3 = 18.
  ValueId conv_w = param("conv.weight", {4, 2, 3, 3}), conv_b = param("conv.bias", {4});
  testing::NewNode(g, "conv", "Conv", {act("x"), conv_w, conv_b}, {act("c")});
  // ConvTranspose weight [2 in, 6 out, 2, 2]: torch reads shape[1:], fan_in = 6 * 2 * 2 = 24.
  ValueId up_w = param("up.weight", {2, 6, 2, 2}), up_b = param("up.bias", {6});
  testing::NewNode(g, "up", "ConvTranspose", {act("c2"), up_w, up_b}, {act("u")});
  // Gemm B [5 out, 7 in] under transB = 1 (torch's Linear): fan_in = 7.
  ValueId fc_w = param("fc.weight", {5, 7}), fc_b = param("fc.bias", {5});
  Attributes trans_b;
  trans_b.Set("transB", int64_t{1});
  testing::NewNode(g, "fc", "Gemm", {act("h"), fc_w, fc_b}, {act("y")}, trans_b);
  // LayerNorm's bias (beta) is no layer's: 0.
  ValueId ln_b = param("ln.bias", {4});
  testing::NewNode(g, "ln", "LayerNormalization", {act("z"), param("ln.weight", {4}), ln_b},
                   {act("n")});

  CHECK(LayerBiasFanIn(g, conv_b) == 18);
  CHECK(LayerBiasFanIn(g, up_b) == 24);
  CHECK(LayerBiasFanIn(g, fc_b) == 7);
  CHECK_FALSE(LayerBiasFanIn(g, ln_b).has_value());
  CHECK_FALSE(LayerBiasFanIn(g, conv_w).has_value());  // a weight is input 1, not the bias

  // 1/sqrt(18) = 0.2357: every value inside the bound, and not all zero.
  const std::vector<float> conv = InitialParameterValues(g.value(conv_b), {4}, 7, 18);
  const float conv_bound = 1.0f / std::sqrt(18.0f);
  CHECK(std::all_of(conv.begin(), conv.end(), [&](float v) { return std::fabs(v) <= conv_bound; }));
  CHECK(std::any_of(conv.begin(), conv.end(), [](float v) { return v != 0.0f; }));
  const std::vector<float> ln = InitialParameterValues(g.value(ln_b), {4}, 7);
  CHECK(ln == std::vector<float>(4, 0.0f));
}

}  // namespace
}  // namespace memplan
