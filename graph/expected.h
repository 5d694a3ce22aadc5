#pragma once
// Error handling, one mechanism per kind of failure:
//  * bad user input  -> an Error value carried by Expected<T>, propagated with MEMPLAN_TRY /
//                       MEMPLAN_RETURN_IF_ERROR, printed by the CLI as one line, exit code 2;
//  * broken invariant -> MEMPLAN_CHECK aborts with "internal invariant" (a bug, never user input).
// Exceptions stop at the CLI boundary.

#include <cstdio>
#include <cstdlib>
#include <string>
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

[[noreturn]] inline void InternalInvariantFailure(const char* condition, const char* file,
                                                  int line) {
  std::fprintf(stderr, "memplan: internal invariant violated: %s (%s:%d)\n", condition, file, line);
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

#define MEMPLAN_CHECK(cond)                                                      \
  do {                                                                           \
    if (!(cond)) ::memplan::InternalInvariantFailure(#cond, __FILE__, __LINE__); \
  } while (false)
