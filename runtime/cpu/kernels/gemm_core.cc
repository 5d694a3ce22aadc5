#include "runtime/cpu/kernels/gemm_core.h"

#include <algorithm>

namespace memplan {
namespace {

// Rows of C processed together in the i-k-j nest, so a block of B rows stays in cache while it
// is reused for several rows of A.
constexpr int64_t kRowBlock = 32;
constexpr int64_t kDepthBlock = 128;

}  // namespace

void GemmAccumulate(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, const float* b, float* c) {
  if (!trans_a && !trans_b) {
    for (int64_t i0 = 0; i0 < m; i0 += kRowBlock) {
      const int64_t i1 = std::min(m, i0 + kRowBlock);
      for (int64_t p0 = 0; p0 < k; p0 += kDepthBlock) {
        const int64_t p1 = std::min(k, p0 + kDepthBlock);
        for (int64_t i = i0; i < i1; ++i) {
          float* c_row = c + i * n;
          for (int64_t p = p0; p < p1; ++p) {
            const float scaled = alpha * a[i * k + p];
            const float* b_row = b + p * n;
            for (int64_t j = 0; j < n; ++j) c_row[j] += scaled * b_row[j];
          }
        }
      }
    }
  } else if (!trans_a && trans_b) {
    // B stored [N,K]: each C element is a dot product of two contiguous rows.
    for (int64_t i = 0; i < m; ++i) {
      const float* a_row = a + i * k;
      for (int64_t j = 0; j < n; ++j) {
        const float* b_row = b + j * k;
        float sum = 0.0f;
        for (int64_t p = 0; p < k; ++p) sum += a_row[p] * b_row[p];
        c[i * n + j] += alpha * sum;
      }
    }
  } else if (trans_a && !trans_b) {
    // A stored [K,M]: walk A by rows of K, scattering each into the rows of C (k-i-j).
    for (int64_t p = 0; p < k; ++p) {
      const float* a_row = a + p * m;
      const float* b_row = b + p * n;
      for (int64_t i = 0; i < m; ++i) {
        const float scaled = alpha * a_row[i];
        float* c_row = c + i * n;
        for (int64_t j = 0; j < n; ++j) c_row[j] += scaled * b_row[j];
      }
    }
  } else {
    // A stored [K,M], B stored [N,K]; rare (Gemm with both transposes), kept simple.
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float* b_row = b + j * k;
        float sum = 0.0f;
        for (int64_t p = 0; p < k; ++p) sum += a[p * m + i] * b_row[p];
        c[i * n + j] += alpha * sum;
      }
    }
  }
}

}  // namespace memplan
