#pragma once
// A dense row-major tensor of the CPU reference backend: shape + dtype + shared float storage.
//
// Every element is stored as a float whatever the dtype: fp16/bf16 tensors hold fp32 numbers
// already rounded to the narrower format (runtime/precision_emulation.h), integer and bool tensors
// hold their values as floats (exact up to 2^24, plenty for indices, labels and shapes). The dtype
// is what the tensor *is* on the device, and what the allocator accounts.
//
// Copies share storage (like torch.Tensor): a copy is a second handle, not a second buffer, so
// Reshape-like ops return views that cost no memory, and saved tensors need no extra buffer.
// Clone() makes an independent buffer. A default-constructed Tensor is "undefined": the value of an
// omitted optional input or output, or of a gradient that was not asked for.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/program/memory_category.h"
#include "graph/dtype.h"
#include "runtime/allocator.h"
#include "runtime/tensor_shape.h"

namespace memplan {

// Product of the dims; 1 for a scalar (rank 0).
int64_t NumElements(const TensorShape& shape);
// "[2, 3, 4]", for error messages.
std::string ShapeToString(const TensorShape& shape);

class Tensor {
 public:
  Tensor() = default;

  // A zero-filled tensor whose storage comes from `allocator`, accounted under `category`.
  // REQUIRES: every dim >= 0.
  static Tensor Zeros(TensorShape shape, DType dtype, Allocator& allocator,
                      MemoryCategory category);
  // Like Zeros but the elements are left unset, for a caller that writes every one of them
  // before anything reads it (zero-filling fresh buffers cost a fifth of a CPU verify run).
  // Accounted exactly as Zeros.
  static Tensor Uninitialized(TensorShape shape, DType dtype, Allocator& allocator,
                              MemoryCategory category);
  // A tensor holding `values` (row-major). REQUIRES: values.size() == NumElements(shape).
  // The values are stored as given; round them first for fp16/bf16 if needed.
  static Tensor FromValues(TensorShape shape, const std::vector<float>& values,
                           DType dtype = DType::kFloat32,
                           Allocator& allocator = PlainCpuAllocator(),
                           MemoryCategory category = MemoryCategory::kOther);
  // Wraps memory the caller owns (and keeps alive longer than every copy of the tensor).
  static Tensor Borrow(float* data, TensorShape shape, DType dtype);

  bool defined() const { return storage_ != nullptr; }
  const TensorShape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_.at(static_cast<size_t>(axis)); }
  // Cached: kernels test `i < numel()` in their element loops.
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  // Bytes the tensor occupies on the device in its dtype (what allocators account).
  int64_t accounted_bytes() const { return numel() * ByteSize(dtype_); }

  // Storage is shared between copies, so writing through any handle is seen by all of them.
  const float* data() const { return storage_ ? storage_->data : nullptr; }
  float* mutable_data() const { return storage_ ? storage_->data : nullptr; }
  float operator[](int64_t flat_index) const { return storage_->data[flat_index]; }

  // A tensor of another shape over the same storage. REQUIRES: same element count.
  Tensor View(TensorShape shape) const;
  // The same storage under another dtype label (no conversion; use the Cast kernel to convert).
  Tensor WithDType(DType dtype) const;
  // An independent copy in a fresh buffer.
  Tensor Clone(Allocator& allocator, MemoryCategory category) const;
  // Moves the storage to another category in its allocator's counters.
  void Recategorize(MemoryCategory category) const;
  // True when both handles use the same buffer.
  bool SharesStorageWith(const Tensor& other) const { return storage_ == other.storage_; }

  std::vector<float> ToVector() const;
  // Values as integers (truncated toward zero, saturated at the int64 range: ONNX uses INT64_MAX
  // for "to the end" in Slice, which a float cannot represent exactly).
  std::vector<int64_t> ToInt64Vector() const;

 private:
  struct Storage {
    float* data = nullptr;
    Allocator* allocator = nullptr;  // null for borrowed memory
    ~Storage();
  };

  std::shared_ptr<Storage> storage_;
  TensorShape shape_;
  int64_t numel_ = 1;  // NumElements(shape_), kept in step with shape_
  DType dtype_ = DType::kUndefined;
};

}  // namespace memplan
