// Loss scaling in the training program: what each mode keeps and makes (GradScaler's scale,
// growth tracker, found_inf, inv_scale; a static scale's found_inf), the defaults per precision,
// and parsing --loss-scaling.

#include <catch2/catch.hpp>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/program/loss_scaling.h"
#include "analyzer/program/program_integrity.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan {
namespace {

using testing::TestGraph;

// x [B,10] -> MatMul W [10,10]: 100 parameters.
TestGraph Linear() { return testing::Linear(10, 10); }

struct ScalerMemory {
  LossScalingMode mode = LossScalingMode::kNone;
  std::vector<std::string> scalars;  // kScalar buffers, in creation order
  int64_t persistent_bytes = 0;
  int64_t unscale_live_bytes = -1;  // live bytes at the unscale step; -1 when there is none
  int64_t optimizer_live_bytes = 0;
  int64_t init_steps = 0;
};

ScalerMemory Measure(const TestGraph& t, Precision precision,
                     std::optional<LossScaling> scaling = std::nullopt) {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.optimizer = OptimizerKind::kSgd;
  options.precision = precision;
  options.loss_scaling = scaling;
  const TrainingProgram program = testing::DeriveVerified(t.graph, options);
  ScalerMemory m;
  m.mode = program.loss_scaling.mode;
  for (const Buffer& b : program.buffers)
    if (b.role == BufferRole::kScalar) m.scalars.push_back(b.name);
  for (const Step& s : program.steps)
    if (s.kind == StepKind::kInitLossScaler) ++m.init_steps;
  ExactAllocator exact;
  auto result = Simulate(program, t.Bind(1), exact);
  REQUIRE(result.ok());
  m.persistent_bytes = result->persistent_bytes;
  for (const TimelinePoint& p : result->timeline) {
    StepKind kind = program.step(p.at.step).kind;
    if (kind == StepKind::kUnscaleAndCheckOverflow) m.unscale_live_bytes = p.live_bytes;
    if (kind == StepKind::kOptimizerStep) m.optimizer_live_bytes = p.live_bytes;
  }
  return m;
}

// Persistent in mixed SGD: W fp32 400 + W.float16 200 = 600; at the optimizer step the fp16
// gradient (200) is live too.
constexpr int64_t kParameters = 600;
constexpr int64_t kGradient = 200;

TEST_CASE("dynamic loss scaling: GradScaler's device state", "[precision]") {
  ScalerMemory m = Measure(Linear(), Precision::kFp16);  // fp16's default
  CHECK(m.mode == LossScalingMode::kDynamic);
  CHECK(m.scalars == std::vector<std::string>{"loss_scale", "loss_scale_growth_tracker",
                                              "found_inf", "inv_scale"});
  CHECK(m.init_steps == 1);
  // scale fp32 4 + growth tracker int32 4 persist.
  CHECK(m.persistent_bytes == kParameters + 8);
  // At unscale: + found_inf 4 + inv_scale 4.
  CHECK(m.unscale_live_bytes == kParameters + kGradient + 8 + 8);
  // inv_scale is gone by the optimizer step; found_inf is still read there.
  CHECK(m.optimizer_live_bytes == kParameters + kGradient + 8 + 4);
}

TEST_CASE("static loss scaling keeps no device state, still checks overflow", "[precision]") {
  ScalerMemory m = Measure(Linear(), Precision::kFp16, LossScaling{LossScalingMode::kStatic, 1024});
  CHECK(m.mode == LossScalingMode::kStatic);
  CHECK(m.scalars == std::vector<std::string>{"found_inf"});
  CHECK(m.init_steps == 0);
  CHECK(m.persistent_bytes == kParameters);
  CHECK(m.unscale_live_bytes == kParameters + kGradient + 4);
  CHECK(m.optimizer_live_bytes == kParameters + kGradient + 4);
}

TEST_CASE("bf16 needs no loss scaling unless asked, fp32 never scales", "[precision]") {
  ScalerMemory bf16 = Measure(Linear(), Precision::kBf16);
  CHECK(bf16.mode == LossScalingMode::kNone);
  CHECK(bf16.scalars.empty());
  CHECK(bf16.unscale_live_bytes == -1);
  CHECK(bf16.persistent_bytes == kParameters);

  ScalerMemory asked =
      Measure(Linear(), Precision::kBf16, LossScaling{LossScalingMode::kDynamic, 65536});
  CHECK(asked.mode == LossScalingMode::kDynamic);
  CHECK(asked.persistent_bytes == kParameters + 8);

  ScalerMemory fp32 =
      Measure(Linear(), Precision::kFp32, LossScaling{LossScalingMode::kDynamic, 65536});
  CHECK(fp32.mode == LossScalingMode::kNone);
  CHECK(fp32.scalars.empty());
}

TEST_CASE("a non-positive static scale is an error", "[precision]") {
  TestGraph t = Linear();
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.precision = Precision::kFp16;
  options.loss_scaling = LossScaling{LossScalingMode::kStatic, -2};
  auto program = DeriveTrainingProgram(t.graph, options);
  REQUIRE_FALSE(program.ok());
  CHECK(program.error().message ==
        "a static loss scale must be a positive finite number, got -2.000000");
}

TEST_CASE("ParseLossScaling", "[precision]") {
  auto parse = [](std::string_view text) {
    auto s = ParseLossScaling(text);
    REQUIRE(s.ok());
    return *s;
  };
  CHECK(parse("none").mode == LossScalingMode::kNone);
  CHECK(parse("dynamic").mode == LossScalingMode::kDynamic);
  CHECK(parse("dynamic").scale == 65536.0);
  CHECK(parse("static:1024").mode == LossScalingMode::kStatic);
  CHECK(parse("static:1024").scale == 1024.0);
  CHECK(parse("128").mode == LossScalingMode::kStatic);
  CHECK(parse("128").scale == 128.0);
  for (const char* bad : {"static", "static:", "static:-1", "0", "1e999", "abc", "static:12x"}) {
    INFO(bad);
    auto s = ParseLossScaling(bad);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message == "loss scaling '" + std::string(bad) +
                                   "' is not one of none, dynamic, static:<scale> or a positive "
                                   "scale such as 1024");
  }
  // Issue 45: a scale beyond float32's largest finite value (3.40282e38) is inf in the float32
  // tensor torch's GradScaler keeps; the largest float32 itself is still a scale.
  for (const char* beyond : {"static:1e308", "3.5e38"}) {
    INFO(beyond);
    auto s = ParseLossScaling(beyond);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message == "loss scaling '" + std::string(beyond) +
                                   "': a loss scale is a positive float32 (at most 3.4e38)");
  }
  CHECK(parse("static:3.4028234663852886e38").scale == 3.4028234663852886e38);
  for (const char* zero : {"static:-0", "static:0.0", "static:NaN", "static:nan", "static:inf"}) {
    INFO(zero);
    CHECK_FALSE(ParseLossScaling(zero).ok());
  }
  CHECK(LossScalingModeName(LossScalingMode::kStatic) == "static");
}

}  // namespace
}  // namespace memplan
