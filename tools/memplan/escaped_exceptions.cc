#include "tools/memplan/escaped_exceptions.h"

#include <new>

#include "tools/memplan/cli_common.h"

namespace memplan::cli {

std::string EscapedExceptionMessage(const std::exception_ptr& escaped) {
  try {
    std::rethrow_exception(escaped);
  } catch (const std::bad_alloc&) {
    // A model whose graph or program outgrows the memory this process may use (a ulimit, a
    // container's cap): bad input for this machine, not a bug.
    return "out of memory: the model is too large for the memory available to memplan (raise the "
           "memory limit or plan a smaller model)";
  } catch (const std::exception& e) {
    return std::string("internal error: ") + e.what();
  } catch (...) {
    return "internal error: unknown exception";
  }
}

int RunCatchingEscapes(const std::function<int()>& body) {
  try {
    return body();
  } catch (...) {
    // The body's frames are unwound by now: what it held (the graph that outgrew the cap) is
    // freed before the message is built.
    return ReportError(EscapedExceptionMessage(std::current_exception()));
  }
}

}  // namespace memplan::cli
