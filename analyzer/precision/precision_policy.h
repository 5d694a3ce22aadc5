#pragma once
// The mixed-precision execution dtype of one op (torch.autocast-style policy).

#include <optional>

#include "analyzer/precision/amp_regime.h"
#include "analyzer/program/loss_scaling.h"
#include "analyzer/program/training_program.h"
#include "graph/dtype.h"
#include "graph/ops/op_schema.h"

namespace memplan {

// The working (half) dtype of a precision mode; kUndefined for fp32.
DType WorkingDType(Precision precision);

// The loss scaling a mode uses unless told otherwise: dynamic for fp16 (torch.cuda.amp.GradScaler:
// fp16's 5-bit exponent flushes small gradients to zero), none for bf16 and fp32 (fp32's exponent
// range).
LossScaling DefaultLossScaling(Precision precision);

// The dtype an op of AMP category `amp` computes in under autocast's policy, with `working` the
// half dtype:
//  * kFp16Safe: the working dtype; kFp32Required: fp32;
//  * kFollowInputs: the widest dtype among `activation_input_dtypes` (parameters excluded: they
//    are read as whichever copy matches), `no_activation_dtype` when there is none (the dtype the
//    forward sees parameters in: an embedding's Gather on an fp32 weight under autocast is fp32,
//    on the working copy under master weights the working dtype).
DType CategoryDType(DType working, AmpCategory amp,
                    const std::vector<DType>& activation_input_dtypes, DType no_activation_dtype);

// The dtype an op computes in under `regime`:
//  * fp32: kUndefined (every value keeps its graph dtype);
//  * an override wins;
//  * pure: the working dtype (no autocast: every op runs in its bf16 inputs' dtype);
//  * autocast and master-weights: CategoryDType with the regime's forward parameter dtype.
DType ExecutionDType(const AmpRegime& regime, AmpCategory amp, std::optional<DType> override_dtype,
                     const std::vector<DType>& activation_input_dtypes);

}  // namespace memplan
