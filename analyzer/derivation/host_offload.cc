#include "analyzer/derivation/host_offload.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/derivation/program_rewrite.h"
#include "analyzer/recompute/module_units.h"

// The rewrite follows rank_sharding.cc: new steps are collected around the original ones
// (StepInsertions) and new events appended to original steps, then the steps are laid out again.

namespace memplan {
namespace {

Step TransferStep(std::string name, TransferDirection direction, TransferOverlap overlap) {
  Step s;
  s.kind = StepKind::kTransfer;
  s.name = std::move(name);
  s.transfer = Transfer{direction, overlap};
  return s;
}

class HostOffloader {
 public:
  HostOffloader(TrainingProgram program, const Graph& graph, const OffloadOptions& options)
      : p_(std::move(program)), g_(graph), o_(options), insert_(p_) {}

  Expected<TrainingProgram> Run() {
    if (p_.data_parallel_ranks != 1)
      return MakeError("--offload " + std::string(OffloadModeName(o_.mode)) +
                       " is modelled for one GPU; with --gpus it is not planned yet");
    for (const ParameterBuffers& pb : p_.parameters)
      if (!p_.buffer(pb.master).bytes.constant_value())
        return MakeError("parameter '" + p_.buffer(pb.master).name +
                         "' has a symbolic size; it cannot be offloaded");
    body_ = RecordBodyUses(p_);
    optimizer_step_ = FindOptimizerStep();
    const bool params = o_.mode == OffloadMode::kOptimizerAndParams;
    if (params) OffloadParameters();
    OffloadOptimizer(params);
    insert_.Apply(p_);
    p_.offload = o_.mode;
    return std::move(p_);
  }

 private:
  LogicalTime FindOptimizerStep() const {
    for (LogicalTime t = p_.optimizer.begin; t < p_.optimizer.end; ++t)
      if (p_.step(t).kind == StepKind::kOptimizerStep) return t;
    MEMPLAN_UNREACHABLE("a program without an optimizer step");
    return -1;
  }

  bool ReadByBody(BufferId b) const { return b.valid() && !body_.steps[b.index()].empty(); }

  // A new buffer like `like` (dtype, shape, category) in pinned host memory.
  BufferId NewHostBuffer(BufferId like, std::string name, BufferRole role, bool persistent) {
    Buffer b = p_.buffer(like);
    b.id = BufferId(static_cast<int>(p_.buffers.size()));
    b.name = std::move(name);
    b.role = role;
    b.space = MemorySpace::kHost;
    b.persistent = persistent;
    b.held_for_backward = false;
    b.node = NodeId();
    p_.buffers.push_back(std::move(b));
    return p_.buffers.back().id;
  }

  void AllocateAtSetup(BufferId b) {
    MEMPLAN_CHECK(p_.setup.size() > 0) << "a program without a setup step";
    p_.steps[static_cast<size_t>(p_.setup.begin)].begin.push_back(AllocEvent(b));
  }

  // Every event of the optimizer phase on `b` removed.
  void DropOptimizerPhaseEvents(BufferId b) {
    for (LogicalTime t = p_.optimizer.begin; t < p_.optimizer.end; ++t) {
      Step& s = p_.steps[static_cast<size_t>(t)];
      for (auto* events : {&s.begin, &s.end})
        events->erase(std::remove_if(events->begin(), events->end(),
                                     [&](const MemoryEvent& e) { return e.buffer == b; }),
                      events->end());
    }
  }

  // ---- optimizer+params --------------------------------------------------------------------

  // The unit a parameter belongs to: the repeated block of the first forward step that reads
  // it, else that step itself (host_offload.h).
  std::pair<int64_t, int64_t> UnitKey(LogicalTime first_read) const {
    const Step& s = p_.step(first_read);
    if (s.node.valid() && s.node.index() < block_of_.size() && block_of_[s.node.index()] >= 0)
      return {0, block_of_[s.node.index()]};
    return {1, first_read};
  }

  void OffloadParameters() {
    block_of_.assign(g_.num_nodes(), -1);
    const std::vector<CheckpointableModule> blocks = FindCheckpointableModules(g_);
    for (size_t m = 0; m < blocks.size(); ++m)
      for (NodeId n : blocks[m].nodes) block_of_[n.index()] = static_cast<int64_t>(m);

    std::map<std::pair<int64_t, int64_t>, size_t> unit_of;
    std::map<BufferId, BufferId> host_of;
    std::vector<std::vector<BufferId>> hosts;  // per unit: the host copies fetched
    for (ParameterBuffers& pb : p_.parameters) {
      LogicalTime first = -1;
      for (BufferId b : {pb.master, pb.working})
        if (ReadByBody(b))
          first = first < 0 ? body_.steps[b.index()].front()
                            : std::min(first, body_.steps[b.index()].front());
      for (BufferId* slot : {&pb.master, &pb.working}) {
        if (!slot->valid()) continue;
        if (!ReadByBody(*slot)) {
          // Read by no compute step (a master under master weights): it simply lives on the host.
          p_.buffers[slot->index()].space = MemorySpace::kHost;
          continue;
        }
        const BufferId full = *slot;
        const BufferId host = NewHostBuffer(full, p_.buffer(full).name + "@host",
                                            p_.buffer(full).role, /*persistent=*/true);
        p_.buffers[full.index()].persistent = false;
        host_of[full] = host;
        *slot = host;
        const auto key = UnitKey(first);
        auto [it, inserted] = unit_of.emplace(key, units_.size());
        if (inserted) {
          units_.emplace_back();
          hosts.emplace_back();
        }
        units_[it->second].buffers.push_back(full);
        hosts[it->second].push_back(host);
      }
    }
    // Setup allocates the host copies in place of the GPU buffers.
    for (LogicalTime t = p_.setup.begin; t < p_.setup.end; ++t)
      for (MemoryEvent& e : p_.steps[static_cast<size_t>(t)].begin)
        if (auto it = host_of.find(e.buffer); it != host_of.end()) e.buffer = it->second;
    for (ParameterUnit& unit : units_) ComputeUnitSpan(p_, body_, unit);
    PlaceUnitFetches(
        p_, units_, o_.prefetch_units, /*reshard_after_forward=*/true,
        [&](size_t u, bool backward) {
          Step s = TransferStep(
              "fetch unit" + std::to_string(u) + (backward ? " (backward)" : " (forward)"),
              TransferDirection::kToDevice,
              backward ? TransferOverlap::kBackward : TransferOverlap::kForward);
          s.inputs = hosts[u];
          s.outputs = units_[u].buffers;
          for (BufferId b : units_[u].buffers) s.begin.push_back(AllocEvent(b));
          return s;
        },
        insert_);
  }

  // ---- the optimizer's state (both modes) ----------------------------------------------------

  void OffloadOptimizer(bool params) {
    Step to_host =
        TransferStep("gradients to host", TransferDirection::kToHost, TransferOverlap::kBackward);
    Step to_device =
        TransferStep("parameters to device", TransferDirection::kToDevice, TransferOverlap::kNone);
    for (size_t i = 0; i < p_.parameters.size(); ++i) {
      ParameterBuffers& pb = p_.parameters[i];
      if (!pb.gradient.valid()) continue;  // frozen: no optimizer work
      for (BufferId s : pb.optimizer_states) p_.buffers[s.index()].space = MemorySpace::kHost;
      if (pb.master_gradient.valid()) {
        // The host gradient below is the fp32 copy the update reads.
        DropOptimizerPhaseEvents(pb.master_gradient);
        pb.master_gradient = BufferId();
      }
      pb.host_parameter = HostParameter(pb, params);
      const BufferId gpu_gradient = pb.gradient;
      pb.host_gradient = NewHostBuffer(gpu_gradient, p_.buffer(gpu_gradient).name + "@host",
                                       BufferRole::kOffloadCopy, /*persistent=*/true);
      Buffer& hg = p_.buffers[pb.host_gradient.index()];
      hg.dtype = p_.buffer(pb.host_parameter).dtype;
      hg.bytes = TensorBytes(hg.shape.NumElements(), hg.dtype);
      if (params) {
        GradientToHostAfterAccumulation(i);
        continue;
      }
      to_host.inputs.push_back(gpu_gradient);
      to_host.outputs.push_back(pb.host_gradient);
      to_host.begin.push_back(AllocIfNotLiveEvent(pb.host_gradient));
      // What the GPU reads of the parameter is refreshed from the updated host copy.
      to_device.inputs.push_back(pb.host_parameter);
      for (BufferId b : {pb.working, pb.master})
        if (b.valid() && !p_.buffer(b).on_host()) to_device.outputs.push_back(b);
    }
    if (params) return;
    if (!to_host.inputs.empty()) insert_.Before(p_.optimizer.begin).push_back(std::move(to_host));
    if (!to_device.inputs.empty()) insert_.After(optimizer_step_).push_back(std::move(to_device));
  }

  // The host copy the CPU optimizer updates: the master when no compute step reads it (it moves),
  // else a persistent host twin (host_offload.h). With parameters offloaded the master already
  // names its host copy.
  BufferId HostParameter(ParameterBuffers& pb, bool params) {
    if (params || p_.buffer(pb.master).on_host()) return pb.master;
    if (pb.working.valid() && !ReadByBody(pb.master)) {
      p_.buffers[pb.master.index()].space = MemorySpace::kHost;
      return pb.master;
    }
    const BufferId twin = NewHostBuffer(pb.master, p_.buffer(pb.master).name + "@host",
                                        BufferRole::kOffloadCopy, /*persistent=*/true);
    AllocateAtSetup(twin);
    return twin;
  }

  // optimizer+params: the GPU gradient lives within a micro-batch; after its last accumulation
  // a transfer copies it into the host gradient (accumulated there) and frees it. The host
  // gradient becomes the parameter's gradient, which zero_grad frees.
  void GradientToHostAfterAccumulation(size_t i) {
    ParameterBuffers& pb = p_.parameters[i];
    const LogicalTime last = body_.last_accumulation[i];
    if (last < 0) return;  // no gradient reaches it in the body
    const BufferId gpu = pb.gradient;
    p_.buffers[gpu.index()].persistent = false;
    Step s = TransferStep(p_.buffer(gpu).name + " to host", TransferDirection::kToHost,
                          TransferOverlap::kBackward);
    s.inputs = {gpu};
    s.outputs = {pb.host_gradient};
    s.begin.push_back(AllocIfNotLiveEvent(pb.host_gradient));
    s.end.push_back(FreeEvent(gpu));
    insert_.After(last).push_back(std::move(s));
    for (LogicalTime t = p_.optimizer.begin; t < p_.optimizer.end; ++t)
      for (MemoryEvent& e : p_.steps[static_cast<size_t>(t)].end)
        if (e.buffer == gpu) e.buffer = pb.host_gradient;
    pb.gradient = pb.host_gradient;
  }

  TrainingProgram p_;
  const Graph& g_;
  const OffloadOptions& o_;
  StepInsertions insert_;
  BodyUses body_;
  LogicalTime optimizer_step_ = -1;
  std::vector<int64_t> block_of_;  // per node: its repeated block, -1 when none
  std::vector<ParameterUnit> units_;
};

}  // namespace

Expected<TrainingProgram> OffloadToHost(TrainingProgram program, const Graph& graph,
                                        const OffloadOptions& options) {
  if (!OffloadsOptimizer(options.mode)) return program;
  HostOffloader offloader(std::move(program), graph, options);
  return offloader.Run();
}

}  // namespace memplan
