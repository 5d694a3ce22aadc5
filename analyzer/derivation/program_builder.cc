#include "analyzer/derivation/program_builder.h"

#include "analyzer/program/unguarded_events.h"

namespace memplan {

ProgramBuilder::ProgramBuilder(const Graph& graph) : graph_(graph) {
  // Steps and buffers are large structs appended one at a time; on a graph of 50,000 nodes the
  // vectors' doublings moved ~100 MB. A program has about one to two steps and two to three
  // buffers per node and value (forward, backward, gradients, casts), so reserving that much
  // up front leaves nothing to move; pages of the reserve never written are never touched.
  const size_t scale = graph.num_nodes() + graph.values().size();
  program_.steps.reserve(2 * scale + 64);
  program_.buffers.reserve(4 * scale + 64);
  uses_.reserve(4 * scale + 64);
}

BufferId ProgramBuilder::NewBuffer(std::string name, BufferRole role, MemoryCategory category,
                                   DType dtype, Shape shape, ValueId value, NodeId node,
                                   bool persistent) {
  // Built in place: a Buffer is large, a moved temporary costs as much as the fields.
  Buffer& b = program_.buffers.emplace_back();
  b.id = BufferId(program_.buffers.size() - 1);
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
  uses_.push_back(BufferUse{});
  return b.id;
}

Step& ProgramBuilder::NewStep(StepKind kind, std::string name, NodeId node) {
  Step& s = program_.steps.emplace_back();  // in place, as NewBuffer's
  s.kind = kind;
  s.name = std::move(name);
  s.node = node;
  if (node.valid()) {
    s.op_type = graph_.node(node).op_type;
    s.domain = graph_.node(node).domain;
  }
  return s;
}

void ProgramBuilder::AllocateHere(BufferId b) {
  current().begin.push_back(AllocEvent(b));
  uses_[b.index()].alloc = Now() - 1;
  Touch(b);
}

void ProgramBuilder::Touch(BufferId b) {
  if (b.valid()) uses_[b.index()].last_use = Now() - 1;
}

}  // namespace memplan
