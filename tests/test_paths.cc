#include "tests/test_paths.h"

namespace memplan::testing {

std::string FixturesDir() { return MEMPLAN_FIXTURES_DIR; }
std::string ZooDir() { return MEMPLAN_ZOO_DIR; }

}  // namespace memplan::testing
