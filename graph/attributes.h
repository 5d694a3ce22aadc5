#pragma once
// Node attributes as imported from ONNX (ints, floats, strings, lists, small tensors).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "graph/dtype.h"

namespace memplan {

// A tensor-valued attribute (Constant's `value`, ConstantOfShape's `value`). Only the metadata
// and, for small integer/float tensors, the contents are kept: weights never are.
struct TensorAttribute {
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<int64_t> int_values;   // integer/bool tensors up to 2^20 elements (onnx_convert.cc)
  std::vector<double> float_values;  // floating tensors up to 2^20 elements (onnx_convert.cc)
};

using AttributeValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                                    std::vector<double>, std::vector<std::string>, TensorAttribute>;

class Attributes {
 public:
  void Set(std::string name, AttributeValue value) { values_[std::move(name)] = std::move(value); }
  bool Has(const std::string& name) const { return values_.count(name) > 0; }

  int64_t GetInt(const std::string& name, int64_t fallback) const;
  double GetFloat(const std::string& name, double fallback) const;
  std::string GetString(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> GetInts(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> GetFloats(const std::string& name, std::vector<double> fallback = {}) const;
  const TensorAttribute* GetTensor(const std::string& name) const;

  const std::map<std::string, AttributeValue>& all() const { return values_; }

 private:
  std::map<std::string, AttributeValue> values_;
};

}  // namespace memplan
