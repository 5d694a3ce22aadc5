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

// One transfer step named `step_name` that copies each valid buffer of `sources` into the new
// buffer `make_copy(source)` returns (invalid where the source is), or no step when none is valid.
template <class MakeCopy>
std::vector<BufferId> TransferCopies(ProgramBuilder& builder, std::string step_name,
                                     TransferDirection direction,
                                     const std::vector<BufferId>& sources, MakeCopy make_copy) {
  std::vector<BufferId> copies(sources.size());
  if (!AnyValid(sources)) return copies;
  Step& step = builder.NewStep(StepKind::kTransfer, std::move(step_name));
  step.transfer = Transfer{direction, TransferOverlap::kNone};
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i].valid()) continue;
    copies[i] = make_copy(sources[i]);
    builder.AllocateHere(copies[i]);
    builder.Touch(sources[i]);
    builder.current().inputs.push_back(sources[i]);
    builder.current().outputs.push_back(copies[i]);
  }
  return copies;
}

}  // namespace

std::vector<BufferId> SavedTensorOffload::Pack(const std::string& name, NodeId node,
                                               const std::vector<BufferId>& saved) {
  return TransferCopies(
      builder_, "pack " + name, TransferDirection::kToHost, saved, [&](BufferId source) {
        const BufferId host =
            CopyOf(builder_, source, builder_.program().buffer(source).name + "@host(" + name + ")",
                   MemorySpace::kHost, node);
        // Autograd holds the host copy from this forward to the op's backward.
        builder_.program().buffers[host.index()].held_for_backward = true;
        return host;
      });
}

std::vector<BufferId> SavedTensorOffload::Unpack(const std::string& name, NodeId node,
                                                 const std::vector<BufferId>& host) {
  return TransferCopies(
      builder_, "unpack " + name, TransferDirection::kToDevice, host, [&](BufferId source) {
        std::string copy_name = builder_.program().buffer(source).name;
        copy_name = copy_name.substr(0, copy_name.rfind("@host(")) + "@unpacked(" + name + ")";
        return CopyOf(builder_, source, std::move(copy_name), MemorySpace::kDevice, node);
      });
}

}  // namespace memplan
