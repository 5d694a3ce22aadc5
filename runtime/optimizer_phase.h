#pragma once
// The executor's optimizer phase and the loss scale it owns: the kUnscaleAndCheckOverflow,
// kClipGradients, kOptimizerStep and kZeroGradients steps of a TrainingProgram, and the
// kInitLossScaler step that writes the dynamic scale to its program buffer. A step with inf/NaN
// gradients is skipped and the dynamic scale backs off (torch.cuda.amp.GradScaler).
//
// On a rank of a per-rank program (runtime/collective_steps.h) a parameter's buffers may be
// whole or this rank's shard (Buffer::shard_of_elements): the update then runs on this rank's
// part of each (ZeRO-1/2 keep whole masters and gradients beside sharded moments), an overflow on
// any rank skips the step on every rank, and the gradient norm of sharded gradients is summed
// over the shard group, as DeepSpeed's and FSDP's clipping do.

#include <cstdint>
#include <optional>
#include <vector>

#include "analyzer/program/training_program.h"
#include "graph/expected.h"
#include "runtime/backend.h"
#include "runtime/collective_steps.h"
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
  // REQUIRES: program, backend, buffers and collectives outlive this. `collectives`: this rank's
  // end of a simulated group, null for a single-GPU program.
  OptimizerPhase(const TrainingProgram& program, Backend& backend, const ProgramBuffers& buffers,
                 OptimizerPhaseOptions options, CollectiveSteps* collectives = nullptr);

  // The scale this micro-batch's loss gradient is multiplied by (1 without loss scaling).
  float CurrentScale() const;
  // kInitLossScaler, and after every update: the scale into the program's loss-scale buffer.
  Status WriteScale();

  // Called before the optimizer phase's steps run.
  void Begin();
  Status Unscale(const Step& step);
  Status Clip(const Step& step);
  Status Update();  // kOptimizerStep: every parameter with a live gradient, unless overflowed
  // A kOptimizerStep in backward (Step::parameter >= 0, torchtune's optimizer_in_bwd): that
  // parameter alone, as its post-accumulate-grad hook steps it.
  Status UpdateInBackward(size_t index);
  // kZeroGradients: zeroes every live gradient the step's End does not free (zero_grad without
  // set_to_none; DDP's gradients that are views of its buckets).
  Status ZeroGradients(const Step& step);

  bool skipped() const { return found_inf_; }
  std::optional<double> gradient_norm() const { return gradient_norm_; }

 private:
  std::vector<DeviceTensor> LiveGradients() const;
  // One parameter's update; on a rank, on this rank's part of buffers kept whole.
  Status UpdateParameter(size_t index);
  bool AnyGradientSharded() const;

  const TrainingProgram& p_;
  Backend& backend_;
  const ProgramBuffers& buffers_;
  OptimizerPhaseOptions options_;
  std::vector<int64_t> optimizer_steps_;  // per parameter: updates applied
  std::optional<DynamicLossScaler> scaler_;
  bool found_inf_ = false;
  std::optional<double> gradient_norm_;
  CollectiveSteps* collectives_ = nullptr;
};

}  // namespace memplan
