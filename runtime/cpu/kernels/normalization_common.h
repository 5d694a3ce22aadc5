#pragma once
// What the normalization kernels share (batch_norm.cc, row_norms.cc, group_norms.cc): the
// channel-major layout of [N, C, spatial...], per-group moments, and how a backward finds what
// its forward saved.

#include <cstdint>
#include <string_view>

#include "graph/expected.h"
#include "runtime/cpu/kernel_api.h"

namespace memplan::normalization {

// A channel-major view of [N, C, spatial...]: element (n, c, s) is at (n * C + c) * S + s.
struct ChannelLayout {
  int64_t batch = 0, channels = 0, spatial = 1;
  int64_t Count() const { return batch * spatial; }  // elements per channel
  int64_t Offset(int64_t n, int64_t c) const { return (n * channels + c) * spatial; }
};

// Channels handed to one thread: each owns its statistics and its slice of every output.
int64_t ChannelGrain(const ChannelLayout& layout);

// [N, C, spatial...] of `x`; an error naming `op` when x has fewer than two dims.
Expected<ChannelLayout> LayoutOf(const TensorShape& x, std::string_view op);

// An error naming `op` and `role` unless `t` has one element per channel.
Status CheckPerChannel(const Tensor& t, int64_t channels, std::string_view op,
                       std::string_view role);

// Mean and 1/sqrt(biased variance + epsilon) of n contiguous values, in double (two passes).
struct Moments {
  double mean = 0.0, invstd = 0.0;
};
Moments MomentsOf(const float* p, int64_t n, double epsilon);

// What the normalization backwards read: the output gradient, the saved input and scale, and
// forward's per-group mean and invstd.
struct SavedNormalization {
  Tensor dy, x, scale, mean, invstd;
};

// Where forward's statistics are: LayerNormalization's optional outputs 1 and 2 (Mean,
// InvStdDev) are them, so a node that declares them has them saved as outputs; BatchNormalization's
// outputs 1 and 2 are the running statistics, never the batch's, which are always extras.
enum class StatisticsAt { kExtras, kOutputsOrExtras };

Expected<SavedNormalization> ReadSavedNormalization(const BackwardArgs& args, std::string_view op,
                                                    StatisticsAt statistics);

}  // namespace memplan::normalization
