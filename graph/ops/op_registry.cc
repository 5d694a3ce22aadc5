#include "graph/ops/op_registry.h"

#include <string_view>

#include "graph/ops/op_families.h"

namespace memplan {
namespace {

std::string Key(std::string_view domain, std::string_view op_type) {
  // "ai.onnx" and "" name the same default domain.
  std::string d = (domain == "ai.onnx") ? "" : std::string(domain);
  return d + ":" + std::string(op_type);
}

OpCost DefaultCost(const OpContext& ctx) {
  OpCost cost;
  for (const auto& in : ctx.inputs)
    if (in.present && in.shape.known) cost.bytes_read += in.Bytes();
  for (const auto& out : ctx.outputs) {
    if (!out.present || !out.shape.known) continue;
    cost.bytes_written += out.Bytes();
    cost.flops += out.shape.NumElements();
  }
  return cost;
}

std::vector<bool> FloatingInputs(const OpContext& ctx) {
  std::vector<bool> grads;
  for (const auto& in : ctx.inputs)
    grads.push_back(in.present && IsFloating(in.dtype) && in.kind != ValueKind::kConstant);
  return grads;
}

}  // namespace

OpRegistry::OpRegistry() {
  unknown_.op_type = "<unknown>";
  unknown_.is_known = false;
  unknown_.amp = AmpCategory::kFp32Required;
  unknown_.backward_flops_factor = 2.0;
  unknown_.saved_source = "conservative: every input and output saved";
  // The importer falls back to ONNX shape inference, then to input 0's shape, for unknown ops.
  unknown_.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    std::vector<TensorInfo> outs(ctx.node.outputs.size());
    if (!ctx.inputs.empty()) {
      for (auto& o : outs) {
        o.dtype = ctx.inputs[0].dtype;
        o.shape = ctx.inputs[0].shape;
      }
    }
    return outs;
  };
  unknown_.saved_for_backward = [](const OpContext& ctx) {
    std::vector<SavedTensor> saved;
    for (size_t i = 0; i < ctx.inputs.size(); ++i)
      if (ctx.inputs[i].present)
        saved.push_back({SavedTensor::Source::kInput, static_cast<int>(i)});
    for (size_t i = 0; i < ctx.outputs.size(); ++i)
      if (ctx.outputs[i].present)
        saved.push_back({SavedTensor::Source::kOutput, static_cast<int>(i)});
    return saved;
  };
  unknown_.cost = DefaultCost;
  unknown_.gradient_inputs = FloatingInputs;
  unknown_.backward_workspace = [](const OpContext&) { return Dim(0); };

  RegisterShapeOps(*this);
  RegisterElementwiseOps(*this);
  RegisterMatMulOps(*this);
  RegisterRecurrentOps(*this);
  RegisterConvOps(*this);
  RegisterNormalizationOps(*this);
  RegisterPoolingOps(*this);
  RegisterReductionOps(*this);
  RegisterResamplingOps(*this);
  RegisterLossOps(*this);
  RegisterMaskingOps(*this);
  RegisterGeluVariantOps(*this);
  RegisterRmsNormOps(*this);
  RegisterAttentionOps(*this);
  RegisterSdpaOps(*this);
  RegisterFusedLossOps(*this);
}

const OpRegistry& OpRegistry::Get() {
  static const OpRegistry registry;
  return registry;
}

void OpRegistry::Register(OpSchema schema) {
  if (!schema.cost) schema.cost = DefaultCost;
  if (!schema.saved_for_backward)
    schema.saved_for_backward = [](const OpContext&) { return std::vector<SavedTensor>{}; };
  if (!schema.gradient_inputs) schema.gradient_inputs = FloatingInputs;
  if (!schema.backward_workspace)
    schema.backward_workspace = [](const OpContext&) { return Dim(0); };
  MEMPLAN_CHECK(static_cast<bool>(schema.infer_shapes));
  std::string key = Key(schema.domain, schema.op_type);
  MEMPLAN_CHECK(schemas_.count(key) == 0);
  schemas_.emplace(std::move(key), std::move(schema));
}

const OpSchema* OpRegistry::Find(std::string_view op_type, std::string_view domain) const {
  auto it = schemas_.find(Key(domain, op_type));
  return it == schemas_.end() ? nullptr : &it->second;
}

const OpSchema& OpRegistry::FindOrUnknown(std::string_view op_type, std::string_view domain) const {
  const OpSchema* s = Find(op_type, domain);
  return s ? *s : unknown_;
}

std::vector<std::string> OpRegistry::OpTypes() const {
  std::vector<std::string> types;
  for (const auto& [key, schema] : schemas_) types.push_back(schema.op_type);
  return types;
}

std::vector<const OpSchema*> OpRegistry::Schemas() const {
  std::vector<const OpSchema*> schemas;
  for (const auto& [key, schema] : schemas_) schemas.push_back(&schema);
  return schemas;
}

OpContext MakeOpContext(const Graph& graph, NodeId id, SymbolTable* symbols) {
  const Node& node = graph.node(id);
  OpContext ctx{node, {}, {}, symbols};
  auto info = [&](ValueId v) {
    TensorInfo t;
    if (!v.valid()) {
      t.present = false;
      return t;
    }
    const Value& value = graph.value(v);
    t.dtype = value.dtype;
    t.shape = value.shape;
    t.kind = value.kind;
    t.contents = value.contents;
    t.float_values = value.float_values;
    return t;
  };
  for (ValueId v : node.inputs) ctx.inputs.push_back(info(v));
  for (ValueId v : node.outputs) ctx.outputs.push_back(info(v));
  return ctx;
}

namespace {
constexpr std::string_view kContiguousCopyPrefix = "contiguous_input";
}  // namespace

SavedTensor SaveContiguousCopy(const OpContext& ctx, int input) {
  SavedTensor s;
  s.source = SavedTensor::Source::kExtra;
  s.name = std::string(kContiguousCopyPrefix) + std::to_string(input);
  const TensorInfo& in = ctx.inputs.at(static_cast<size_t>(input));
  s.dtype = in.dtype;
  s.shape = in.shape;
  return s;
}

std::optional<int> ContiguousCopyInput(const std::string& saved_name) {
  if (saved_name.size() != kContiguousCopyPrefix.size() + 1 ||
      saved_name.compare(0, kContiguousCopyPrefix.size(), kContiguousCopyPrefix) != 0)
    return std::nullopt;
  const char digit = saved_name.back();
  if (digit < '0' || digit > '9') return std::nullopt;
  return digit - '0';
}

}  // namespace memplan
