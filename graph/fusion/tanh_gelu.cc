// tanh_gelu: the tanh approximation of GELU,
//   y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))),
// as torch.onnx writes F.gelu(x, approximate="tanh") below opset 20 (checked on torch 1.13):
//   Mul(x, x), Mul(x, .) (the cube), Mul(0.044715, .), Add(x, .), Mul(sqrt(2/pi), .), Tanh,
//   Add(1, .), Mul(x, .), Mul(0.5, .).
// F.gelu keeps only x (gelu_backward(grad, self, "tanh")); read node by node the chain keeps
// x*x, the cube, tanh's output, 1 + tanh and x (about four extra activation-sized tensors).
// Fused into opset-20 Gelu with approximate = "tanh".
//
// tanh_gelu_formula: the same formula written by hand, as GPT-2's gelu_new (Hugging Face's
// NewGELUActivation) does: 0.5 * x * (1.0 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3.0)))),
// exported with Pow(x, 3) and the half applied to x first. Eager autograd runs that op by op and
// saves x, tanh(.), 0.5 * x and 1 + tanh(.) (torch 1.13: 4 activation-sized tensors against
// F.gelu's one), so this form is only fused under FusionSet::kAll (a compiled or fused-kernel run).
//
// tanh_gelu_torchlib: F.gelu(x, approximate="tanh") as torch.onnx's dynamo exporter writes it
// below opset 20 (onnxscript's torch_lib, nn.py _aten_gelu_approximate_tanh, read on onnxscript
// with torch 2.15): Pow(x, 3), Mul(0.044715, .), Add(x, .), Mul(sqrt(2/pi), .), Tanh, Add(., 1),
// Mul(0.5, .), Mul(x, .). The cube is a Pow as in gelu_new, but the half multiplies the gate
// (x * (0.5 * (1 + tanh))), which neither a hand-written formula's usual form (0.5 * x first, as
// gelu_new and BLOOM's GELU write it, traced by either exporter) nor the TorchScript exporter's
// ((x * gate) * 0.5) has. That form is aten::gelu's and keeps x only, so it is fused by default:
// Gemma's, SigLIP's, StarCoder2's and GPTBigCode's gelu_pytorch_tanh exported with dynamo=True.
//
// All accept the constants on either side of a commutative op; tanh_gelu and tanh_gelu_formula
// accept the half applied to x first, to the gate or last.

#include <cmath>
#include <numbers>

#include "graph/fusion/patterns.h"

namespace memplan {
namespace {

constexpr double kKappa = 0.044715;
const double kBeta = std::sqrt(2.0 / std::numbers::pi);

enum class Cube { kProducts, kPow };

// The node computing x^3 from `cube`: x * (x * x) or (x * x) * x, or Pow(x, 3). Returns x and
// adds the cube's nodes to `nodes`.
std::optional<std::string> CubeBase(const ProtoIndex& index, const std::string& cube, Cube form,
                                    std::vector<int>& nodes) {
  auto outer = index.Producer(cube);
  if (!outer || !index.SoleConsumer(cube)) return std::nullopt;
  const auto& o = index.node(*outer);
  if (form == Cube::kPow) {
    if (!IsOp(o, "Pow", 2) || !Near(index.Scalar(o.input(1)), 3.0)) return std::nullopt;
    nodes.push_back(*outer);
    return o.input(0);
  }
  if (!IsOp(o, "Mul", 2)) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const std::string& square = o.input(side);
    const std::string& x = o.input(1 - side);
    auto inner = index.Producer(square);
    if (!inner || !index.SoleConsumer(square)) continue;
    const auto& i = index.node(*inner);
    if (!IsOp(i, "Mul", 2) || i.input(0) != x || i.input(1) != x) continue;
    nodes.push_back(*inner);
    nodes.push_back(*outer);
    return x;
  }
  return std::nullopt;
}

// Which tails a form accepts: any, or only torch_lib's half on the gate.
enum class Tail { kAny, kHalfOnGate };

std::optional<FusionMatch> MatchTanhGeluForm(const ProtoIndex& index, int tanh, Cube form,
                                             Tail accepted) {
  const auto& t = index.node(tanh);
  if (!IsOp(t, "Tanh", 1)) return std::nullopt;
  FusionMatch m;
  // sqrt(2/pi) * inner, feeding only the Tanh.
  auto scaled = index.Producer(t.input(0));
  if (!scaled || !index.SoleConsumer(t.input(0)) || !IsOp(index.node(*scaled), "Mul", 2))
    return std::nullopt;
  auto inner = OtherThanScalar(index.node(*scaled), index, kBeta, /*commutative=*/true);
  if (!inner) return std::nullopt;
  // x + 0.044715 * x^3.
  auto sum = index.Producer(*inner);
  if (!sum || !index.SoleConsumer(*inner) || !IsOp(index.node(*sum), "Add", 2)) return std::nullopt;
  const auto& add = index.node(*sum);
  std::optional<std::string> x;
  for (int side = 0; side < 2 && !x; ++side) {
    const std::string& term = add.input(side);
    auto k = index.Producer(term);
    if (!k || !index.SoleConsumer(term) || !IsOp(index.node(*k), "Mul", 2)) continue;
    auto cube = OtherThanScalar(index.node(*k), index, kKappa, true);
    if (!cube) continue;
    std::vector<int> cube_nodes;
    auto base = CubeBase(index, *cube, form, cube_nodes);
    if (!base || *base != add.input(1 - side)) continue;
    x = base;
    m.nodes = cube_nodes;
    m.nodes.push_back(*k);
  }
  if (!x) return std::nullopt;
  m.nodes.insert(m.nodes.end(), {*sum, *scaled, tanh});
  // 1 + tanh.
  auto one_plus = SoleConsumerOp(index, t.output(0), "Add", 2);
  if (!one_plus || OtherThanScalar(index.node(*one_plus), index, 1.0, true) != t.output(0))
    return std::nullopt;
  m.nodes.push_back(*one_plus);
  auto tail = MatchGeluTail(index, index.node(*one_plus).output(0), *x);
  if (!tail || (accepted == Tail::kHalfOnGate && tail->half != GeluHalf::kOnGate))
    return std::nullopt;
  m.nodes.insert(m.nodes.end(), tail->nodes.begin(), tail->nodes.end());
  m.last = tail->last;
  m.fused = FusedNode("Gelu", "", {*x}, index.node(m.last).output(0));
  SetStringAttribute(m.fused, "approximate", "tanh");
  return m;
}

}  // namespace

std::optional<FusionMatch> MatchTanhGelu(const ProtoIndex& index, int tanh) {
  return MatchTanhGeluForm(index, tanh, Cube::kProducts, Tail::kAny);
}

std::optional<FusionMatch> MatchTanhGeluFormula(const ProtoIndex& index, int tanh) {
  return MatchTanhGeluForm(index, tanh, Cube::kPow, Tail::kAny);
}

std::optional<FusionMatch> MatchTanhGeluTorchLib(const ProtoIndex& index, int tanh) {
  return MatchTanhGeluForm(index, tanh, Cube::kPow, Tail::kHalfOnGate);
}

}  // namespace memplan
