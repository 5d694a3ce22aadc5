#pragma once
// Builds one-node OpContexts by hand for the op-registry tests: a Node with attributes, input
// TensorInfos, and (after running the op's shape rule) outputs, so cost and saved rules can be
// asked exactly as the analyzer asks them.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "graph/ops/op_registry.h"
#include "tests/require_value.h"

namespace memplan::testing {

inline TensorInfo Tensor(DType dtype, std::vector<Dim> dims,
                         ValueKind kind = ValueKind::kIntermediate) {
  TensorInfo t;
  t.dtype = dtype;
  t.shape = Shape{std::move(dims)};
  t.kind = kind;
  return t;
}

inline TensorInfo F32(std::vector<Dim> dims, ValueKind kind = ValueKind::kIntermediate) {
  return Tensor(DType::kFloat32, std::move(dims), kind);
}

inline TensorInfo Param(std::vector<Dim> dims) {
  return Tensor(DType::kFloat32, std::move(dims), ValueKind::kParameter);
}

// An int64 shape tensor with folded contents, as Shape/Gather/Constant produce.
inline TensorInfo IntContents(std::vector<Dim> values, ValueKind kind = ValueKind::kConstant) {
  TensorInfo t;
  t.dtype = DType::kInt64;
  t.shape = Shape{{Dim(static_cast<int64_t>(values.size()))}};
  t.kind = kind;
  t.contents = std::move(values);
  return t;
}

inline TensorInfo Absent() {
  TensorInfo t;
  t.present = false;
  return t;
}

inline const OpSchema& Schema(const std::string& op_type, const std::string& domain = "") {
  const OpSchema* s = OpRegistry::Get().Find(op_type, domain);
  INFO("op " << domain << ":" << op_type);
  REQUIRE(s != nullptr);
  return *s;
}

// One node of `op_type` with `num_outputs` outputs (false in `present_outputs` = omitted).
class OpCase {
 public:
  OpCase(std::string op_type, std::vector<TensorInfo> inputs, size_t num_outputs = 1,
         std::string domain = "")
      : inputs_(std::move(inputs)) {
    node_.name = "n";
    node_.op_type = std::move(op_type);
    node_.domain = std::move(domain);
    for (size_t i = 0; i < inputs_.size(); ++i)
      node_.inputs.push_back(inputs_[i].present ? ValueId(i) : ValueId());
    for (size_t i = 0; i < num_outputs; ++i) node_.outputs.push_back(ValueId(100 + i));
  }
  OpCase(const OpCase&) = delete;
  OpCase& operator=(const OpCase&) = delete;

  OpCase& Attr(std::string name, AttributeValue value) {
    node_.attributes.Set(std::move(name), std::move(value));
    return *this;
  }
  OpCase& OmitOutput(size_t i) {
    node_.outputs.at(i) = ValueId();
    return *this;
  }

  // Shape rules draw fresh symbols from `table` (by default a table of this case's own).
  OpCase& UseSymbols(SymbolTable& table) {
    symbols_ = &table;
    return *this;
  }

  const OpSchema& schema() const { return Schema(node_.op_type, node_.domain); }

  Expected<std::vector<TensorInfo>> Infer() {
    OpContext ctx{node_, inputs_, {}, symbols_};
    return schema().infer_shapes(ctx);
  }
  // The shape rule's outputs; fails the test when the rule errs.
  std::vector<TensorInfo> Outputs() { return RequireValue(Infer()); }
  // The shape rule's error message; fails the test when the rule accepts the case.
  std::string InferError() { return RequireError(Infer()); }
  Shape OutputShape(size_t i = 0) { return Outputs().at(i).shape; }
  // A full context (outputs from the shape rule) for cost/saved/gradient rules.
  OpContext Context() { return OpContext{node_, inputs_, Outputs(), nullptr}; }
  OpCost Cost() { return schema().cost(Context()); }
  std::vector<SavedTensor> Saved() { return schema().saved_for_backward(Context()); }
  std::vector<bool> Gradients() { return schema().gradient_inputs(Context()); }

 private:
  Node node_;
  std::vector<TensorInfo> inputs_;
  SymbolTable own_symbols_;
  SymbolTable* symbols_ = &own_symbols_;
};

inline Shape Dims(std::vector<Dim> dims) { return Shape{std::move(dims)}; }

// Compact description of a saved set for comparisons: "in0", "out0", "extra:name".
inline std::vector<std::string> Describe(const std::vector<SavedTensor>& saved) {
  std::vector<std::string> out;
  for (const auto& s : saved) {
    switch (s.source) {
      case SavedTensor::Source::kInput:
        out.push_back("in" + std::to_string(s.index));
        break;
      case SavedTensor::Source::kOutput:
        out.push_back("out" + std::to_string(s.index));
        break;
      case SavedTensor::Source::kExtra:
        out.push_back("extra:" + s.name);
        break;
    }
  }
  return out;
}

// The saved extra named `name` (a workspace or reserve the op keeps beside its inputs and
// outputs); fails the test when the op keeps none of that name.
inline const SavedTensor& Extra(const std::vector<SavedTensor>& saved, const std::string& name) {
  for (const auto& s : saved)
    if (s.source == SavedTensor::Source::kExtra && s.name == name) return s;
  FAIL("no saved extra named " << name);
  return saved.front();
}

inline int64_t Eval(const Dim& d) {
  auto c = d.constant_value();
  INFO("dim is not constant");
  REQUIRE(c.has_value());
  return *c;
}

}  // namespace memplan::testing
