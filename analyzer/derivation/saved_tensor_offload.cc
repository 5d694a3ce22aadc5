#include "analyzer/derivation/saved_tensor_offload.h"

#include <algorithm>

#include "analyzer/program/unguarded_events.h"

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

bool SavedTensorOffload::UnslothMoves(std::optional<int64_t> bytes, DType dtype) {
  if (!bytes) return true;
  const int64_t stored = dtype == DType::kFloat32 ? *bytes / 2 : *bytes;
  return stored > kUnslothMinimumBytes;
}

DType SavedTensorOffload::UnslothStoredDtype(DType dtype) {
  return dtype == DType::kFloat32 ? DType::kBFloat16 : dtype;
}

bool SavedTensorOffload::Moves(std::optional<int64_t> bytes, bool is_parameter) const {
  if (!IsTorchtuneHooks(hooks_)) return true;
  return !is_parameter && (!bytes || *bytes >= kTorchtuneMinOffloadBytes);
}

std::vector<BufferId> SavedTensorOffload::Pack(const std::string& name, NodeId node,
                                               const std::vector<BufferId>& saved,
                                               const std::vector<bool>& moves) {
  std::vector<BufferId> sources(saved.size());
  std::vector<int64_t> ids(saved.size(), 0);
  std::vector<BufferId> released;  // torchtune-streams: fwd_stash entries this pack frees
  for (size_t k = 0; k < saved.size(); ++k) {
    if (!saved[k].valid()) continue;
    ids[k] = ++last_id_;
    if (k >= moves.size() || !moves[k]) continue;
    sources[k] = saved[k];
    if (!Streams()) continue;
    while (!forward_stash_.empty() &&
           forward_stash_.front().id <= ids[k] - kTorchtuneMaxForwardStash) {
      released.push_back(forward_stash_.front().device);
      forward_stash_.erase(forward_stash_.begin());
    }
  }
  if (hooks_ == OffloadHooks::kUnsloth) return PackUnsloth(name, node, sources);
  std::vector<BufferId> copies = TransferCopies(
      builder_, "pack " + name, TransferDirection::kToHost, sources, [&](BufferId source) {
        const BufferId host =
            CopyOf(builder_, source, builder_.program().buffer(source).name + "@host(" + name + ")",
                   MemorySpace::kHost, node);
        // Autograd holds the host copy from this forward to the op's backward.
        builder_.program().buffers[host.index()].held_for_backward = true;
        return host;
      });
  // The stashed GPU tensors stay alive through this pack step (s0.wait_event, then del).
  for (BufferId b : released) builder_.Touch(b);
  if (Streams()) {
    for (size_t k = 0; k < copies.size(); ++k)
      if (copies[k].valid()) forward_stash_.push_back({ids[k], sources[k], copies[k]});
  }
  return copies;
}

std::vector<BufferId> SavedTensorOffload::PackUnsloth(const std::string& name, NodeId node,
                                                      const std::vector<BufferId>& sources) {
  std::vector<BufferId> copies = TransferCopies(
      builder_, "pack " + name, TransferDirection::kToHost, sources, [&](BufferId source) {
        const Buffer original = builder_.program().buffer(source);
        const DType stored = UnslothStoredDtype(original.dtype);
        const BufferId host = builder_.NewBuffer(
            original.name + "@host(" + name + ")", BufferRole::kOffloadCopy,
            MemoryCategory::kActivations, stored, original.shape, original.value, node);
        builder_.program().buffers[host.index()].space = MemorySpace::kHost;
        builder_.program().buffers[host.index()].held_for_backward = true;
        unsloth_sources_.emplace_back(host, source);
        if (!staging_[0].valid()) {
          // GPU_BUFFERS and GPU_BUFFERS_B: made in the first step, resident in every later one
          // (allocated at setup, never freed).
          TrainingProgram& program = builder_.program();
          for (int k = 0; k < 2; ++k) {
            staging_[k] = builder_.NewBuffer(
                std::string(k == 0 ? "GPU_BUFFERS" : "GPU_BUFFERS_B") + "(unsloth staging)",
                BufferRole::kOffloadCopy, MemoryCategory::kActivations, stored, original.shape,
                ValueId(), node, /*persistent=*/true);
            program.steps[static_cast<size_t>(program.setup.begin)].begin.push_back(
                AllocEvent(staging_[k]));
          }
        }
        return host;
      });
  return copies;
}

std::vector<BufferId> SavedTensorOffload::UnpackUnsloth(const std::string& name, NodeId node,
                                                        const std::vector<BufferId>& host) {
  std::vector<BufferId> device(host.size());
  bool any = false;
  for (BufferId b : host) any = any || b.valid();
  if (!any) return device;
  Step& step = builder_.NewStep(StepKind::kTransfer, "unpack " + name);
  step.transfer = Transfer{TransferDirection::kToDevice, TransferOverlap::kNone};
  for (size_t i = 0; i < host.size(); ++i) {
    if (!host[i].valid()) continue;
    BufferId forward;
    for (const auto& [h, f] : unsloth_sources_)
      if (h == host[i]) forward = f;
    const BufferId staging = staging_[next_staging_];
    next_staging_ ^= 1;
    builder_.Touch(host[i]);
    builder_.Touch(staging);
    builder_.current().inputs.push_back(host[i]);
    builder_.current().outputs.push_back(staging);
    const Buffer original = builder_.program().buffer(forward);
    if (original.dtype == builder_.program().buffer(host[i]).dtype) {
      device[i] = staging;  // buffer.detach(): the re-run reads the staging buffer itself
      continue;
    }
    // buffer.to(saved_dtype): a GPU tensor of the input's own dtype.
    std::string copy_name = original.name + "@unpacked(" + name + ")";
    device[i] = builder_.NewBuffer(std::move(copy_name), BufferRole::kOffloadCopy,
                                   MemoryCategory::kActivations, original.dtype, original.shape,
                                   original.value, node);
    builder_.AllocateHere(device[i]);
  }
  return device;
}

std::vector<BufferId> SavedTensorOffload::Unpack(const std::string& name, NodeId node,
                                                 const std::vector<BufferId>& host,
                                                 bool held_to_next_node) {
  if (hooks_ == OffloadHooks::kUnsloth) return UnpackUnsloth(name, node, host);
  // torchtune-streams: a tensor still in fwd_stash comes back as the GPU tensor itself.
  std::vector<BufferId> to_copy = host;
  for (BufferId b : host) unpacked_for_node_ = unpacked_for_node_ || b.valid();
  std::vector<BufferId> stashed(host.size());
  for (size_t i = 0; i < host.size(); ++i) {
    for (const Stashed& s : forward_stash_) {
      if (host[i].valid() && s.host == host[i]) {
        stashed[i] = s.device;
        to_copy[i] = BufferId();
      }
    }
  }
  std::vector<BufferId> device = TransferCopies(
      builder_, "unpack " + name, TransferDirection::kToDevice, to_copy, [&](BufferId source) {
        std::string copy_name = builder_.program().buffer(source).name;
        copy_name = copy_name.substr(0, copy_name.rfind("@host(")) + "@unpacked(" + name + ")";
        return CopyOf(builder_, source, std::move(copy_name), MemorySpace::kDevice, node);
      });
  for (size_t i = 0; i < host.size(); ++i) {
    if (stashed[i].valid()) {
      device[i] = stashed[i];
      // The host copy stays in the tracker until this unpack (freed, unread, here).
      builder_.Touch(host[i]);
    } else if (device[i].valid() && Streams() && held_to_next_node) {
      this_node_.push_back(device[i]);
    }
  }
  return device;
}

void SavedTensorOffload::AtBackwardStep() {
  if (!Streams() || !unpacked_for_node_) return;
  unpacked_for_node_ = false;
  for (BufferId b : previous_node_) builder_.Touch(b);
  for (const Stashed& s : forward_stash_) builder_.Touch(s.device);
  forward_stash_.clear();
  previous_node_ = std::move(this_node_);
  this_node_.clear();
}

}  // namespace memplan
