#include "runtime/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "graph/expected.h"

namespace memplan {

int64_t NumElements(const TensorShape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const TensorShape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor::Storage::~Storage() {
  if (allocator != nullptr) allocator->Free(data);
}

Tensor Tensor::Zeros(TensorShape shape, DType dtype, Allocator& allocator,
                     MemoryCategory category) {
  Tensor t = Uninitialized(std::move(shape), dtype, allocator, category);
  std::memset(t.storage_->data, 0, static_cast<size_t>(t.numel_) * sizeof(float));
  return t;
}

Tensor Tensor::Uninitialized(TensorShape shape, DType dtype, Allocator& allocator,
                             MemoryCategory category) {
  for (int64_t d : shape) MEMPLAN_CHECK(d >= 0);
  const int64_t n = NumElements(shape);
  AllocationRequest request;
  request.storage_bytes = static_cast<size_t>(n) * sizeof(float);
  request.accounted_bytes = static_cast<size_t>(n * ByteSize(dtype));
  request.category = category;
  Tensor t;
  t.storage_ = std::make_shared<Storage>();
  t.storage_->data = static_cast<float*>(allocator.Allocate(request));
  t.storage_->allocator = &allocator;
  t.shape_ = std::move(shape);
  t.numel_ = n;
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::FromValues(TensorShape shape, const std::vector<float>& values, DType dtype,
                          Allocator& allocator, MemoryCategory category) {
  MEMPLAN_CHECK(static_cast<int64_t>(values.size()) == NumElements(shape));
  Tensor t = Uninitialized(std::move(shape), dtype, allocator, category);
  std::copy(values.begin(), values.end(), t.mutable_data());
  return t;
}

Tensor Tensor::Borrow(float* data, TensorShape shape, DType dtype) {
  Tensor t;
  t.storage_ = std::make_shared<Storage>();
  t.storage_->data = data;
  t.numel_ = NumElements(shape);
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::View(TensorShape shape) const {
  MEMPLAN_CHECK(defined() && NumElements(shape) == numel());
  Tensor t = *this;  // numel_ stays: the element count is the same
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::WithDType(DType dtype) const {
  Tensor t = *this;
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::Clone(Allocator& allocator, MemoryCategory category) const {
  MEMPLAN_CHECK(defined());
  Tensor t = Uninitialized(shape_, dtype_, allocator, category);
  std::copy(data(), data() + numel(), t.mutable_data());
  return t;
}

void Tensor::Recategorize(MemoryCategory category) const {
  if (storage_ && storage_->allocator) storage_->allocator->Recategorize(storage_->data, category);
}

std::vector<float> Tensor::ToVector() const {
  if (!defined()) return {};
  return std::vector<float>(data(), data() + numel());
}

std::vector<int64_t> Tensor::ToInt64Vector() const {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(numel()));
  // 2^63 is exactly representable as a float; anything at or beyond it saturates.
  constexpr float kTwoTo63 = 9223372036854775808.0f;
  for (int64_t i = 0; i < numel(); ++i) {
    const float v = data()[i];
    if (std::isnan(v)) {
      out.push_back(0);
    } else if (v >= kTwoTo63) {
      out.push_back(std::numeric_limits<int64_t>::max());
    } else if (v <= -kTwoTo63) {
      out.push_back(std::numeric_limits<int64_t>::min());
    } else {
      out.push_back(static_cast<int64_t>(v));
    }
  }
  return out;
}

}  // namespace memplan
