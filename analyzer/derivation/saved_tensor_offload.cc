#include "analyzer/derivation/saved_tensor_offload.h"

#include <algorithm>

namespace memplan {
namespace {

bool AnyValid(const std::vector<BufferId>& buffers) {
  return std::any_of(buffers.begin(), buffers.end(), [](BufferId b) { return b.valid(); });
}

// A copy of `source` named `name` in `space`: the same dtype and shape, so the same bytes.
BufferId CopyOf(ProgramBuilder& builder, BufferId source, std::string name, MemorySpace space,
                NodeId node) {
  const Buffer original = builder.program().buffer(source);  // a copy: NewBuffer grows the vector
  const BufferId copy =
      builder.NewBuffer(std::move(name), BufferRole::kOffloadCopy, MemoryCategory::kActivations,
                        original.dtype, original.shape, original.value, node);
  Buffer& b = builder.program().buffers[copy.index()];
  b.bytes = original.bytes;  // a packed 4-bit tensor keeps its packed size
  b.space = space;
  return copy;
}

}  // namespace

std::vector<BufferId> SavedTensorOffload::Pack(const std::string& name, NodeId node,
                                               const std::vector<BufferId>& saved) {
  std::vector<BufferId> host(saved.size());
  if (!AnyValid(saved)) return host;
  Step& step = builder_.NewStep(StepKind::kTransfer, "pack " + name);
  step.transfer = Transfer{TransferDirection::kToHost, TransferOverlap::kNone};
  for (size_t i = 0; i < saved.size(); ++i) {
    if (!saved[i].valid()) continue;
    host[i] =
        CopyOf(builder_, saved[i], builder_.program().buffer(saved[i]).name + "@host(" + name + ")",
               MemorySpace::kHost, node);
    // Autograd holds the host copy from this forward to the op's backward.
    builder_.program().buffers[host[i].index()].held_for_backward = true;
    builder_.AllocateHere(host[i]);
    builder_.Touch(saved[i]);
    builder_.current().inputs.push_back(saved[i]);
    builder_.current().outputs.push_back(host[i]);
  }
  return host;
}

std::vector<BufferId> SavedTensorOffload::Unpack(const std::string& name, NodeId node,
                                                 const std::vector<BufferId>& host) {
  std::vector<BufferId> device(host.size());
  if (!AnyValid(host)) return device;
  Step& step = builder_.NewStep(StepKind::kTransfer, "unpack " + name);
  step.transfer = Transfer{TransferDirection::kToDevice, TransferOverlap::kNone};
  for (size_t i = 0; i < host.size(); ++i) {
    if (!host[i].valid()) continue;
    std::string copy_name = builder_.program().buffer(host[i]).name;
    copy_name = copy_name.substr(0, copy_name.rfind("@host(")) + "@unpacked(" + name + ")";
    device[i] = CopyOf(builder_, host[i], std::move(copy_name), MemorySpace::kDevice, node);
    builder_.AllocateHere(device[i]);
    builder_.Touch(host[i]);
    builder_.current().inputs.push_back(host[i]);
    builder_.current().outputs.push_back(device[i]);
  }
  return device;
}

}  // namespace memplan
