#pragma once
// The per-parameter state each optimizer keeps (category optimizer_state): its names, shapes and
// dtypes, the one place that knows them.

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/program/training_program.h"
#include "graph/dim.h"
#include "graph/dtype.h"

namespace memplan {

struct OptimizerStateSpec {
  std::string name;  // "momentum_buffer", "exp_avg", "exp_avg_sq_row"...
  Shape shape;
  DType dtype = DType::kFloat32;
};

// bitsandbytes' 8-bit optimizers (bitsandbytes/optim/optimizer.py, Optimizer8bit.init_state):
// block-wise quantisation with one fp32 absmax per 2048 elements of each state, and tensors with
// fewer than min_8bit_size = 4096 elements keep 32-bit state.
inline constexpr int64_t kEightBitStateBlock = 2048;
inline constexpr int64_t kEightBitMinElements = 4096;

// Whether `optimizer` keeps bitsandbytes' block-quantised state (its dtypes are its own in every
// AMP regime).
inline bool EightBitOptimizer(OptimizerKind optimizer) {
  return optimizer == OptimizerKind::kAdamW8bit || optimizer == OptimizerKind::kPagedAdamW8bit;
}

// sgd: none. momentum: momentum_buffer (param shape). adam/adamw: exp_avg, exp_avg_sq (param
// shape). adafactor (Shazeer & Stern 2018, as in HF transformers' Adafactor without beta1): for
// rank >= 2, exp_avg_sq_row of shape[:-1] and exp_avg_sq_col of shape[:-2] + shape[-1:]; for rank
// < 2 a full exp_avg_sq. adamw8bit / paged-adamw8bit: state1 and state2 (uint8, param shape) and
// absmax1, absmax2 (fp32, ceil(n / 2048)) when the parameter has >= 4096 elements, else fp32
// state1, state2 (bitsandbytes' names). The shared 256-entry quantisation maps (2 KiB per device,
// not per parameter) are not counted. lion: exp_avg (fp32, param shape). All fp32 unless stated.
std::vector<OptimizerStateSpec> OptimizerStates(OptimizerKind optimizer, const Shape& param_shape);

}  // namespace memplan
