#pragma once
// Error handling, one mechanism per kind of failure:
//  * bad user input  -> an Error value carried by Expected<T>, propagated with MEMPLAN_TRY /
//                       MEMPLAN_RETURN_IF_ERROR, printed by the CLI as one line, exit code 2;
//  * broken invariant -> MEMPLAN_CHECK aborts with "internal invariant" (a bug, never user input).
// Exceptions stop at the CLI boundary.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace memplan {

struct Error {
  std::string message;
};

inline Error MakeError(std::string message) { return Error{std::move(message)}; }

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Expected(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<Error>(state_); }

 private:
  std::variant<T, Error> state_;
};

// Expected<void>: success or an Error.
struct Ok {};
using Status = Expected<Ok>;
inline Status OkStatus() { return Ok{}; }

// The failure MEMPLAN_CHECK builds: the reason streams into it and its destructor, at the end of
// the check's statement, prints one line and aborts.
class InvariantFailure {
 public:
  InvariantFailure(const char* condition, const char* file, int line)
      : condition_(condition), file_(file), line_(line) {}
  InvariantFailure(const InvariantFailure&) = delete;
  InvariantFailure& operator=(const InvariantFailure&) = delete;
  InvariantFailure& operator<<(std::string_view text) {
    why_.append(text);
    return *this;
  }
  // enable_if rather than requires: the CUDA sources include this header as C++17.
  template <class Number, std::enable_if_t<std::is_arithmetic_v<Number>, int> = 0>
  InvariantFailure& operator<<(Number number) {
    why_ += std::to_string(number);
    return *this;
  }
  [[noreturn]] ~InvariantFailure() {
    std::fprintf(stderr, "memplan: internal invariant violated: %s%s%s (%s:%d)\n", condition_,
                 why_.empty() ? "" : ": ", why_.c_str(), file_, line_);
    std::abort();
  }

 private:
  const char* condition_;
  const char* file_;
  int line_;
  std::string why_;
};

// Turns `voidify & failure << ...` into void, the type of the check's other branch.
struct InvariantVoidify {
  void operator&(const InvariantFailure&) {}
};

[[noreturn]] inline void InternalUnreachable(const char* why, const char* file, int line) {
  std::fprintf(stderr, "memplan: internal invariant violated: %s (%s:%d)\n", why, file, line);
  std::abort();
}

}  // namespace memplan

#define MEMPLAN_CONCAT_INNER(a, b) a##b
#define MEMPLAN_CONCAT(a, b) MEMPLAN_CONCAT_INNER(a, b)

// MEMPLAN_TRY(auto x, ExpectedExpr()); binds x to the value or returns the error.
#define MEMPLAN_TRY(decl, expr) MEMPLAN_TRY_IMPL(MEMPLAN_CONCAT(memplan_try_, __LINE__), decl, expr)
#define MEMPLAN_TRY_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                      \
  if (!tmp.ok()) return tmp.error();      \
  decl = std::move(tmp).value()

#define MEMPLAN_RETURN_IF_ERROR(expr)                          \
  do {                                                         \
    auto memplan_status_ = (expr);                             \
    if (!memplan_status_.ok()) return memplan_status_.error(); \
  } while (false)

// MEMPLAN_CHECK(cond) << "why" << value;  aborts with the condition, the place and the reason
// when `cond` is false. The message is built only on failure. An expression, so it cannot capture
// a following `else`.
#define MEMPLAN_CHECK(cond) \
  (cond) ? (void)0          \
         : ::memplan::InvariantVoidify() & ::memplan::InvariantFailure(#cond, __FILE__, __LINE__)

// MEMPLAN_UNREACHABLE("why"): a branch the program's own invariants exclude (an enumerator every
// switch handles). [[noreturn]], so a function may end with it.
#define MEMPLAN_UNREACHABLE(why) ::memplan::InternalUnreachable(why, __FILE__, __LINE__)
