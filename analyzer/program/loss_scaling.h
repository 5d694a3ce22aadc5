#pragma once
// How an fp16 (or, on request, bf16) training step keeps small gradients from flushing to zero:
// the loss is multiplied by a scale before backward, gradients are unscaled before the optimizer,
// and a step whose gradients overflowed (inf/NaN) is skipped.
//
// Memory each mode costs in the training program (analyzer/derivation/program_derivation.cc):
//
//   mode     persistent (setup)                              transient (unscale step)
//   none     -                                               -
//   static   -  (the scale is a host constant, as in          found_inf fp32 [] (4 B), held until
//               DeepSpeed's / apex's static LossScaler)        the optimizer step has read it
//   dynamic  loss_scale fp32 [] + growth_tracker int32 []    found_inf (as static) + inv_scale
//            (torch.cuda.amp.GradScaler's _scale and          fp32 [] (4 B) during the unscale
//             _growth_tracker, 8 B)                           (GradScaler.unscale_'s reciprocal)
//
// Kept free of other analyzer headers (but the vocabulary mechanism) so training_program.h can
// echo the choice.

#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"
#include "graph/expected.h"

namespace memplan {

#define MEMPLAN_LOSS_SCALING_MODES(X)                                                          \
  X(kNone, "none")       /* bf16 and fp32: the exponent range of fp32, nothing to scale */     \
  X(kStatic, "static")   /* a fixed scale; overflowing steps are still detected and skipped */ \
  X(kDynamic, "dynamic") /* GradScaler: back off on overflow, grow after a run of clean steps */
MEMPLAN_NAMED_ENUM(LossScalingMode, MEMPLAN_LOSS_SCALING_MODES);

// The scale a dynamic scaler starts from: torch.cuda.amp.GradScaler's init_scale (2^16).
inline constexpr double kDefaultInitialLossScale = 65536.0;

struct LossScaling {
  LossScalingMode mode = LossScalingMode::kNone;
  // kStatic: the fixed scale; kDynamic: the initial scale. Unused for kNone.
  double scale = kDefaultInitialLossScale;

  bool operator==(const LossScaling&) const = default;
};

// Parses --loss-scaling: "none", "dynamic", "static:<scale>" or a bare positive number (a static
// scale, e.g. "1024"). Errors name the text and the accepted forms; a scale must be finite and > 0.
Expected<LossScaling> ParseLossScaling(std::string_view text);

}  // namespace memplan
