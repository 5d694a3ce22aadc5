#pragma once
// Where the tests find their inputs: the checked-in fixtures and the zoo models the build writes.
// Only test_paths.cc is compiled with the checkout's absolute paths: a path in every test source's
// compile command would give each checkout its own ccache keys, so a fresh clone (CI's) would
// compile every test again (cmake/Ccache.cmake shares the rest).

#include <string>

namespace memplan::testing {

std::string FixturesDir();  // tests/fixtures of this checkout
std::string ZooDir();       // the build's zoo models (memplan-zoo)

}  // namespace memplan::testing
