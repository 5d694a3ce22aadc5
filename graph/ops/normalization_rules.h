#pragma once
// Shapes and saved statistics shared by the normalisations that reduce over trailing axes
// (LayerNormalization, RMSNormalization, com.microsoft SkipLayerNormalization/
// SimplifiedLayerNormalization).

#include <string>

#include "graph/ops/op_schema.h"

namespace memplan {

// The shape of the per-row statistics (mean, rstd) of a norm over X's axes [axis, rank): X's dims
// before `axis` followed by ones, as PyTorch's native_layer_norm / _fused_rms_norm keep them.
// Unknown when X's shape is; an error names the node when `axis` is out of range.
Expected<Shape> TrailingNormStatShape(const OpContext& ctx, int64_t axis);
// The same, Unknown where TrailingNormStatShape fails (a saved-for-backward rule reports no
// error; the shape rule already has).
Shape StatShapeOrUnknown(const OpContext& ctx, int64_t axis);

// What a norm saves for one statistic (mean, rstd) or intermediate: output `index` when the node
// exposes it (the same tensor), else a buffer forward keeps for backward.
SavedTensor OutputOrExtra(const OpContext& ctx, size_t index, std::string name, DType dtype,
                          Shape shape);

}  // namespace memplan
