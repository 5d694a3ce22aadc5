// pad_avg_pool: nn.AvgPool{1,2}d with padding and count_include_pad=True (the default) as
// torch.onnx writes it (symbolic_opset9/11 _avg_pool): a zero Pad of the spatial axes, then an
// AveragePool without pads. Fused into one AveragePool with those pads and count_include_pad = 1.
//
// Autograd's avg_pool2d keeps only its input (avg_pool2d_backward(grad, self, ...)), the tensor
// before padding; read node by node, the AveragePool keeps the padded copy, which nothing else
// holds: MaxViT's stride-2 MBConv shortcut (AvgPool2d(3, 2, padding=1)) kept an extra
// [B, C, H+2, W+2] per stage beside the unpadded input its pre-norm BatchNorm keeps anyway.
// The rewrite is exact with ceil_mode = 0: every window then lies inside the padded input, so
// both forms divide by the kernel's size.
//
// Left alone: a non-zero or non-constant pad value, another mode, pads on the batch or channel
// axes or negative, a Pad read elsewhere too, a pool with pads or auto_pad of its own, with
// count_include_pad already set, or with ceil_mode = 1; a 3-D pool at opset 11 and later (its
// pads input has ten entries, more than the index reads as a constant).

#include <cstdint>
#include <vector>

#include "graph/fusion/patterns.h"

namespace memplan {
namespace {

bool IsDefaultDomain(const onnx::NodeProto& n) {
  return n.domain().empty() || n.domain() == "ai.onnx";
}

// The pads of a constant-zero Pad: the `pads` attribute (opset < 11) or the constant input 1.
std::optional<std::vector<int64_t>> ZeroPadPads(const ProtoIndex& index, const onnx::NodeProto& p) {
  if (p.op_type() != "Pad" || !IsDefaultDomain(p) || p.output_size() != 1 || p.input_size() < 1 ||
      p.input_size() > 3)
    return std::nullopt;  // a fourth input is opset 18's axes
  std::optional<std::vector<int64_t>> pads;
  for (const auto& a : p.attribute()) {
    if (a.name() == "mode" && a.s() != "constant") return std::nullopt;
    if (a.name() == "value" && a.f() != 0.0f) return std::nullopt;
    if (a.name() == "pads") pads = std::vector<int64_t>(a.ints().begin(), a.ints().end());
  }
  if (p.input_size() >= 2 && !p.input(1).empty()) {
    if (pads) return std::nullopt;  // both forms: not a node an exporter writes
    pads = index.Integers(p.input(1));
  }
  if (p.input_size() == 3 && !p.input(2).empty()) {
    const std::optional<double> value = index.Scalar(p.input(2));
    if (!value || *value != 0.0) return std::nullopt;
  }
  return pads;
}

}  // namespace

std::optional<FusionMatch> MatchPadAvgPool(const ProtoIndex& index, int pad) {
  const auto& p = index.node(pad);
  const std::optional<std::vector<int64_t>> pads = ZeroPadPads(index, p);
  if (!pads || pads->size() < 6 || pads->size() % 2 != 0) return std::nullopt;
  const size_t rank = pads->size() / 2;
  if ((*pads)[0] != 0 || (*pads)[1] != 0 || (*pads)[rank] != 0 || (*pads)[rank + 1] != 0)
    return std::nullopt;  // only the spatial axes are padded
  for (int64_t v : *pads)
    if (v < 0) return std::nullopt;
  auto pool = SoleConsumerOp(index, p.output(0), "AveragePool", 1);
  if (!pool) return std::nullopt;
  const auto& a = index.node(*pool);
  onnx::NodeProto fused = FusedNode("AveragePool", "", {p.input(0)}, a.output(0));
  bool has_kernel = false;
  for (const auto& attr : a.attribute()) {
    if (attr.name() == "auto_pad" && attr.s() != "NOTSET") return std::nullopt;
    if (attr.name() == "count_include_pad" && attr.i() != 0) return std::nullopt;
    if (attr.name() == "ceil_mode" && attr.i() != 0) return std::nullopt;
    if (attr.name() == "kernel_shape") {
      if (static_cast<size_t>(attr.ints_size()) + 2 != rank) return std::nullopt;
      has_kernel = true;
    }
    if (attr.name() == "pads") {
      for (int64_t v : attr.ints())
        if (v != 0) return std::nullopt;
      continue;  // replaced below
    }
    if (attr.name() == "count_include_pad") continue;
    *fused.add_attribute() = attr;
  }
  if (!has_kernel) return std::nullopt;
  std::vector<int64_t> spatial;
  for (size_t i = 2; i < rank; ++i) spatial.push_back((*pads)[i]);
  for (size_t i = 2; i < rank; ++i) spatial.push_back((*pads)[rank + i]);
  SetIntsAttribute(fused, "pads", spatial);
  SetIntAttribute(fused, "count_include_pad", 1);
  FusionMatch m;
  m.nodes = {pad, *pool};
  m.last = *pool;
  m.fused = std::move(fused);
  return m;
}

}  // namespace memplan
