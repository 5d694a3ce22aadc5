#pragma once
// What a CPU kernel sees and returns. Kernels are pure functions of already-shaped tensors and the
// node's ONNX attributes; which tensors backward receives is decided by the op registry's
// saved-for-backward rule (graph/ops), never here. Every kernel computes in fp32 and rounds its
// results to the result dtype (fp16/bf16 emulation), so a kernel fed fp16 tensors behaves like a
// GPU kernel that accumulates in fp32 and stores fp16.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyzer/program/memory_category.h"
#include "graph/attributes.h"
#include "graph/dtype.h"
#include "graph/expected.h"
#include "runtime/allocator.h"
#include "runtime/tensor.h"

namespace memplan {

// Set by the executor per step: where buffers come from and how they are accounted.
struct KernelContext {
  Allocator* allocator = &PlainCpuAllocator();
  // Category of the tensors a kernel returns (forward outputs, input gradients).
  MemoryCategory output_category = MemoryCategory::kTransients;
  // Category of the buffers forward makes only for backward (ForwardResult::extras).
  MemoryCategory extra_category = MemoryCategory::kActivations;
  // Training mode: BatchNormalization uses batch statistics, Dropout drops. The executor trains,
  // so this is the default whatever training_mode the ONNX export recorded.
  bool training = true;
  // Seed of Dropout's mask; the executor derives one per node and step so recompute reproduces
  // the same mask.
  uint64_t seed = 0;
};

// Forward-only buffers a kernel returns for its backward, by name:
//   BatchNormalization, LayerNormalization: "mean", "invstd"  (fp32, per channel / per row)
//   MaxPool:                                  "indices"        (int64, like ONNX's Indices output)
//   Dropout:                                  "mask"           (bool, 1 = kept)
using ExtraTensors = std::map<std::string, Tensor>;

struct ForwardArgs {
  const Attributes* attributes = nullptr;  // null = every attribute at its ONNX default
  std::vector<Tensor> inputs;              // ONNX input order; undefined = omitted optional
  int num_outputs = 1;  // how many outputs the node declares (Split, Dropout's mask, MaxPool's
                        // indices, BatchNormalization's running statistics)
};

struct ForwardResult {
  std::vector<Tensor> outputs;  // ONNX output order, num_outputs entries
  ExtraTensors extras;
};

struct BackwardArgs {
  const Attributes* attributes = nullptr;
  // Forward inputs and outputs in ONNX order; only the ones the op saves need be defined.
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  ExtraTensors extras;
  // Shape and dtype of every forward input slot, always given (autograd keeps this metadata for
  // free; broadcasting ops need it to reduce gradients back). An omitted optional input has
  // dtype kUndefined.
  std::vector<TensorShape> input_shapes;
  std::vector<DType> input_dtypes;
  // Gradient of each forward output; undefined = that output got no gradient (zero).
  std::vector<Tensor> grad_outputs;
  // Which input gradients to compute (empty = all floating inputs); a false entry is skipped.
  std::vector<bool> needs_input_grad;

  bool InputPresent(size_t input) const {
    return input < input_dtypes.size() && input_dtypes[input] != DType::kUndefined;
  }
  bool NeedsGrad(size_t input) const {
    return needs_input_grad.empty() || (input < needs_input_grad.size() && needs_input_grad[input]);
  }
};

// One gradient per forward input, in input order; undefined where not needed or not
// differentiable (integer inputs, shapes, indices).
using InputGradients = std::vector<Tensor>;

using ForwardKernel = Expected<ForwardResult> (*)(const KernelContext&, const ForwardArgs&);
using BackwardKernel = Expected<InputGradients> (*)(const KernelContext&, const BackwardArgs&);

}  // namespace memplan
