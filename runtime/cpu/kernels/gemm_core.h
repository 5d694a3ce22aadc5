#pragma once
// The one matrix-multiply loop nest every MatMul/Gemm/backward call goes through.

#include <cstdint>

namespace memplan {

// C[M,N] += alpha * op(A)[M,K] * op(B)[K,N], all row-major and contiguous. op(A) = A when
// !trans_a (A stored [M,K]) and A^T when trans_a (A stored [K,M]); likewise B ([K,N] or [N,K]).
// Loop orders keep the innermost loop on contiguous memory (i-k-j for the plain case).
void GemmAccumulate(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, const float* b, float* c);

}  // namespace memplan
