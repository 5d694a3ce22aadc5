// A program that fails one MEMPLAN_CHECK on purpose, so a test can read what a broken invariant
// prints: the condition, the streamed reason and the place, on one line, then abort.
#include <string>

#include "graph/expected.h"

int main(int argc, char** argv) {
  const std::string reason = argc > 1 ? argv[1] : "no reason given";
  MEMPLAN_CHECK(argc > 1 && argc < 2) << reason << " #" << 7;  // fails whatever argc is
  return 0;
}
