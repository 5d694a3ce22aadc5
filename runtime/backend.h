#pragma once
// The device a training program runs on, as the executor (runtime/executor.h) sees it: allocate
// and free buffers through an instrumented allocator, copy data in and out, run one forward /
// backward / loss / optimizer kernel. The executor owns the order of everything (it interprets
// the TrainingProgram); a backend owns only storage and arithmetic. The CPU reference backend is
// runtime/cpu/cpu_backend.h; a CUDA backend implements the same interface in runtime/cuda/.
//
// Storage model. A DeviceTensor is a handle: shared storage plus the shape and dtype it is read
// as. Copies share storage; the storage is returned to the backend's allocator when the last
// handle goes (like torch.Tensor). The executor drops its handle at the program's Free event, so
// the allocator's live bytes follow the program exactly.
//
// Accounting. Allocate() accounts `NumElements(shape) * ByteSize(dtype)` bytes (the dtype's
// device size) under a MemoryCategory; Memory() reports live and peak bytes per category in those
// units, so measurements compare with the simulator's byte for byte. Kernel temporaries and the
// results of view ops that a backend cannot express as views are *not* program buffers: a backend
// keeps them outside the counted allocator (and may report them as scratch).
//
// Loss and optimizer kinds are passed by the names analyzer/program/training_program.h prints
// (LossKindName: "cross_entropy", "mse", "sum"; OptimizerKindName: "sgd", "momentum", "adam",
// "adamw", "adafactor"), which keeps this header free of both the analyzer's and the CPU kernels'
// enums.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/program/memory_category.h"
#include "graph/attributes.h"
#include "graph/dtype.h"
#include "graph/expected.h"
#include "runtime/tensor.h"

namespace memplan {

// Backend-specific storage of one buffer (a CPU Tensor, a CUDA pointer...).
class DeviceStorage {
 public:
  virtual ~DeviceStorage() = default;
  // Counts the storage under `category` from now on. The program hands a buffer's storage on to
  // a buffer of another category (a fused loss's saved weight gradient, which the parameter's
  // gradient steals), and the device's per-category figures follow it as the simulator's do.
  virtual void Recategorize(MemoryCategory category) = 0;
};

struct DeviceTensor {
  std::shared_ptr<DeviceStorage> storage;  // null = undefined (omitted input, no gradient)
  TensorShape shape;
  DType dtype = DType::kUndefined;

  bool defined() const { return storage != nullptr; }
  int64_t numel() const { return NumElements(shape); }
  // The same storage read with another shape. REQUIRES: same element count.
  DeviceTensor View(TensorShape new_shape) const;
};

// Live and peak accounted bytes of the program buffers (not of scratch).
struct DeviceMemory {
  CategoryBytes live;
  CategoryBytes peak;  // per category, each its own maximum
  int64_t live_total = 0;
  int64_t peak_total = 0;          // the peak of the sum
  int64_t scratch_peak_bytes = 0;  // kernel temporaries outside the program (informational)
};

// One forward (or recompute) kernel call.
struct ForwardCall {
  std::string_view op_type;
  std::string_view domain;
  const Attributes* attributes = nullptr;
  std::vector<DeviceTensor> inputs;  // ONNX order; undefined = omitted
  int num_outputs = 1;
  // Per output: the program buffer to write (rounded to its dtype), or undefined when the output
  // has no buffer of its own (a view op's output, an output nothing reads): the backend then
  // returns whatever holds it (a view of the input's storage, or uncounted scratch).
  std::vector<DeviceTensor> outputs;
  // Destinations of the kernel's extras by kernel name ("mean", "invstd", "indices", "mask").
  std::map<std::string, DeviceTensor> extras;
  bool training = true;
  uint64_t seed = 0;  // Dropout's mask; equal seeds give equal masks (recompute relies on it)
};

// One backward kernel call. Only the saved inputs/outputs/extras are defined.
struct BackwardCall {
  std::string_view op_type;
  std::string_view domain;
  const Attributes* attributes = nullptr;
  std::vector<DeviceTensor> inputs;
  std::vector<DeviceTensor> outputs;
  std::map<std::string, DeviceTensor> extras;
  std::vector<TensorShape> input_shapes;   // every input slot
  std::vector<DType> input_dtypes;         // kUndefined = omitted
  std::vector<DeviceTensor> grad_outputs;  // undefined = no gradient
  // Per input slot: where its gradient goes (undefined = not wanted) and whether it is added to
  // what the destination holds (a value with several consumers) rather than written.
  std::vector<DeviceTensor> grad_inputs;
  std::vector<bool> accumulate;
  bool training = true;
  uint64_t seed = 0;
};

struct LossCall {
  std::string_view loss;    // "cross_entropy" | "mse" | "sum"
  DeviceTensor prediction;  // [N, C], [N, S, C] or [N, C, d...] logits for cross entropy
  // Cross entropy: the prediction's class dimension (TrainingProgram's LossTerm::class_axis);
  // -1: CrossEntropyClassAxis of its rank.
  int class_axis = -1;
  DeviceTensor label;       // undefined for "sum"
  DeviceTensor loss_value;  // rank-0 destination
  // Cross entropy: where log-probabilities (prediction's shape, fp32) go when the program keeps
  // them for backward; undefined otherwise.
  DeviceTensor log_prob;
};

struct LossBackwardCall {
  std::string_view loss;
  // Cross entropy reads `log_prob` when defined, else `prediction`; mse reads both prediction and
  // label; sum reads neither (only grad's shape).
  DeviceTensor prediction;
  DeviceTensor log_prob;
  int class_axis = -1;  // as LossCall's
  DeviceTensor label;
  float grad_scale = 1.0f;  // loss scale / k
  DeviceTensor grad;        // destination: d(grad_scale * loss) / d(prediction)
};

struct OptimizerHyperparameters {
  std::string kind = "adam";  // OptimizerKindName
  double learning_rate = 1e-3;
  double momentum = 0.9;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0.0;
};

// One parameter's update: master (fp32 or the only copy) from gradient, states in the
// optimizer's order; `working` (mixed precision) is refreshed from the updated master.
struct OptimizerCall {
  const OptimizerHyperparameters* hyper = nullptr;
  DeviceTensor master;
  DeviceTensor working;  // undefined without mixed precision
  DeviceTensor gradient;
  std::vector<DeviceTensor> states;
  int64_t step = 1;  // 1-based count of updates applied to this parameter, this one included
};

// Where the executor is in the program: announced before each step execution's allocations.
struct StepSite {
  int64_t step = -1;        // index into TrainingProgram::steps
  int64_t micro_batch = 0;  // 0-based within the optimizer step (0 outside the body)
  std::string_view name;    // "forward fc1", as reports name steps
  std::string_view node;    // graph node name; empty for steps that run none
};

// Told of every step the executor enters, after the backend itself has noted it: how a profiler
// follows the program on a backend without wrapping it (profiler/cupti/step_correlation.h
// brackets each step's device work in a CUPTI correlation region).
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void OnEnterStep(const StepSite& site) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;  // "cpu", "cuda"
  // Whether two runs of the same program give bit-identical results. A GPU's atomic
  // reductions and cuBLAS's split-K sums add in a different order run to run.
  virtual bool deterministic() const { return true; }

  // Called by the executor before each step's Begin events: the backend notes the step
  // (NoteStep), then the observer, if any, is told.
  void EnterStep(const StepSite& site) {
    NoteStep(site);
    if (step_observer_ != nullptr) step_observer_->OnEnterStep(site);
  }
  // REQUIRES: `observer` outlives the backend, or is replaced (null: nobody is told) before it
  // goes.
  void set_step_observer(StepObserver* observer) { step_observer_ = observer; }

  // A zero-filled program buffer, accounted under `category`. Error when the device is out of
  // memory.
  virtual Expected<DeviceTensor> Allocate(const TensorShape& shape, DType dtype,
                                          MemoryCategory category) = 0;
  // A constant input (Slice starts, Reshape shape, Dropout ratio): not a program buffer, not
  // counted (the simulator gives constants no memory).
  virtual Expected<DeviceTensor> Constant(const TensorShape& shape, DType dtype,
                                          const std::vector<float>& values) = 0;
  virtual DeviceMemory Memory() const = 0;
  virtual void ResetPeaks() = 0;

  // values (row-major, one per element) rounded to dst's dtype.
  virtual Status Upload(const DeviceTensor& dst, const std::vector<float>& values) = 0;
  virtual Expected<std::vector<float>> Download(const DeviceTensor& src) = 0;

  // dst = src rounded to dst's dtype. REQUIRES: equal element counts.
  virtual Status Cast(const DeviceTensor& src, const DeviceTensor& dst) = 0;
  // dst += src (rounded to dst's dtype).
  virtual Status Add(const DeviceTensor& src, const DeviceTensor& dst) = 0;
  virtual Status Fill(const DeviceTensor& dst, float value) = 0;
  // Every tensor *= factor (rounded to its dtype).
  virtual Status Scale(const std::vector<DeviceTensor>& tensors, float factor) = 0;
  // Multiplies by inv_scale; true when any element is inf or NaN afterwards (GradScaler).
  virtual Expected<bool> UnscaleAndCheckOverflow(const std::vector<DeviceTensor>& gradients,
                                                 float inv_scale) = 0;
  // sqrt of the sum of squares of every element (for norm clipping).
  virtual Expected<double> GlobalNorm(const std::vector<DeviceTensor>& tensors) = 0;

  // Runs the kernel; returns, per output, the tensor that holds it (call.outputs[j] when given).
  virtual Expected<std::vector<DeviceTensor>> Forward(const ForwardCall& call) = 0;
  virtual Status Backward(const BackwardCall& call) = 0;
  virtual Status LossForward(const LossCall& call) = 0;
  virtual Status LossBackward(const LossBackwardCall& call) = 0;
  virtual Status OptimizerStep(const OptimizerCall& call) = 0;

 protected:
  // What the backend itself does on entering a step: the CUDA backend names the step in its
  // errors ("out of memory at <step> (<node>)"). The default does nothing.
  virtual void NoteStep(const StepSite& site) { (void)site; }

 private:
  StepObserver* step_observer_ = nullptr;
};

}  // namespace memplan
