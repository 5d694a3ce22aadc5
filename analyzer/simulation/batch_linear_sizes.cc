#include "analyzer/simulation/batch_linear_sizes.h"

#include <limits>

namespace memplan {

namespace {

__extension__ using Wide = __int128;  // exact products and sums of 64-bit values
constexpr Wide kInt64Max = std::numeric_limits<int64_t>::max();
// CheckBufferSize's limit on the total of all buffers.
constexpr int64_t kMaxTotal = int64_t{1} << 62;

Wide Abs(Wide v) { return v < 0 ? -v : v; }

}  // namespace

BatchLinearSizes BatchLinearSizes::Of(const TrainingProgram& program, const Bindings& bindings,
                                      std::optional<SymbolId> batch) {
  BatchLinearSizes sizes;
  sizes.forms_.resize(program.buffers.size());
  for (const Buffer& buffer : program.buffers) {
    MEMPLAN_CHECK(buffer.id.index() < sizes.forms_.size());
    const Dim& dim = buffer.bytes;
    if (dim.overflowed()) continue;
    Wide a = 0;
    Wide b = 0;
    Wide abs_a = 0;
    Wide abs_b = 0;
    bool linear = true;
    for (const Dim::Term& term : dim.terms()) {
      // The term's value with m factored out, exact in 128 bits while it stays within 64.
      Wide value = term.coefficient;
      int degree = 0;
      for (SymbolId s : term.symbols) {
        if (batch && s == *batch) {
          ++degree;
          continue;
        }
        const std::optional<int64_t> bound = bindings.Get(s);
        // An unbound symbol is Dim::Evaluate's error to report; a value < 1 breaks the bound on
        // partial products below.
        if (!bound || *bound < 1) {
          linear = false;
          break;
        }
        value *= *bound;
        if (Abs(value) > kInt64Max) {
          linear = false;
          break;
        }
      }
      if (!linear || degree > 1) {
        linear = false;
        break;
      }
      (degree == 1 ? a : b) += value;
      (degree == 1 ? abs_a : abs_b) += Abs(value);
      if (abs_a > kInt64Max || abs_b > kInt64Max) {
        linear = false;
        break;
      }
    }
    if (!linear) continue;
    // |a| <= abs_a and |b| <= abs_b, so all four fit in 64 bits.
    const Wide exact_up_to = abs_a == 0 ? kInt64Max : (kInt64Max - abs_b) / abs_a;
    sizes.forms_[buffer.id.index()] =
        Form{static_cast<int64_t>(a), static_cast<int64_t>(b), static_cast<int64_t>(exact_up_to)};
  }
  return sizes;
}

Expected<std::vector<int64_t>> BatchLinearSizes::At(const TrainingProgram& program,
                                                    const Bindings& bindings_at_m,
                                                    int64_t m) const {
  MEMPLAN_CHECK(forms_.size() == program.buffers.size());
  std::vector<int64_t> out(forms_.size());
  int64_t total = 0;
  for (size_t i = 0; i < forms_.size(); ++i) {
    const Form& f = forms_[i];
    // Every partial product of a term is at most the term's magnitude (all factors >= 1) and
    // every partial sum at most the sum of the magnitudes: within 64 bits, Dim::Evaluate cannot
    // have overflowed and its result is a*m + b.
    const bool exact = m >= 1 && m <= f.exact_up_to;
    if (exact) {
      // |a * m + b| <= abs_a * m + abs_b <= 2^63 - 1: no 64-bit step overflows.
      const int64_t bytes = f.a * m + f.b;
      // CheckBufferSize's checks; total <= 2^62 always holds, so the subtraction cannot wrap.
      if (bytes >= 0 && bytes <= kMaxTotal - total) {
        out[i] = bytes;
        total += bytes;
        continue;
      }
    }
    // The error path, and the sizes the form does not cover: as EvaluateBufferSizes.
    const Buffer& buffer = program.buffers[i];
    const Expected<int64_t> bytes =
        exact ? Expected<int64_t>(f.a * m + f.b) : buffer.bytes.Evaluate(bindings_at_m);
    MEMPLAN_RETURN_IF_ERROR(CheckBufferSize(buffer, bytes, total));
    out[i] = *bytes;
  }
  return out;
}

}  // namespace memplan
