// BatchLinearSizes must answer exactly what EvaluateBufferSizes (Dim::Evaluate per buffer, the
// independent implementation) answers: the same sizes, or the same error, at every micro-batch,
// including sizes that are not linear in the batch, unbound symbols and 64-bit overflow.

#include <catch2/catch.hpp>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/simulation/batch_linear_sizes.h"
#include "analyzer/simulation/simulator.h"

namespace memplan {
namespace {

struct SizedProgram {
  TrainingProgram program;
  SymbolId batch = 0;
  SymbolId seq = 0;

  SizedProgram() {
    batch = program.symbols.Intern("batch");
    seq = program.symbols.Intern("seq");
    program.batch_symbol = batch;
  }
  Dim B() const { return Dim::Symbol(batch); }
  Dim S() const { return Dim::Symbol(seq); }
  void Add(const std::string& name, Dim bytes) {
    Buffer b;
    b.id = BufferId(program.buffers.size());
    b.name = name;
    b.bytes = std::move(bytes);
    program.buffers.push_back(std::move(b));
  }
  Bindings Base(std::optional<int64_t> seq_value) const {
    Bindings bindings(&program.symbols);
    if (seq_value) bindings.Bind(seq, *seq_value);
    return bindings;
  }
};

// Both ways at micro-batch m: equal sizes, or errors with equal messages.
void CheckSame(const SizedProgram& p, const Bindings& base, int64_t m) {
  const BatchLinearSizes forms = BatchLinearSizes::Of(p.program, base, p.batch);
  Bindings at_m = base;
  at_m.Bind(p.batch, m);
  const Expected<std::vector<int64_t>> fast = forms.At(p.program, at_m, m);
  const Expected<std::vector<int64_t>> reference = EvaluateBufferSizes(p.program, at_m);
  INFO("m = " << m);
  REQUIRE(fast.ok() == reference.ok());
  if (fast.ok()) {
    CHECK(*fast == *reference);
  } else {
    CHECK(fast.error().message == reference.error().message);
  }
}

const std::vector<int64_t> kMicroBatches = {1,
                                            2,
                                            3,
                                            7,
                                            64,
                                            99,
                                            100,
                                            101,
                                            4096,
                                            int64_t{1} << 30,
                                            (int64_t{1} << 31) + 1,
                                            (int64_t{1} << 40) - 3,
                                            int64_t{1} << 55,
                                            int64_t{1} << 58,
                                            int64_t{1} << 61};

TEST_CASE("linear sizes equal EvaluateBufferSizes on linear and non-linear sizes",
          "[simulator][planner]") {
  SizedProgram p;
  p.Add("activation", p.B() * 16 * 4);        // 64 m: linear
  p.Add("attention", p.B() * p.S() * p.S());  // 9 m at seq = 3: linear once seq is bound
  p.Add("square", p.B() * p.B() * 4);         // 4 m^2: evaluated by Dim::Evaluate
  p.Add("constant", Dim(7));
  p.Add("zero", Dim(0));
  p.Add("shrinking", Dim(100) - p.B());  // 100 - m: negative past m = 100, an error
  // By hand at m = 3: 64 * 3 = 192, 9 * 3 = 27, 4 * 9 = 36, 7, 0, 97.
  const BatchLinearSizes forms = BatchLinearSizes::Of(p.program, p.Base(3), p.batch);
  Bindings at_three = p.Base(3);
  at_three.Bind(p.batch, 3);
  auto sizes = forms.At(p.program, at_three, 3);
  REQUIRE(sizes.ok());
  CHECK(*sizes == std::vector<int64_t>{192, 27, 36, 7, 0, 97});
  for (int64_t m : kMicroBatches) CheckSame(p, p.Base(3), m);
}

TEST_CASE("linear sizes report an unbound symbol as EvaluateBufferSizes does",
          "[simulator][planner][bad-input]") {
  SizedProgram p;
  p.Add("activation", p.B() * 16);
  p.Add("tokens", p.B() * p.S() * 2);
  for (int64_t m : {1, 8}) CheckSame(p, p.Base(std::nullopt), m);
  // A bound of 0 is outside the form's proof (factors >= 1): Dim::Evaluate answers.
  for (int64_t m : {1, 8}) CheckSame(p, p.Base(0), m);
}

TEST_CASE("linear sizes overflow where EvaluateBufferSizes does",
          "[simulator][planner][bad-input]") {
  SizedProgram p;
  // 2^40 m overflows 64 bits from m = 2^23 on; with seq = 2^20, 2^20 m * seq also does.
  p.Add("wide", p.B() * (int64_t{1} << 40));
  p.Add("tokens", p.B() * p.S());
  // A sum whose positive part overflows before the negative term brings it back: Dim::Evaluate
  // fails on the partial sum, so the form must not answer either.
  p.Add("cancelling", p.B() * (int64_t{1} << 32) + Dim(std::numeric_limits<int64_t>::min() / 2));
  for (int64_t m : kMicroBatches) CheckSame(p, p.Base(int64_t{1} << 20), m);
  for (int64_t m : {int64_t{1} << 22, (int64_t{1} << 23) - 1, int64_t{1} << 23})
    CheckSame(p, p.Base(int64_t{1} << 20), m);
}

TEST_CASE("linear sizes stop at a total of 2^62 bytes as EvaluateBufferSizes does",
          "[simulator][planner][bad-input]") {
  SizedProgram p;
  // Each 2^40 m bytes: two of them pass 2^62 from m = 2^21 on (2 * 2^61 = 2^62 is still allowed).
  p.Add("first", p.B() * (int64_t{1} << 40));
  p.Add("second", p.B() * (int64_t{1} << 40));
  for (int64_t m : {(int64_t{1} << 21) - 1, int64_t{1} << 21, (int64_t{1} << 21) + 1})
    CheckSame(p, p.Base(std::nullopt), m);
}

}  // namespace
}  // namespace memplan
