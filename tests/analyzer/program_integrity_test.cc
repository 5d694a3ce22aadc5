// VerifyProgram catches hand-broken programs.

#include <catch2/catch.hpp>

#include "analyzer/unguarded_events.h"
#include "tests/analyzer/program_test_derive.h"
#include "tests/analyzer/program_test_graphs.h"

namespace memplan {
namespace {

using testing::LinearRelu;
using testing::SumLossSgd;

// Derived without VerifyProgram: the first test case below is the check that it verifies.
TrainingProgram Program() {
  auto program = DeriveTrainingProgram(LinearRelu().graph, SumLossSgd());
  REQUIRE(program.ok());
  return std::move(program).value();
}

// Step t of the program above (see program_derivation_test.cc):
//   t3 forward relu  begin +r  end -y      t6 backward relu  begin +grad(y)  end -r -grad(r)
TEST_CASE("integrity: a derived program verifies", "[program]") {
  CHECK(VerifyProgram(Program()).ok());
}

TEST_CASE("integrity: a missing free is a leak", "[program]") {
  TrainingProgram p = Program();
  p.steps[3].end.clear();  // y is never freed
  auto status = VerifyProgram(p);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().message.find("'y'") != std::string::npos);
  CHECK(status.error().message.find("leak") != std::string::npos);
}

TEST_CASE("integrity: a double free is caught", "[program]") {
  TrainingProgram p = Program();
  p.steps[6].end.push_back(p.steps[6].end.front());  // frees r twice
  auto status = VerifyProgram(p);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().message.find("frees 'r', which is not live") != std::string::npos);
}

TEST_CASE("integrity: use after free and use before allocation are caught", "[program]") {
  TrainingProgram freed_early = Program();
  // Free r at relu's forward End: the loss (t4) then reads a dead buffer.
  MemoryEvent free_r = freed_early.steps[6].end.front();
  freed_early.steps[6].end.erase(freed_early.steps[6].end.begin());
  freed_early.steps[3].end.push_back(free_r);
  auto a = VerifyProgram(freed_early);
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().message.find("t4 (loss loss) uses input 'r'") != std::string::npos);

  TrainingProgram late = Program();
  // Allocate y at relu's Begin instead of mm's: mm writes y before it exists.
  late.steps[3].begin.push_back(late.steps[2].begin.front());
  late.steps[2].begin.clear();
  auto b = VerifyProgram(late);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().message.find("t2") != std::string::npos);
  CHECK(b.error().message.find("'y' before it is allocated") != std::string::npos);
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
