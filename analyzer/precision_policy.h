#pragma once
// The mixed-precision execution dtype of one op (torch.autocast-style policy).

#include <optional>

#include "analyzer/precision/loss_scaling.h"
#include "analyzer/training_program.h"
#include "graph/dtype.h"
#include "graph/ops/op_schema.h"

namespace memplan {

// The working (half) dtype of a precision mode; kUndefined for fp32.
DType WorkingDType(Precision precision);

// The loss scaling a mode uses unless told otherwise: dynamic for fp16 (torch.cuda.amp.GradScaler:
// fp16's 5-bit exponent flushes small gradients to zero), none for bf16 and fp32 (fp32's exponent
// range).
LossScaling DefaultLossScaling(Precision precision);

// The dtype an op computes in under `precision`:
//  * fp32: kUndefined (every value keeps its graph dtype);
//  * an override wins;
//  * kFp16Safe: the working dtype; kFp32Required: fp32;
//  * kFollowInputs: the widest dtype among `activation_input_dtypes` (parameters excluded: they
//    are read as the working copy or the master, whichever matches), the working dtype when there
//    is none.
DType ExecutionDType(Precision precision, AmpCategory amp, std::optional<DType> override_dtype,
                     const std::vector<DType>& activation_input_dtypes);

}  // namespace memplan
