#include "runtime/cuda/cuda_backend.h"

#include <cmath>
#include <string>

#include "analyzer/vocabulary/loss_kind.h"
#include "graph/ops/standard_aliases.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_status.h"
#include "runtime/cuda/cuda_storage.h"
#include "runtime/cuda/kernels/cuda_kernels.h"
#include "runtime/cuda/kernels/training_kernels.h"
#include "runtime/cuda/ops/cuda_op_table.h"
#include "runtime/cuda/ops/op_util.h"

namespace memplan {
namespace {

using cuda::CudaContext;
using cuda::F32Input;
using cuda::F32Output;
using cuda::ScratchBuffer;
using cuda::StorageOf;

Status RequireAiOnnx(std::string_view domain, std::string_view op_type) {
  if (!RunsAsStandardOnnxOp(domain, op_type))
    return MakeError("the cuda backend has no kernel for " + std::string(domain) + ":" +
                     std::string(op_type));
  return OkStatus();
}

Status CheckSameCount(const DeviceTensor& src, const DeviceTensor& dst, std::string_view what) {
  if (!src.defined() || !dst.defined())
    return MakeError(std::string(what) + ": an undefined tensor");
  if (src.numel() != dst.numel())
    return MakeError(std::string(what) + ": " + ShapeToString(src.shape) + " does not fit " +
                     ShapeToString(dst.shape));
  return OkStatus();
}

// True when every defined input is a constant with host values (and there is one).
bool FoldsOnHost(const std::vector<DeviceTensor>& inputs) {
  bool any = false;
  for (const DeviceTensor& t : inputs) {
    if (!t.defined()) continue;
    if (!StorageOf(t).host_values()) return false;
    any = true;
  }
  return any;
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(std::unique_ptr<CudaContext> ctx) : ctx_(std::move(ctx)) {}
  ~CudaBackend() override = default;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  bool deterministic() const override { return false; }  // atomicAdd reductions, split-K GEMMs

  void NoteStep(const StepSite& site) override {
    ctx_->program_allocator().SetSite(std::string(site.name), std::string(site.node));
    ctx_->scratch_allocator().SetSite(std::string(site.name), std::string(site.node));
  }

  Expected<DeviceTensor> Allocate(const TensorShape& shape, DType dtype,
                                  MemoryCategory category) override {
    for (int64_t d : shape)
      if (d < 0) return MakeError("cannot allocate a buffer of shape " + ShapeToString(shape));
    const int64_t n = NumElements(shape);
    const auto stored = static_cast<size_t>(cuda::StoredBytes(n, dtype));
    const auto accounted = static_cast<size_t>(n * ByteSize(dtype));
    MEMPLAN_TRY(void* data, ctx_->program_allocator().Allocate(stored, category, accounted));
    auto storage = std::make_shared<cuda::CudaStorage>(ctx_->program_allocator(), data,
                                                       cuda::StoredDType(dtype));
    MEMPLAN_RETURN_IF_ERROR(cuda::CheckCuda(cudaMemsetAsync(data, 0, stored, ctx_->stream()),
                                            "cudaMemsetAsync(allocate)"));
    return DeviceTensor{storage, shape, dtype};
  }

  Expected<DeviceTensor> Constant(const TensorShape& shape, DType dtype,
                                  const std::vector<float>& values) override {
    return ctx_->ConstantTensor(shape, dtype, values);
  }

  DeviceMemory Memory() const override {
    DeviceMemory m;
    const cuda::DeviceAllocator& program = ctx_->program_allocator();
    m.live = program.live_bytes();
    m.peak = program.peak_bytes();
    m.live_total = program.live_total();
    m.peak_total = program.peak_total();
    m.scratch_peak_bytes = ctx_->scratch_allocator().peak_reserved_bytes();
    return m;
  }

  void ResetPeaks() override {
    ctx_->program_allocator().ResetPeaks();
    ctx_->scratch_allocator().ResetPeaks();
  }

  Status Upload(const DeviceTensor& dst, const std::vector<float>& values) override {
    if (static_cast<int64_t>(values.size()) != dst.numel())
      return MakeError("upload of " + std::to_string(values.size()) + " values into a buffer of " +
                       ShapeToString(dst.shape));
    if (values.empty()) return OkStatus();
    MEMPLAN_TRY(ScratchBuffer staging, ctx_->ScratchF32(dst.numel()));
    MEMPLAN_RETURN_IF_ERROR(cuda::CheckCuda(
        cudaMemcpyAsync(staging.data(), values.data(), values.size() * sizeof(float),
                        cudaMemcpyHostToDevice, ctx_->stream()),
        "cudaMemcpyAsync(upload)"));
    MEMPLAN_RETURN_IF_ERROR(ctx_->Store(staging.data(), DType::kFloat32, dst, false));
    // `values` may go away when we return: wait for the copy to have read it.
    return ctx_->Synchronize("upload");
  }

  Expected<std::vector<float>> Download(const DeviceTensor& src) override {
    if (!src.defined()) return MakeError("download of an undefined tensor");
    std::vector<float> values(static_cast<size_t>(src.numel()));
    if (values.empty()) return values;
    MEMPLAN_TRY(F32Input in, ctx_->ReadF32(src));
    MEMPLAN_RETURN_IF_ERROR(
        cuda::CheckCuda(cudaMemcpyAsync(values.data(), in.data, values.size() * sizeof(float),
                                        cudaMemcpyDeviceToHost, ctx_->stream()),
                        "cudaMemcpyAsync(download)"));
    MEMPLAN_RETURN_IF_ERROR(ctx_->Synchronize("download"));
    return values;
  }

  Status Cast(const DeviceTensor& src, const DeviceTensor& dst) override {
    MEMPLAN_RETURN_IF_ERROR(CheckSameCount(src, dst, "cast"));
    const cuda::CudaStorage& s = StorageOf(src);
    return ctx_->Store(s.data(), s.stored_dtype(), dst, /*accumulate=*/false);
  }

  Status Add(const DeviceTensor& src, const DeviceTensor& dst) override {
    MEMPLAN_RETURN_IF_ERROR(CheckSameCount(src, dst, "add"));
    const cuda::CudaStorage& s = StorageOf(src);
    return ctx_->Store(s.data(), s.stored_dtype(), dst, /*accumulate=*/true);
  }

  Status Fill(const DeviceTensor& dst, float value) override {
    MEMPLAN_TRY(F32Output out, ctx_->WriteF32(dst, false));
    MEMPLAN_RETURN_IF_ERROR(cuda::Fill(out.data(), value, dst.numel(), ctx_->stream()));
    return ctx_->Commit(out);
  }

  Status Scale(const std::vector<DeviceTensor>& tensors, float factor) override {
    for (const DeviceTensor& t : tensors) {
      MEMPLAN_TRY(F32Input in, ctx_->ReadF32(t));
      MEMPLAN_TRY(F32Output out, ctx_->WriteF32(t, false));
      MEMPLAN_RETURN_IF_ERROR(
          cuda::Axpby(factor, in.data, 0.0f, out.data(), t.numel(), ctx_->stream()));
      MEMPLAN_RETURN_IF_ERROR(ctx_->Commit(out));
    }
    return OkStatus();
  }

  Expected<bool> UnscaleAndCheckOverflow(const std::vector<DeviceTensor>& gradients,
                                         float inv_scale) override {
    MEMPLAN_TRY(ScratchBuffer flag, ctx_->Scratch(sizeof(int)));
    MEMPLAN_RETURN_IF_ERROR(cuda::CheckCuda(
        cudaMemsetAsync(flag.data(), 0, sizeof(int), ctx_->stream()), "cudaMemsetAsync(flag)"));
    for (const DeviceTensor& t : gradients) {
      MEMPLAN_TRY(F32Input in, ctx_->ReadF32(t));
      MEMPLAN_TRY(F32Output out, ctx_->WriteF32(t, false));
      if (in.data != out.data())
        MEMPLAN_RETURN_IF_ERROR(
            cuda::Axpby(1.0f, in.data, 0.0f, out.data(), t.numel(), ctx_->stream()));
      MEMPLAN_RETURN_IF_ERROR(cuda::ScaleAndCheck(out.data(), t.numel(), inv_scale,
                                                  static_cast<int*>(flag.data()), ctx_->stream()));
      MEMPLAN_RETURN_IF_ERROR(ctx_->Commit(out));
    }
    int found = 0;
    MEMPLAN_RETURN_IF_ERROR(cuda::CheckCuda(
        cudaMemcpyAsync(&found, flag.data(), sizeof(int), cudaMemcpyDeviceToHost, ctx_->stream()),
        "cudaMemcpyAsync(overflow flag)"));
    MEMPLAN_RETURN_IF_ERROR(ctx_->Synchronize("overflow check"));
    return found != 0;
  }

  Expected<double> GlobalNorm(const std::vector<DeviceTensor>& tensors) override {
    MEMPLAN_TRY(ScratchBuffer sum, ctx_->Scratch(sizeof(double)));
    MEMPLAN_RETURN_IF_ERROR(cuda::CheckCuda(
        cudaMemsetAsync(sum.data(), 0, sizeof(double), ctx_->stream()), "cudaMemsetAsync(norm)"));
    for (const DeviceTensor& t : tensors) {
      MEMPLAN_TRY(F32Input in, ctx_->ReadF32(t));
      MEMPLAN_RETURN_IF_ERROR(
          cuda::SumOfSquares(in.data, t.numel(), static_cast<double*>(sum.data()), ctx_->stream()));
    }
    double total = 0.0;
    MEMPLAN_RETURN_IF_ERROR(cuda::CheckCuda(
        cudaMemcpyAsync(&total, sum.data(), sizeof(double), cudaMemcpyDeviceToHost, ctx_->stream()),
        "cudaMemcpyAsync(norm)"));
    MEMPLAN_RETURN_IF_ERROR(ctx_->Synchronize("global norm"));
    return std::sqrt(total);
  }

  Expected<std::vector<DeviceTensor>> Forward(const ForwardCall& call) override {
    MEMPLAN_RETURN_IF_ERROR(RequireAiOnnx(call.domain, call.op_type));
    if (FoldsOnHost(call.inputs)) return FoldOnHost(call);
    const cuda::CudaOp* op = cuda::FindCudaOp(call.op_type);
    if (op == nullptr || op->forward == nullptr)
      return MakeError("the cuda backend has no kernel for " + std::string(call.op_type));
    MEMPLAN_TRY(std::vector<DeviceTensor> outs, op->forward(*ctx_, call));
    outs.resize(static_cast<size_t>(std::max(call.num_outputs, 0)));
    return outs;
  }

  Status Backward(const BackwardCall& call) override {
    MEMPLAN_RETURN_IF_ERROR(RequireAiOnnx(call.domain, call.op_type));
    const cuda::CudaOp* op = cuda::FindCudaOp(call.op_type);
    if (op == nullptr || op->backward == nullptr)
      return MakeError("the cuda backend has no backward kernel for " + std::string(call.op_type));
    return op->backward(*ctx_, call);
  }

  Status LossForward(const LossCall& call) override {
    if (!call.prediction.defined() || !call.loss_value.defined())
      return MakeError("loss: prediction or loss buffer missing");
    MEMPLAN_TRY(F32Input p, ctx_->ReadF32(call.prediction));
    MEMPLAN_TRY(F32Output loss, ctx_->WriteF32(call.loss_value, false));
    if (call.loss == "cross_entropy") {
      MEMPLAN_TRY(Rows rows, RowsOf(call.prediction, call.label, call.class_axis));
      MEMPLAN_TRY(F32Input label, ctx_->ReadF32(call.label));
      F32Output log_prob;
      if (call.log_prob.defined()) {
        MEMPLAN_TRY(log_prob, ctx_->WriteF32(call.log_prob, false));
      }
      MEMPLAN_RETURN_IF_ERROR(cuda::CrossEntropyForward(p.data, label.data, rows.rows, rows.classes,
                                                        rows.inner, loss.data(), log_prob.data(),
                                                        ctx_->stream()));
      if (log_prob.defined()) MEMPLAN_RETURN_IF_ERROR(ctx_->Commit(log_prob));
    } else if (call.loss == "mse") {
      MEMPLAN_RETURN_IF_ERROR(CheckSameCount(call.prediction, call.label, "mse loss"));
      MEMPLAN_TRY(F32Input label, ctx_->ReadF32(call.label));
      MEMPLAN_RETURN_IF_ERROR(cuda::MseForward(p.data, label.data, call.prediction.numel(),
                                               loss.data(), ctx_->stream()));
    } else if (call.loss == "sum") {
      MEMPLAN_RETURN_IF_ERROR(
          cuda::SumForward(p.data, call.prediction.numel(), loss.data(), ctx_->stream()));
    } else {
      return MakeError("the cuda backend has no loss '" + std::string(call.loss) + "'");
    }
    return ctx_->Commit(loss);
  }

  Status LossBackward(const LossBackwardCall& call) override {
    if (!call.grad.defined()) return MakeError("loss backward: no gradient buffer");
    MEMPLAN_TRY(F32Output grad, ctx_->WriteF32(call.grad, false));
    if (call.loss == "cross_entropy") {
      const DeviceTensor& source = call.log_prob.defined() ? call.log_prob : call.prediction;
      if (!source.defined()) return MakeError("loss backward: the prediction was not kept");
      MEMPLAN_TRY(Rows rows, RowsOf(source, call.label, call.class_axis));
      MEMPLAN_TRY(F32Input s, ctx_->ReadF32(source));
      MEMPLAN_TRY(F32Input label, ctx_->ReadF32(call.label));
      MEMPLAN_RETURN_IF_ERROR(cuda::CrossEntropyBackward(s.data, label.data, rows.rows,
                                                         rows.classes, rows.inner, call.grad_scale,
                                                         grad.data(), ctx_->stream()));
    } else if (call.loss == "mse") {
      MEMPLAN_RETURN_IF_ERROR(CheckSameCount(call.prediction, call.label, "mse loss backward"));
      MEMPLAN_TRY(F32Input p, ctx_->ReadF32(call.prediction));
      MEMPLAN_TRY(F32Input label, ctx_->ReadF32(call.label));
      MEMPLAN_RETURN_IF_ERROR(cuda::MseBackward(p.data, label.data, call.prediction.numel(),
                                                call.grad_scale, grad.data(), ctx_->stream()));
    } else if (call.loss == "sum") {
      MEMPLAN_RETURN_IF_ERROR(
          cuda::Fill(grad.data(), call.grad_scale, call.grad.numel(), ctx_->stream()));
    } else {
      return MakeError("the cuda backend has no loss '" + std::string(call.loss) + "'");
    }
    return ctx_->Commit(grad);
  }

  Status OptimizerStep(const OptimizerCall& call) override {
    MEMPLAN_CHECK(call.hyper != nullptr);
    const OptimizerHyperparameters& h = *call.hyper;
    cuda::OptimizerUpdate u;
    if (h.kind == "sgd") {
      u.kind = 0;
    } else if (h.kind == "momentum") {
      u.kind = 1;
    } else if (h.kind == "adam") {
      u.kind = 2;
    } else if (h.kind == "adamw") {
      u.kind = 3;
    } else {
      return MakeError("the cuda backend has no optimizer '" + h.kind + "'");
    }
    const size_t needed = u.kind == 0 ? 0 : u.kind == 1 ? 1 : 2;
    if (call.states.size() != needed)
      return MakeError("optimizer: state has " + std::to_string(call.states.size()) + " buffers, " +
                       h.kind + " needs " + std::to_string(needed));
    MEMPLAN_RETURN_IF_ERROR(CheckSameCount(call.gradient, call.master, "optimizer"));
    // Hyper-parameters as the CPU reference (runtime/optimizers.cc) derives them.
    u.lr = static_cast<float>(h.learning_rate);
    u.weight_decay = static_cast<float>(h.weight_decay);
    u.momentum = static_cast<float>(h.momentum);
    u.beta1 = static_cast<float>(h.beta1);
    u.beta2 = static_cast<float>(h.beta2);
    u.one_minus_beta1 = static_cast<float>(1.0 - h.beta1);
    u.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
    u.decay = static_cast<float>(1.0 - h.learning_rate * h.weight_decay);
    const auto t = static_cast<double>(call.step);
    u.step_size = static_cast<float>(h.learning_rate / (1.0 - std::pow(h.beta1, t)));
    u.correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(h.beta2, t)));
    u.epsilon = static_cast<float>(h.epsilon);
    u.first_step = call.step == 1;
    MEMPLAN_TRY(F32Input g, ctx_->ReadF32(call.gradient));
    MEMPLAN_TRY(F32Input p_in, ctx_->ReadF32(call.master));
    MEMPLAN_TRY(F32Output p, ctx_->WriteF32(call.master, false));
    if (p_in.data != p.data())
      MEMPLAN_RETURN_IF_ERROR(
          cuda::Axpby(1.0f, p_in.data, 0.0f, p.data(), call.master.numel(), ctx_->stream()));
    std::vector<F32Output> states;
    for (const DeviceTensor& s : call.states) {
      MEMPLAN_TRY(F32Input s_in, ctx_->ReadF32(s));
      MEMPLAN_TRY(F32Output s_out, ctx_->WriteF32(s, false));
      if (s_in.data != s_out.data())
        MEMPLAN_RETURN_IF_ERROR(
            cuda::Axpby(1.0f, s_in.data, 0.0f, s_out.data(), s.numel(), ctx_->stream()));
      states.push_back(std::move(s_out));
    }
    MEMPLAN_RETURN_IF_ERROR(cuda::OptimizerUpdateKernel(
        u, p.data(), g.data, states.empty() ? nullptr : states[0].data(),
        states.size() < 2 ? nullptr : states[1].data(), call.master.numel(), ctx_->stream()));
    MEMPLAN_RETURN_IF_ERROR(ctx_->Commit(p));
    for (F32Output& s : states) MEMPLAN_RETURN_IF_ERROR(ctx_->Commit(s));
    if (call.working.defined()) MEMPLAN_RETURN_IF_ERROR(Cast(call.master, call.working));
    return OkStatus();
  }

 private:
  struct Rows {
    int64_t rows = 0;
    int64_t classes = 0;
    int64_t inner = 1;  // the stride between one position's classes
  };

  // Logits as positions of classes at `class_axis` (-1: CrossEntropyClassAxis, the last
  // dimension of [N, C] and [N, S, C], dimension 1 of [N, C, d...]); one label per position.
  static Expected<Rows> RowsOf(const DeviceTensor& prediction, const DeviceTensor& label,
                               int class_axis) {
    if (prediction.shape.size() < 2) return MakeError("cross entropy: logits of rank below 2");
    const size_t axis = class_axis >= 0 ? static_cast<size_t>(class_axis)
                                        : CrossEntropyClassAxis(prediction.shape.size());
    if (axis >= prediction.shape.size())
      return MakeError("cross entropy: class axis " + std::to_string(axis) + " of logits of rank " +
                       std::to_string(prediction.shape.size()));
    Rows r;
    r.classes = prediction.shape[axis];
    for (size_t d = axis + 1; d < prediction.shape.size(); ++d) r.inner *= prediction.shape[d];
    r.rows = r.classes == 0 ? 0 : prediction.numel() / r.classes;
    if (!label.defined() || label.numel() != r.rows)
      return MakeError("cross entropy: " + std::to_string(r.rows) + " rows but " +
                       (label.defined() ? std::to_string(label.numel()) : "no") + " labels");
    return r;
  }

  // Constant folding (shape arithmetic): run the CPU reference kernel on the host values.
  Expected<std::vector<DeviceTensor>> FoldOnHost(const ForwardCall& call) {
    ForwardCall host_call = call;
    host_call.inputs.clear();
    for (const DeviceTensor& t : call.inputs) {
      if (!t.defined()) {
        host_call.inputs.emplace_back();
        continue;
      }
      MEMPLAN_TRY(DeviceTensor h, host_.Constant(t.shape, t.dtype, *StorageOf(t).host_values()));
      host_call.inputs.push_back(h);
    }
    host_call.outputs.assign(call.outputs.size(), DeviceTensor());
    host_call.extras.clear();
    MEMPLAN_TRY(std::vector<DeviceTensor> host_outs, host_.Forward(host_call));
    std::vector<DeviceTensor> outs;
    for (size_t j = 0; j < host_outs.size(); ++j) {
      if (!host_outs[j].defined()) {
        outs.emplace_back();
        continue;
      }
      MEMPLAN_TRY(std::vector<float> values, host_.Download(host_outs[j]));
      if (j < call.outputs.size() && call.outputs[j].defined()) {
        const DeviceTensor dest = call.outputs[j].View(host_outs[j].shape);
        MEMPLAN_RETURN_IF_ERROR(Upload(dest, values));
        outs.push_back(dest);
      } else {
        MEMPLAN_TRY(DeviceTensor c,
                    ctx_->ConstantTensor(host_outs[j].shape, host_outs[j].dtype, values));
        outs.push_back(c);
      }
    }
    return outs;
  }

  // Declared first so it is destroyed last: storages return blocks to its allocators.
  std::unique_ptr<CudaContext> ctx_;
  CpuBackend host_;
};

}  // namespace

Expected<std::unique_ptr<Backend>> MakeCudaBackend(const CudaBackendOptions& options) {
  MEMPLAN_TRY(std::unique_ptr<CudaContext> ctx, CudaContext::Create());
  ctx->program_allocator().SetObserver(options.allocator_observer);
  return std::unique_ptr<Backend>(new CudaBackend(std::move(ctx)));
}

}  // namespace memplan
