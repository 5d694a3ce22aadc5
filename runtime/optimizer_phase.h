#pragma once
// The executor's optimizer phase and the loss scale it owns: the kUnscaleAndCheckOverflow,
// kClipGradients, kOptimizerStep and kZeroGradients steps of a TrainingProgram, and the
// kInitLossScaler step that writes the dynamic scale to its program buffer. A step with inf/NaN
// gradients is skipped and the dynamic scale backs off (torch.cuda.amp.GradScaler).

#include <cstdint>
#include <optional>
#include <vector>

#include "analyzer/training_program.h"
#include "graph/expected.h"
#include "runtime/backend.h"
#include "runtime/loss_scaler.h"
#include "runtime/program_buffers.h"

namespace memplan {

struct OptimizerPhaseOptions {
  OptimizerHyperparameters optimizer;       // `kind` set from the program
  double clip_max_norm = 1.0;               // clip_grad_norm_'s max_norm
  LossScalerOptions loss_scaler;            // dynamic scaling; init_scale from the program
  std::optional<float> initial_loss_scale;  // overrides the program's scale (static or initial)
};

class OptimizerPhase {
 public:
  // REQUIRES: program, backend and buffers outlive this.
  OptimizerPhase(const TrainingProgram& program, Backend& backend, const ProgramBuffers& buffers,
                 OptimizerPhaseOptions options);

  // The scale this micro-batch's loss gradient is multiplied by (1 without loss scaling).
  float CurrentScale() const;
  // kInitLossScaler, and after every update: the scale into the program's loss-scale buffer.
  Status WriteScale();

  // Called before the optimizer phase's steps run.
  void Begin();
  Status Unscale(const Step& step);
  Status Clip(const Step& step);
  Status Update();  // kOptimizerStep: every parameter with a live gradient, unless overflowed
  Status ZeroGradients();

  bool skipped() const { return found_inf_; }
  std::optional<double> gradient_norm() const { return gradient_norm_; }

 private:
  std::vector<DeviceTensor> LiveGradients() const;

  const TrainingProgram& p_;
  Backend& backend_;
  const ProgramBuffers& buffers_;
  OptimizerPhaseOptions options_;
  std::vector<int64_t> optimizer_steps_;  // per parameter: updates applied
  std::optional<DynamicLossScaler> scaler_;
  bool found_inf_ = false;
  std::optional<double> gradient_norm_;
};

}  // namespace memplan
