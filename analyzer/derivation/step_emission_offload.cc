// Saved-tensor hooks (--offload-hooks): where torchtune's OffloadActivations and Unsloth's
// offloaded checkpointing see a save, and the module inputs they move to the host.

#include "analyzer/derivation/step_emitter.h"

namespace memplan::emission {

// --offload-hooks torchtune*: the ops whose saves never reach OffloadActivations' pack hook
// (saved_tensor_offload.h): the output head, which runs under NoOpManager, and every op of a
// checkpointed module, which saves through torch.utils.checkpoint's hooks; and each module's
// tensor inputs, which the checkpoint saves through it instead (values read inside and made
// outside, not parameters). The head is the linear layer behind each loss's logits: walking
// back through views, casts (`.float()`) and a bias Add to the first other op (the MatMul or
// Gemm), all marked (what they save: nothing but the matmul's).
void StepEmitter::FindTorchtuneScopes() {
  beyond_hooks_.assign(g_.num_nodes(), false);
  for (const auto& loss : a_.losses) {
    ValueId v = loss.output;
    while (v.valid() && g_.value(v).producer.valid()) {
      const NodeId producer = g_.value(v).producer;
      const Node& node = g_.node(producer);
      beyond_hooks_[producer.index()] = true;
      ValueId next;
      const OpSchema& schema = registry_.FindOrUnknown(node.op_type, node.domain);
      if (nodes_[producer.index()].is_view || schema.converts_dtype) {
        if (!node.inputs.empty()) next = node.inputs[0];
      } else if (schema.adds_inputs && node.inputs.size() == 2) {
        if (IsParameter(node.inputs[1])) next = node.inputs[0];
        if (IsParameter(node.inputs[0])) next = node.inputs[1];
      }
      v = next;
    }
  }
  module_inputs_.assign(options_.recompute_modules.size(), {});
  module_inputs_host_.assign(options_.recompute_modules.size(), {});
  for (size_t group = 0; group < options_.recompute_modules.size(); ++group) {
    std::set<NodeId> members(options_.recompute_modules[group].begin(),
                             options_.recompute_modules[group].end());
    for (NodeId m : options_.recompute_modules[group]) {
      if (m.index() < beyond_hooks_.size()) beyond_hooks_[m.index()] = true;
    }
    std::vector<NodeId> ordered(members.begin(), members.end());
    std::sort(ordered.begin(), ordered.end(), [this](NodeId a, NodeId b) {
      return order_position_[a.index()] < order_position_[b.index()];
    });
    std::vector<ValueId>& inputs = module_inputs_[group];
    for (NodeId m : ordered) {
      for (ValueId u : g_.node(m).inputs) {
        if (!IsRuntimeValue(u) || IsParameter(u)) continue;
        const NodeId producer = g_.value(u).producer;
        if (producer.valid() && members.count(producer)) continue;
        if (std::find(inputs.begin(), inputs.end(), u) == inputs.end()) inputs.push_back(u);
      }
    }
  }
}

// --offload-hooks unsloth (saved_tensor_offload.h): no hooks see any save; each checkpointed
// module but the last (in forward order) moves its first input, the one its first op reads
// first (module_inputs_ lists them in that order).
void StepEmitter::FindUnslothInputs() {
  FindTorchtuneScopes();
  beyond_hooks_.assign(g_.num_nodes(), true);
  size_t last = module_inputs_.size();
  size_t last_position = 0;
  for (size_t group = 0; group < options_.recompute_modules.size(); ++group) {
    if (module_inputs_[group].size() > 1) module_inputs_[group].resize(1);
    for (NodeId m : options_.recompute_modules[group]) {
      if (last == module_inputs_.size() || order_position_[m.index()] > last_position) {
        last = group;
        last_position = order_position_[m.index()];
      }
    }
  }
  if (last < module_inputs_.size()) module_inputs_[last].clear();
}

bool StepEmitter::ReachesOffloadHooks(NodeId n) const {
  return n.index() >= beyond_hooks_.size() || !beyond_hooks_[n.index()];
}

// Per entry of `saved` (SavedAtForward(n)): whether the hooks move it to the host (an
// nn.Parameter is one the op reads itself, not a view or autocast copy of it).
std::vector<bool> StepEmitter::MovedByHooks(NodeId n, const std::vector<BufferId>& saved) const {
  const Node& node = g_.node(n);
  const NodeInfo& info = nodes_[n.index()];
  std::vector<bool> moves(saved.size(), false);
  for (size_t k = 0; k < saved.size(); ++k) {
    if (!saved[k].valid()) continue;
    const Buffer& b = p_.buffer(saved[k]);
    bool parameter = false;
    const SavedTensor& s = info.saved[k];
    if (s.source == SavedTensor::Source::kInput &&
        static_cast<size_t>(s.index) < node.inputs.size()) {
      parameter =
          IsParameter(node.inputs[static_cast<size_t>(s.index)]) &&
          (b.role == BufferRole::kParameterMaster || b.role == BufferRole::kParameterWorking);
    }
    moves[k] = saved_offload_.Moves(b.bytes.constant_value(), parameter);
  }
  return moves;
}

// --offload-hooks torchtune* with module recompute: the checkpoint of the module `n` opens
// saves the module's tensor inputs through the offload hooks (before its first op runs).
void StepEmitter::PackModuleInputs(NodeId n) {
  if (module_inputs_.empty()) return;
  const int group = a_.recompute.group_of[n.index()];
  if (group < 0 || static_cast<size_t>(group) >= module_inputs_.size()) return;
  std::vector<BufferId>& host = module_inputs_host_[static_cast<size_t>(group)];
  if (!host.empty()) return;
  std::vector<BufferId> saved;
  for (ValueId u : module_inputs_[static_cast<size_t>(group)])
    saved.push_back(value_storage_[u.index()]);
  std::vector<bool> moves(saved.size(), false);
  for (size_t k = 0; k < saved.size(); ++k) {
    if (!saved[k].valid()) continue;
    const Buffer& b = p_.buffer(saved[k]);
    moves[k] = options_.offload.hooks == OffloadHooks::kUnsloth
                   ? SavedTensorOffload::UnslothMoves(b.bytes.constant_value(), b.dtype)
                   : saved_offload_.Moves(b.bytes.constant_value(), false);
  }
  host = saved_offload_.Pack("checkpoint " + g_.node(n).name, n, saved, moves);
  host.resize(saved.size());
}

// The module's re-run reads its inputs back from the host: the unpacked copies stand for the
// forward values in the re-run (EnsureAvailable), freed after their last use there.
void StepEmitter::UnpackModuleInputs(size_t group) {
  if (group >= module_inputs_host_.size()) return;
  const std::vector<BufferId>& host = module_inputs_host_[group];
  const std::vector<BufferId> device = saved_offload_.Unpack(
      "checkpoint " + g_.node(options_.recompute_modules[group].front()).name, NodeId(), host,
      /*held_to_next_node=*/false);
  for (size_t k = 0; k < device.size() && k < module_inputs_[group].size(); ++k)
    if (device[k].valid()) recomputed_storage_[module_inputs_[group][k].index()] = device[k];
}

}  // namespace memplan::emission
