// The CLI's last exception boundary (tools/memplan/escaped_exceptions.h): what main() prints and
// returns when a verb throws. std::bad_alloc is driven by a throwing callable because ASan's
// operator new aborts instead of throwing, so the sanitized build cannot reach it under a real
// memory cap (the Release reproducer under `ulimit -v` is in docs/measurements.md).
#include "tools/memplan/escaped_exceptions.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <stdexcept>
#include <string>

namespace memplan::cli {
namespace {

struct Outcome {
  int code = 0;
  std::string stderr_text;
};

// Runs `body` through RunCatchingEscapes with stderr (fd 2) sent to a scratch file.
Outcome RunCapturingStderr(const std::function<int()>& body) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("memplan_escaped_" + std::to_string(::getpid()) + ".txt");
  std::fflush(stderr);
  const int saved = ::dup(2);
  REQUIRE(saved >= 0);
  std::FILE* sink = std::fopen(file.c_str(), "w");
  REQUIRE(sink != nullptr);
  ::dup2(::fileno(sink), 2);
  Outcome out;
  out.code = RunCatchingEscapes(body);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::fclose(sink);
  std::ifstream in(file);
  out.stderr_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::filesystem::remove(file);
  return out;
}

TEST_CASE("a bad_alloc escaping a verb is one out-of-memory line and exit 2") {
  const Outcome out = RunCapturingStderr([]() -> int { throw std::bad_alloc(); });
  CHECK(out.code == 2);
  CHECK(out.stderr_text ==
        "memplan: out of memory: the model is too large for the memory available to memplan "
        "(raise the memory limit or plan a smaller model)\n");
}

TEST_CASE("a bad_array_new_length, a bad_alloc too, is the same out-of-memory line") {
  // What `new T[n]` throws for an n no allocation can hold: derived from std::bad_alloc.
  const Outcome out = RunCapturingStderr([]() -> int { throw std::bad_array_new_length(); });
  CHECK(out.code == 2);
  CHECK(out.stderr_text.rfind("memplan: out of memory: ", 0) == 0);
}

TEST_CASE("another exception escaping a verb is one internal-error line and exit 2") {
  const Outcome out =
      RunCapturingStderr([]() -> int { throw std::runtime_error("first line\nsecond line"); });
  CHECK(out.code == 2);
  // ReportError keeps it one line: the newline becomes "; ".
  CHECK(out.stderr_text == "memplan: internal error: first line; second line\n");
}

TEST_CASE("a non-exception thrown out of a verb is one line and exit 2") {
  const Outcome out = RunCapturingStderr([]() -> int { throw 42; });
  CHECK(out.code == 2);
  CHECK(out.stderr_text == "memplan: internal error: unknown exception\n");
}

TEST_CASE("a verb that returns passes its exit code through and prints nothing") {
  const Outcome out = RunCapturingStderr([] { return 1; });
  CHECK(out.code == 1);
  CHECK(out.stderr_text.empty());
}

}  // namespace
}  // namespace memplan::cli
