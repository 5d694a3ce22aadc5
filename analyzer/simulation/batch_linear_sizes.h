#pragma once
// Every buffer's byte size as a linear form a*m + b in the micro-batch m, for the planner, which
// evaluates the sizes of one program at some forty micro-batches. Dim::Evaluate walks each size's
// polynomial (terms and symbols in vectors of their own, a cache miss apiece on a large program);
// the form is two integers per buffer, laid out together, computed once from the Dims with every
// other symbol bound.
//
// The answer is EvaluateBufferSizes' exactly, errors included: a buffer takes the form only when
// its Dim is at most linear in the batch symbol, every other symbol is bound to a value >= 1, and
// at the asked m the sum of the terms' magnitudes fits in 64 bits, so Dim::Evaluate's checked
// products and sums could not have overflowed and the integer result is the same. Every other
// buffer (unbound symbols, a batch power, a poisoned Dim, a size that might overflow) is evaluated
// by Dim::Evaluate as before, so it reports the same error.

#include <cstdint>
#include <optional>
#include <vector>

#include "analyzer/program/allocator_model.h"
#include "analyzer/program/training_program.h"
#include "analyzer/simulation/simulator.h"
#include "graph/expected.h"
#include "graph/symbols.h"

namespace memplan {

class BatchLinearSizes {
 public:
  // `bindings`: every symbol but `batch` as the evaluations will bind it; `batch`: the program's
  // batch symbol (nullopt: sizes do not depend on m).
  static BatchLinearSizes Of(const TrainingProgram& program, const Bindings& bindings,
                             std::optional<SymbolId> batch);

  // EvaluateBufferSizes(program, bindings_at_m). REQUIRES: `program` is the program Of() saw and
  // `bindings_at_m` is Of()'s bindings with the batch symbol bound to m.
  Expected<std::vector<int64_t>> At(const TrainingProgram& program, const Bindings& bindings_at_m,
                                    int64_t m) const;

 private:
  struct Form {
    int64_t a = 0;  // coefficient of m
    int64_t b = 0;  // constant
    // The largest m at which the form is exact: the sums of the terms' magnitudes, in m
    // (abs_a) and not (abs_b), give abs_a * m + abs_b <= 2^63 - 1 up to it. 0 when the Dim is
    // not linear in m (no m >= 1 is exact). One comparison per buffer at evaluation time instead
    // of a 128-bit bound: the planner evaluates every buffer at ~100 micro-batches.
    int64_t exact_up_to = 0;
  };
  std::vector<Form> forms_;  // by BufferId
};

// Adds one evaluated buffer size to `total` with EvaluateBufferSizes' checks (a size that failed
// to evaluate, a negative size, a total over 2^62), naming the buffer in the error.
Status CheckBufferSize(const Buffer& buffer, const Expected<int64_t>& bytes, int64_t& total);

// Simulate() with the buffers' sizes already evaluated (EvaluateBufferSizes or
// BatchLinearSizes::At of the same program and bindings).
Expected<SimulationResult> SimulateSized(const TrainingProgram& program,
                                         std::vector<int64_t> buffer_bytes,
                                         AllocatorModel& allocator,
                                         const SimulationOptions& options);

}  // namespace memplan
