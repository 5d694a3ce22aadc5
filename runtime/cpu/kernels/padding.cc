// Pad in the four ONNX modes: "constant" (torch's constant_pad_nd; negative pads crop), "reflect"
// (reflection_pad: mirrored without repeating the edge), "edge" (replication_pad) and "wrap"
// (circular). pads, constant_value and axes come from inputs (opsets 11 and 18) or the older
// attributes. Along each axis an output coordinate reads one input coordinate or, in constant
// mode, none (the constant); an element reads the input where every axis does. Backward adds each
// output gradient onto the input element it read, in output order (deterministic).

#include <string>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

// The input coordinate output coordinate `out` of an axis reads: `out - begin` mapped into
// [0, extent) by the mode, or -1 where constant padding reads none.
int64_t SourceCoordinate(const std::string& mode, int64_t out, int64_t begin, int64_t extent) {
  int64_t i = out - begin;
  if (i >= 0 && i < extent) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : extent - 1;
  if (mode == "wrap") return ((i % extent) + extent) % extent;
  // reflect: period 2 (extent - 1), the edge element not repeated.
  if (extent == 1) return 0;
  const int64_t period = 2 * (extent - 1);
  i = ((i % period) + period) % period;
  return i < extent ? i : period - i;
}

// Per output element the flat input offset it reads, or -1 for the constant.
struct PadPlan {
  TensorShape output;
  std::vector<int64_t> source;  // by output element
  float value = 0.0f;
};

Expected<PadPlan> PlanPad(const Attributes& attrs, const std::vector<Tensor>& inputs,
                          const TensorShape& x) {
  const std::string mode = attrs.GetString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return MakeError("Pad: unknown mode '" + mode + "'");
  const IntList pads = IntsFromInputOrAttribute(inputs, 1, attrs, "pads");
  if (!pads.found) return MakeError("Pad: the pads are missing");
  const auto rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes;
  const IntList listed = IntsFromInputOrAttribute(inputs, 3, attrs, "axes");
  for (int64_t a : listed.found ? listed.values : std::vector<int64_t>{}) {
    MEMPLAN_TRY(int64_t axis, NormalizeAxis(a, rank, "Pad"));
    axes.push_back(axis);
  }
  if (!listed.found)
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  if (pads.values.size() != 2 * axes.size())
    return MakeError("Pad: " + std::to_string(pads.values.size()) + " pads for " +
                     std::to_string(axes.size()) + " axes");
  std::vector<int64_t> begin(x.size(), 0), end(x.size(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    begin[static_cast<size_t>(axes[i])] = pads.values[i];
    end[static_cast<size_t>(axes[i])] = pads.values[i + axes.size()];
  }
  PadPlan plan;
  std::vector<std::vector<int64_t>> coordinate(x.size());  // per axis, per output coordinate
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t extent = begin[d] + x[d] + end[d];
    if (extent < 0) return MakeError("Pad: padding makes axis " + std::to_string(d) + " negative");
    if (mode != "constant" && x[d] == 0 && extent > 0)
      return MakeError("Pad: mode '" + mode + "' cannot pad an empty axis");
    plan.output.push_back(extent);
    for (int64_t o = 0; o < extent; ++o)
      coordinate[d].push_back(SourceCoordinate(mode, o, begin[d], x[d]));
  }
  const std::vector<int64_t> strides = ContiguousStrides(x);
  plan.source = PerElement(plan.output, [&](const std::vector<int64_t>& at, size_t) {
    int64_t offset = 0;
    for (size_t d = 0; d < x.size() && offset >= 0; ++d) {
      const int64_t c = coordinate[d][static_cast<size_t>(at[d])];
      offset = c < 0 ? -1 : offset + c * strides[d];
    }
    return offset;
  });
  const Tensor value = OptionalTensor(inputs, 2);
  if (value.defined() && value.numel() >= 1) {
    plan.value = value.data()[0];
  } else {
    plan.value = static_cast<float>(attrs.GetFloat("value", 0.0));
  }
  return plan;
}

Expected<ForwardResult> PadForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Pad", "input"));
  MEMPLAN_TRY(PadPlan plan, PlanPad(AttributesOf(args.attributes), args.inputs, x.shape()));
  Tensor y = NewOverwrittenOutput(ctx, plan.output, x.dtype());
  float* out = y.mutable_data();
  for (size_t e = 0; e < plan.source.size(); ++e)
    out[e] = plan.source[e] < 0 ? plan.value : x.data()[plan.source[e]];
  return RoundedSingleOutput(std::move(y));
}

Expected<InputGradients> PadBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return FirstInputBackward(args, 1, "Pad", [&](const Tensor& dy) -> Expected<Tensor> {
    MEMPLAN_TRY(PadPlan plan,
                PlanPad(AttributesOf(args.attributes), args.inputs, args.input_shapes[0]));
    if (NumElements(plan.output) != dy.numel())
      return MakeError("Pad: the output gradient does not match the padded shape");
    Tensor dx = NewInputGradient(ctx, args, 0);
    float* out = dx.mutable_data();
    for (size_t e = 0; e < plan.source.size(); ++e)
      if (plan.source[e] >= 0) out[plan.source[e]] += dy.data()[e];
    return dx;
  });
}

}  // namespace

void RegisterPaddingKernels(KernelRegistry& registry) {
  registry.Register("Pad", &PadForward, &PadBackward);
}

}  // namespace memplan
