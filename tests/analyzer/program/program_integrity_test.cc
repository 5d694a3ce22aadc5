// VerifyProgram catches hand-broken programs.

#include <catch2/catch.hpp>

#include "analyzer/program/unguarded_events.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"
#include "tests/require_value.h"

namespace memplan {
namespace {

using testing::LinearRelu;
using testing::SumLossSgd;

// Derived without VerifyProgram: the first test case below is the check that it verifies.
TrainingProgram Program() {
  return testing::RequireValue(DeriveTrainingProgram(LinearRelu().graph, SumLossSgd()));
}

// Step t of the program above (see program_derivation_test.cc):
//   t3 forward relu  begin +r  end -y      t6 backward relu  begin +grad(y)  end -r -grad(r)
TEST_CASE("integrity: a derived program verifies", "[program]") {
  CHECK(VerifyProgram(Program()).ok());
}

TEST_CASE("integrity: a missing free is a leak", "[program]") {
  TrainingProgram p = Program();
  p.steps[3].end.clear();  // y is never freed
  const std::string error = testing::RequireError(VerifyProgram(p));
  CHECK(error.find("'y'") != std::string::npos);
  CHECK(error.find("leak") != std::string::npos);
}

TEST_CASE("integrity: a double free is caught", "[program]") {
  TrainingProgram p = Program();
  p.steps[6].end.push_back(p.steps[6].end.front());  // frees r twice
  CHECK(testing::RequireError(VerifyProgram(p)).find("frees 'r', which is not live") !=
        std::string::npos);
}

TEST_CASE("integrity: use after free and use before allocation are caught", "[program]") {
  TrainingProgram freed_early = Program();
  // Free r at relu's forward End: the loss (t4) then reads a dead buffer.
  MemoryEvent free_r = freed_early.steps[6].end.front();
  freed_early.steps[6].end.erase(freed_early.steps[6].end.begin());
  freed_early.steps[3].end.push_back(free_r);
  CHECK(testing::RequireError(VerifyProgram(freed_early)).find("t4 (loss loss) uses input 'r'") !=
        std::string::npos);

  TrainingProgram late = Program();
  // Allocate y at relu's Begin instead of mm's: mm writes y before it exists.
  late.steps[3].begin.push_back(late.steps[2].begin.front());
  late.steps[2].begin.clear();
  const std::string late_error = testing::RequireError(VerifyProgram(late));
  CHECK(late_error.find("t2") != std::string::npos);
  CHECK(late_error.find("'y' before it is allocated") != std::string::npos);
}

TEST_CASE("integrity: a dangling buffer id and broken phases are caught", "[program]") {
  TrainingProgram dangling = Program();
  dangling.steps[2].begin.push_back(AllocEvent(BufferId(999)));
  CHECK_FALSE(VerifyProgram(dangling).ok());
  TrainingProgram phases = Program();
  phases.micro_batch.end -= 1;
  CHECK_FALSE(VerifyProgram(phases).ok());
}

}  // namespace
}  // namespace memplan
