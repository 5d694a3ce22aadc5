#include "runtime/cpu/kernels/gemm_core.h"

#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "runtime/cpu/parallel_for.h"

namespace memplan {
namespace {

// Floating-point operations (2·M·N·K) one chunk should hold: about half a millisecond of sgemm.
// Each chunk packs its whole unsplit operand again, so smaller chunks cost packing: on ResNet-18's
// conv GEMMs 2^24 took 6% more single-threaded time than 2^25, 2^26 3% less again but leaves a
// typical conv GEMM (~230 MFLOP) three chunks, which two threads split unevenly.
constexpr int64_t kChunkFlops = int64_t{1} << 25;
// Chunk sizes are multiples of these, the register tiles of OpenBLAS's x86-64 kernels, so no
// chunk ends in a ragged partial tile that a larger chunk would not have.
constexpr int64_t kRowAlign = 16;
constexpr int64_t kColumnAlign = 64;

// OpenBLAS runs its own threads unless told otherwise; they would spin beside the pool's and
// make the result depend on two thread counts. Each call here is single-threaded instead.
void UseSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

blasint ToBlasInt(int64_t value) {
  if (value < 0 || value > std::numeric_limits<blasint>::max()) {
    std::fprintf(stderr, "internal invariant: GEMM dimension %lld exceeds BLAS integers\n",
                 static_cast<long long>(value));
    std::abort();
  }
  return static_cast<blasint>(value);
}

struct GemmCall {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha;
  const float* a;
  const float* b;
  float* c;

  int64_t lda() const { return std::max<int64_t>(1, trans_a ? m : k); }
  int64_t ldb() const { return std::max<int64_t>(1, trans_b ? k : n); }

  // C[rows, cols] for rows [r0, r1) and columns [c0, c1); leading dimensions stay the full ones.
  void Run(int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
    const float* a_block = trans_a ? a + r0 : a + r0 * k;
    const float* b_block = trans_b ? b + c0 * k : b + c0;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, ToBlasInt(r1 - r0), ToBlasInt(c1 - c0),
                ToBlasInt(k), alpha, a_block, ToBlasInt(lda()), b_block, ToBlasInt(ldb()),
                /*beta=*/1.0f, c + r0 * n + c0, ToBlasInt(std::max<int64_t>(1, n)));
  }
};

// A chunk length along a dimension of `extent`: as many chunks as the work fills, each a
// multiple of `align`. Depends on the shape only.
int64_t ChunkLength(int64_t extent, int64_t align, int64_t flops) {
  const int64_t wanted_chunks = std::max<int64_t>(1, flops / kChunkFlops);
  const int64_t length = (extent + wanted_chunks - 1) / wanted_chunks;
  return std::min(extent, (length + align - 1) / align * align);
}

}  // namespace

void GemmAccumulate(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, const float* b, float* c) {
  if (m == 0 || n == 0 || k == 0) return;  // nothing to add
  UseSingleThreadedBlas();
  const GemmCall call{trans_a, trans_b, m, n, k, alpha, a, b, c};
  const int64_t flops = 2 * m * n * k;
  // Split the longer side of C: each chunk then still multiplies a long panel.
  if (n >= m) {
    const int64_t length = ChunkLength(n, kColumnAlign, flops);
    ParallelFor(n, length, [&](int64_t c0, int64_t c1) { call.Run(0, m, c0, c1); });
  } else {
    const int64_t length = ChunkLength(m, kRowAlign, flops);
    ParallelFor(m, length, [&](int64_t r0, int64_t r1) { call.Run(r0, r1, 0, n); });
  }
}

}  // namespace memplan
