#pragma once
// Checked 64-bit arithmetic for element and byte counts: shapes come from user files, so an
// overflow is bad input, never undefined behaviour.

#include <cstdint>
#include <optional>

namespace memplan {

inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> CheckedSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a / b when b divides a exactly; nullopt for b == 0, an inexact quotient, and INT64_MIN / -1
// (whose quotient 2^63 does not fit: the division itself traps, SIGFPE on x86).
inline std::optional<int64_t> CheckedDivideExactly(int64_t a, int64_t b) {
  if (b == 0 || (b == -1 && a == INT64_MIN)) return std::nullopt;
  if (a % b != 0) return std::nullopt;
  return a / b;
}

}  // namespace memplan
