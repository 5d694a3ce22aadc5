#pragma once
// The CLI's last exception boundary: what an exception that escaped every verb becomes. main()
// runs the whole command through RunCatchingEscapes, so a bad_alloc (a 10^6-node model under a
// memory cap) or an unexpected exception is one "memplan: ..." line and exit 2, never a signal.
// Kept out of main.cc so a test can drive it with a throwing callable: ASan's operator new
// aborts instead of throwing, so no sanitized build can reach this path through a real cap
// (docs/measurements.md has the Release reproducer under `ulimit -v`).

#include <exception>
#include <functional>
#include <string>

namespace memplan::cli {

// The one line (without "memplan: ") for an exception that escaped every verb: out of memory for
// std::bad_alloc, "internal error: <what()>" for any other std::exception, "internal error:
// unknown exception" for anything else.
std::string EscapedExceptionMessage(const std::exception_ptr& escaped);

// `body()`'s exit code; if it throws, that exception's EscapedExceptionMessage on stderr as the
// one-line error (ReportError) and kExitUsage.
int RunCatchingEscapes(const std::function<int()>& body);

}  // namespace memplan::cli
