#pragma once
// Shapes shared by the normalisations that reduce over trailing axes (LayerNormalization,
// RMSNormalization, com.microsoft SkipLayerNormalization/SimplifiedLayerNormalization).

#include "graph/ops/op_schema.h"

namespace memplan {

// The shape of the per-row statistics (mean, rstd) of a norm over X's axes [axis, rank): X's dims
// before `axis` followed by ones, as PyTorch's native_layer_norm / _fused_rms_norm keep them.
// Unknown when X's shape is; an error names the node when `axis` is out of range.
Expected<Shape> TrailingNormStatShape(const OpContext& ctx, int64_t axis);

}  // namespace memplan
