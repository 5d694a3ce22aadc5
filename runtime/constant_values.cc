#include "runtime/constant_values.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "graph/ops/op_registry.h"
#include "runtime/program_shapes.h"
#include "runtime/range_sequence.h"
#include "runtime/weight_init.h"

namespace memplan {

Expected<DeviceTensor> ConstantValues::Get(ValueId u) {
  if (auto it = constants_.find(u.index()); it != constants_.end()) return it->second;
  const Value& v = g_.value(u);
  std::vector<float> values;
  std::optional<TensorShape> shape;
  if (v.shape.known) {
    auto s = EvaluateShape(v.shape, bindings_);
    if (s.ok()) shape = *s;
  }
  const Node* producer = v.producer.valid() ? &g_.node(v.producer) : nullptr;
  using HostValue = OpSchema::HostValue;
  const HostValue host_value =
      producer != nullptr
          ? OpRegistry::Get().FindOrUnknown(producer->op_type, producer->domain).host_value
          : HostValue::kComputed;
  if (v.contents) {
    for (const Dim& d : *v.contents) {
      MEMPLAN_TRY(int64_t x, d.Evaluate(bindings_));
      values.push_back(static_cast<float>(x));
    }
  } else if (!v.integer_data.empty()) {
    values.assign(v.integer_data.begin(), v.integer_data.end());
  } else if (host_value == HostValue::kLiteral) {
    MEMPLAN_RETURN_IF_ERROR(ConstantNodeValues(*producer, values, shape));
  } else if (host_value == HostValue::kFilledShape) {
    MEMPLAN_TRY(DeviceTensor dims, Get(producer->inputs.at(0)));
    MEMPLAN_TRY(std::vector<float> d, backend_.Download(dims));
    TensorShape s(d.begin(), d.end());
    float fill = 0.0f;
    if (const TensorAttribute* t = producer->attributes.GetTensor("value")) {
      if (!t->float_values.empty()) fill = static_cast<float>(t->float_values[0]);
      if (!t->int_values.empty()) fill = static_cast<float>(t->int_values[0]);
    }
    values.assign(static_cast<size_t>(NumElements(s)), fill);
    shape = s;
  } else if (host_value == HostValue::kSequence) {
    MEMPLAN_TRY(values, RangeValues(*producer));
    shape = TensorShape{static_cast<int64_t>(values.size())};
  } else if (producer != nullptr) {
    return Fold(*producer, u);
  } else if (v.dtype == DType::kBool && shape) {
    // An initializer without data (the zoo keeps structure only): a causal mask by convention.
    MEMPLAN_TRY(values, SyntheticConstantValues(v, *shape));
  } else {
    return MakeError("constant '" + v.name + "' has no value the runtime can compute (an " +
                     "integer initializer of more than " + std::to_string(kMaxKeptTensorElements) +
                     " elements, which the importer does not keep)");
  }
  if (!shape) shape = TensorShape{static_cast<int64_t>(values.size())};
  MEMPLAN_TRY(DeviceTensor t, backend_.Constant(*shape, v.dtype, values));
  constants_[u.index()] = t;
  return t;
}

// Computed only from constants: fold it now with the op's kernel.
Expected<DeviceTensor> ConstantValues::Fold(const Node& node, ValueId u) {
  ForwardCall call;
  call.op_type = node.op_type;
  call.domain = node.domain;
  call.attributes = &node.attributes;
  for (ValueId in : node.inputs) {
    if (!in.valid()) {
      call.inputs.emplace_back();
      continue;
    }
    MEMPLAN_TRY(DeviceTensor t, Get(in));
    call.inputs.push_back(t);
  }
  call.num_outputs = static_cast<int>(node.outputs.size());
  call.outputs.assign(node.outputs.size(), DeviceTensor());
  MEMPLAN_TRY(std::vector<DeviceTensor> outs, backend_.Forward(call));
  for (size_t j = 0; j < node.outputs.size() && j < outs.size(); ++j)
    if (node.outputs[j].valid()) constants_[node.outputs[j].index()] = outs[j];
  if (auto it = constants_.find(u.index()); it != constants_.end()) return it->second;
  return MakeError("constant '" + g_.value(u).name + "' was not produced by '" + node.name + "'");
}

// Range(start, limit, delta) over constant scalars: positions of a sequence.
Expected<std::vector<float>> ConstantValues::RangeValues(const Node& node) {
  double args[3] = {0, 0, 1};
  for (size_t i = 0; i < 3 && i < node.inputs.size(); ++i) {
    MEMPLAN_TRY(DeviceTensor t, Get(node.inputs[i]));
    MEMPLAN_TRY(std::vector<float> x, backend_.Download(t));
    if (x.size() != 1) return MakeError("Range '" + node.name + "' needs scalar inputs");
    args[i] = x[0];
  }
  auto values = RangeSequence(args[0], args[1], args[2]);
  if (!values.ok()) return MakeError("Range '" + node.name + "': " + values.error().message);
  return std::move(*values);
}

Status ConstantValues::ConstantNodeValues(const Node& node, std::vector<float>& values,
                                          std::optional<TensorShape>& shape) {
  const Attributes& a = node.attributes;
  if (const TensorAttribute* t = a.GetTensor("value")) {
    shape = TensorShape(t->dims.begin(), t->dims.end());
    for (int64_t x : t->int_values) values.push_back(static_cast<float>(x));
    for (double x : t->float_values) values.push_back(static_cast<float>(x));
  } else if (a.Has("value_float")) {
    values = {static_cast<float>(a.GetFloat("value_float", 0))};
    shape = TensorShape{};
  } else if (a.Has("value_int")) {
    values = {static_cast<float>(a.GetInt("value_int", 0))};
    shape = TensorShape{};
  } else if (a.Has("value_floats")) {
    for (double x : a.GetFloats("value_floats")) values.push_back(static_cast<float>(x));
    shape = TensorShape{static_cast<int64_t>(values.size())};
  } else if (a.Has("value_ints")) {
    for (int64_t x : a.GetInts("value_ints")) values.push_back(static_cast<float>(x));
    shape = TensorShape{static_cast<int64_t>(values.size())};
  }
  if (static_cast<int64_t>(values.size()) != NumElements(*shape))
    return MakeError("Constant '" + node.name + "' is too large for the importer to keep");
  return OkStatus();
}

}  // namespace memplan
