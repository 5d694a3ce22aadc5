#include "runtime/program_buffers.h"

#include <iterator>
#include <string>

#include "runtime/program_shapes.h"

namespace memplan {

ProgramBuffers::ProgramBuffers(const Graph& graph, const TrainingProgram& program, Backend& backend)
    : g_(graph), p_(program), backend_(backend) {}

ProgramBuffers::~ProgramBuffers() {
  forward_views_.clear();
  recomputed_views_.clear();
  handed_over_.clear();
  buffers_.clear();
}

Status ProgramBuffers::Init(const Bindings& bindings) {
  shapes_.resize(p_.buffers.size());
  for (const Buffer& b : p_.buffers) {
    auto shape = EvaluateShape(b.shape, bindings);
    if (!shape.ok()) return MakeError("shape of buffer '" + b.name + "': " + shape.error().message);
    shapes_[b.id.index()] = *shape;
  }
  buffers_.resize(p_.buffers.size());
  value_shape_.assign(g_.num_values(), TensorShape());
  forward_buffer_.assign(g_.num_values(), BufferId());
  recomputed_buffer_.assign(g_.num_values(), BufferId());
  forward_step_.assign(g_.num_nodes(), -1);
  for (LogicalTime t = 0; t < static_cast<LogicalTime>(p_.steps.size()); ++t) {
    const Step& s = p_.step(t);
    if (!s.node.valid()) continue;
    const Node& node = g_.node(s.node);
    if (s.kind == StepKind::kForward) forward_step_[s.node.index()] = t;
    if (s.kind != StepKind::kForward && s.kind != StepKind::kRecompute) continue;
    auto& map = s.kind == StepKind::kForward ? forward_buffer_ : recomputed_buffer_;
    for (size_t j = 0; j < s.outputs.size() && j < node.outputs.size(); ++j)
      if (node.outputs[j].valid() && s.outputs[j].valid())
        map[node.outputs[j].index()] = s.outputs[j];
  }
  for (const Buffer& b : p_.buffers)
    if (b.role == BufferRole::kInput && b.value.valid())
      value_shape_[b.value.index()] = shapes_[b.id.index()];
  return OkStatus();
}

std::vector<int64_t> ProgramBuffers::AccountedBytes() const {
  std::vector<int64_t> bytes(p_.buffers.size());
  for (const Buffer& b : p_.buffers)
    bytes[b.id.index()] = NumElements(shapes_[b.id.index()]) * ByteSize(b.dtype);
  return bytes;
}

Status ProgramBuffers::Allocate(BufferId b, BufferId storage_of) {
  const Buffer& buffer = p_.buffer(b);
  if (storage_of.valid()) {
    auto it = handed_over_.find(storage_of.index());
    MEMPLAN_CHECK(it != handed_over_.end());
    // The program hands over storage only between buffers of one dtype and shape; the category
    // may change (a saved gradient becomes a parameter's gradient).
    MEMPLAN_CHECK(it->second.dtype == buffer.dtype && it->second.shape == shapes_[b.index()]);
    if (p_.buffer(storage_of).category != buffer.category)
      it->second.storage->Recategorize(buffer.category);
    buffers_[b.index()] = std::move(it->second);
    handed_over_.erase(it);
    return OkStatus();
  }
  MEMPLAN_TRY(buffers_[b.index()],
              backend_.Allocate(shapes_[b.index()], buffer.dtype, buffer.category));
  return OkStatus();
}

void ProgramBuffers::Release(BufferId b, bool handed_over) {
  const DeviceStorage* storage = buffers_[b.index()].storage.get();
  DropViewsOf(b, storage);
  if (handed_over) handed_over_[b.index()] = std::move(buffers_[b.index()]);
  buffers_[b.index()] = DeviceTensor();
}

// A view dies with its base, except one of a parameter that the backend materialised as scratch
// (a Transpose of a weight): it keeps the values the parameter had when it ran, and the
// parameter can be live again only with those values (gathered again before backward by an
// FSDP or ZeRO-3 rank that freed it after forward, as the engines re-fill the very storage the
// saved view aliases). A view sharing the base's storage is the base reinterpreted, which
// ValueThrough rebuilds.
void ProgramBuffers::DropViewsOf(BufferId base, const DeviceStorage* storage) {
  const BufferRole role = p_.buffer(base).role;
  const bool parameter =
      role == BufferRole::kParameterMaster || role == BufferRole::kParameterWorking;
  for (auto* views : {&forward_views_, &recomputed_views_}) {
    for (auto it = views->begin(); it != views->end();) {
      const bool dies =
          it->second.base == base && (!parameter || it->second.tensor.storage.get() == storage);
      it = dies ? views->erase(it) : std::next(it);
    }
  }
}

Expected<DeviceTensor> ProgramBuffers::ValueThrough(ValueId u, BufferId b) const {
  if (!Live(b)) return MakeError("reads '" + p_.buffer(b).name + "', which is not live");
  for (const auto* views : {&recomputed_views_, &forward_views_}) {
    auto it = views->find(u.index());
    if (it != views->end() && it->second.base == b) return it->second.tensor;
  }
  const TensorShape& shape = value_shape_[u.index()];
  if (NumElements(shape) != Get(b).numel())
    return MakeError("value '" + g_.value(u).name + "' " + ShapeToString(shape) +
                     " does not fit buffer '" + p_.buffer(b).name + "' " +
                     ShapeToString(Get(b).shape));
  return Get(b).View(shape);
}

bool ProgramBuffers::Holds(BufferId b, ValueId u) const {
  return u.valid() && (p_.buffer(b).value == u || forward_buffer_[u.index()] == b ||
                       recomputed_buffer_[u.index()] == b);
}

void ProgramBuffers::RecordView(StepKind kind, ValueId u, DeviceTensor tensor, BufferId base) {
  auto& views = kind == StepKind::kForward ? forward_views_ : recomputed_views_;
  views[u.index()] = ViewValue{std::move(tensor), base};
}

}  // namespace memplan
