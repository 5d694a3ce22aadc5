#pragma once
// The registry of OpSchemas, filled once by the op families (graph/ops/*_ops.cc).

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/ops/op_schema.h"

namespace memplan {

class OpRegistry {
 public:
  // The process-wide registry with every built-in op family registered.
  static const OpRegistry& Get();

  // Adds an entry, filling defaults for the rules left empty. REQUIRES: op_type not registered.
  void Register(OpSchema schema);

  // nullptr when the op type is not known (the caller then uses Unknown() and warns).
  const OpSchema* Find(std::string_view op_type, std::string_view domain = "") const;
  // The conservative entry for unknown ops: output shape from ONNX inference or input 0, every
  // output kept alive and saved for backward, every input saved, gradients to all float inputs.
  const OpSchema& Unknown() const { return unknown_; }
  // Find() or Unknown().
  const OpSchema& FindOrUnknown(std::string_view op_type, std::string_view domain = "") const;
  std::vector<std::string> OpTypes() const;
  // Every registered entry, in key order (domain:op_type).
  std::vector<const OpSchema*> Schemas() const;

  OpRegistry();

 private:
  std::map<std::string, OpSchema, std::less<>> schemas_;  // key: domain + ":" + op_type
  OpSchema unknown_;
};

}  // namespace memplan
