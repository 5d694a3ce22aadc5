#pragma once
// Finding a derived program's buffers and steps by name inside a test; a lookup that must succeed
// fails the test naming what it did not find.

#include <catch2/catch.hpp>

#include <string>

#include "analyzer/program/training_program.h"
#include "tests/analyzer/derivation/program_test_graphs.h"

namespace memplan::testing {

// The buffer named `name`, or null.
inline const Buffer* Find(const TrainingProgram& program, const std::string& name) {
  for (const Buffer& b : program.buffers)
    if (b.name == name) return &b;
  return nullptr;
}

// The buffer named `name`; fails the test without one.
inline const Buffer& Named(const TrainingProgram& program, const std::string& name) {
  const Buffer* b = Find(program, name);
  if (b == nullptr) FAIL("no buffer " << name);
  return *b;
}

// The step of `kind` named `name`; fails the test without one.
inline LogicalTime StepOf(const TrainingProgram& program, StepKind kind, const std::string& name) {
  for (LogicalTime t = 0; t < static_cast<LogicalTime>(program.steps.size()); ++t)
    if (program.step(t).kind == kind && program.step(t).name == name) return t;
  FAIL("no step " << name);
  return -1;
}

// The step whose End frees `b` (-1 when none does).
inline LogicalTime FreedAt(const TrainingProgram& program, BufferId b) {
  for (LogicalTime t = 0; t < static_cast<LogicalTime>(program.steps.size()); ++t)
    for (const MemoryEvent& e : program.step(t).end)
      if (e.action == MemoryEvent::Action::kFree && e.buffer == b) return t;
  return -1;
}

// The bytes of `b` at one sample (the batch symbol bound to 1).
inline int64_t BytesPerSample(const TestGraph& t, const Buffer& b) {
  auto bytes = b.bytes.Evaluate(t.Bind(1));
  REQUIRE(bytes.ok());
  return *bytes;
}

}  // namespace memplan::testing
