#include "runtime/backend.h"

namespace memplan {

DeviceTensor DeviceTensor::View(TensorShape new_shape) const {
  MEMPLAN_CHECK(defined() && NumElements(new_shape) == numel());
  DeviceTensor view = *this;
  view.shape = std::move(new_shape);
  return view;
}

}  // namespace memplan
