#include "analyzer/derivation/program_builder.h"

namespace memplan {

BufferId ProgramBuilder::NewBuffer(std::string name, BufferRole role, MemoryCategory category,
                                   DType dtype, Shape shape, ValueId value, NodeId node,
                                   bool persistent) {
  Buffer b;
  b.id = BufferId(program_.buffers.size());
  b.name = std::move(name);
  b.role = role;
  b.category = category;
  b.dtype = dtype;
  // TensorBytes packs 4-bit dtypes two to a byte (an nf4 base weight's codes); others are
  // elements * ByteSize.
  b.bytes = TensorBytes(shape.NumElements(), dtype);
  b.shape = std::move(shape);
  b.value = value;
  b.node = node;
  b.persistent = persistent;
  program_.buffers.push_back(std::move(b));
  uses_.push_back(BufferUse{});
  return program_.buffers.back().id;
}

Step& ProgramBuilder::NewStep(StepKind kind, std::string name, NodeId node) {
  Step s;
  s.kind = kind;
  s.name = std::move(name);
  s.node = node;
  if (node.valid()) {
    s.op_type = graph_.node(node).op_type;
    s.domain = graph_.node(node).domain;
  }
  program_.steps.push_back(std::move(s));
  return program_.steps.back();
}

void ProgramBuilder::AllocateHere(BufferId b) {
  current().begin.push_back(
      MemoryEvent{MemoryEvent::Action::kAlloc, b, MemoryEvent::Guard::kNone, BufferId()});
  uses_[b.index()].alloc = Now() - 1;
  Touch(b);
}

void ProgramBuilder::Touch(BufferId b) {
  if (b.valid()) uses_[b.index()].last_use = Now() - 1;
}

}  // namespace memplan
