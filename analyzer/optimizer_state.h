#pragma once
// The per-parameter state each optimizer keeps (always fp32, category optimizer_state).

#include <string>
#include <vector>

#include "analyzer/training_program.h"
#include "graph/dim.h"

namespace memplan {

struct OptimizerStateSpec {
  std::string name;  // "momentum_buffer", "exp_avg", "exp_avg_sq_row"...
  Shape shape;
};

// sgd: none. momentum: momentum_buffer (param shape). adam/adamw: exp_avg, exp_avg_sq (param
// shape). adafactor (Shazeer & Stern 2018, as in HF transformers' Adafactor without beta1): for
// rank >= 2, exp_avg_sq_row of shape[:-1] and exp_avg_sq_col of shape[:-2] + shape[-1:]; for rank
// < 2 a full exp_avg_sq.
std::vector<OptimizerStateSpec> OptimizerStates(OptimizerKind optimizer, const Shape& param_shape);

}  // namespace memplan
