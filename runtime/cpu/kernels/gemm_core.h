#pragma once
// The one matrix multiply every MatMul/Gemm/Conv forward and backward call goes through:
// OpenBLAS's sgemm, run single-threaded per call and spread over the CPU backend's pool in fixed
// chunks of rows or columns of C (see runtime/cpu/parallel_for.h for why the chunks are fixed).

#include <cstdint>

namespace memplan {

// C[M,N] += alpha * op(A)[M,K] * op(B)[K,N], all row-major and contiguous. op(A) = A when
// !trans_a (A stored [M,K]) and A^T when trans_a (A stored [K,M]); likewise B ([K,N] or [N,K]).
// The same shapes give the same chunks and so the same bits on every call, whatever the thread
// count. REQUIRES: every dimension below 2^31 (OpenBLAS's 32-bit integers).
void GemmAccumulate(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, const float* b, float* c);

}  // namespace memplan
