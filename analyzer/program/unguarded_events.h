#pragma once
// The plain memory events: an allocation or free that no guard conditions and that takes no
// storage over. Most steps emit only these; the derivation passes and the tests that build
// programs by hand spell them through these two helpers instead of the four-field aggregate.

#include "analyzer/program/training_program.h"

namespace memplan {

inline MemoryEvent AllocEvent(BufferId b) {
  return MemoryEvent{MemoryEvent::Action::kAlloc, b, MemoryEvent::Guard::kNone, BufferId()};
}

inline MemoryEvent FreeEvent(BufferId b) {
  return MemoryEvent{MemoryEvent::Action::kFree, b, MemoryEvent::Guard::kNone, BufferId()};
}

}  // namespace memplan
