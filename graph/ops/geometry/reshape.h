#pragma once
// Output shapes of the view ops Reshape, Flatten, Squeeze and Unsqueeze: the one statement of
// their ONNX rules, shared by the registry's shape rules (symbolic sizes, D = Dim) and the CPU
// kernels and CUDA ops (concrete sizes, D = int64_t). Errors say what is wrong without naming
// the node or op (callers prefix it). Concrete element counts are checked: a product that
// overflows int64 is an error, never undefined behaviour.

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/dim.h"
#include "graph/expected.h"

namespace memplan {

template <class D>
struct ReshapeOutput {
  std::vector<D> dims;
  // The -1 slot when its size cannot be derived: the input shape is unknown, or (symbolic) the
  // element count does not divide exactly in the polynomial ring. Its entry in dims is 0; the
  // shape rule makes a fresh symbol. Never set for concrete sizes (an error instead).
  std::optional<size_t> unresolved;
  // True when a 0 in the target copies a dim of an unknown input: nothing is known of the output.
  bool needs_input = false;
};

// Reshape of `input` (null when unknown) to `target`. A 0 in the target copies the input's dim
// at that index unless allow_zero; one -1 takes what the element count leaves. Errors: more than
// one -1, a dim below -1, a 0 beyond the input's rank, element counts that differ (when both are
// constant), a -1 that no integer satisfies (concrete).
template <class D>
Expected<ReshapeOutput<D>> ReshapeShape(const std::vector<D>* input, const std::vector<D>& target,
                                        bool allow_zero);

// Flatten to 2-D at `axis` (in [-rank, rank]): [d_0 * ... * d_(axis-1), d_axis * ... * d_n].
template <class D>
Expected<std::vector<D>> FlattenShape(const std::vector<D>& input, int64_t axis);

// Squeeze of `axes` (empty: every dim that is the constant 1). Errors: an axis out of range or
// repeated, a squeezed dim that is a constant other than 1 (a symbolic dim is taken to be 1).
template <class D>
Expected<std::vector<D>> SqueezeShape(const std::vector<D>& input,
                                      const std::vector<int64_t>& axes);

// Unsqueeze: a 1 inserted at each of `axes` (indices into the output's rank). Errors: an axis out
// of range or repeated.
template <class D>
Expected<std::vector<D>> UnsqueezeShape(const std::vector<D>& input,
                                        const std::vector<int64_t>& axes);

}  // namespace memplan
