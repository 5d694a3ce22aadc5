#pragma once
// The executor's kernel-running steps: kForward and kRecompute (with their mixed-precision
// casts), kLoss, kLossBackward, kBackward and kAccumulateGradient. Each turns one program step
// into one backend call over the buffers the step names; it reads nothing the program does not
// state except the graph node's attributes and which of its slots a saved buffer holds.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyzer/program/training_program.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "runtime/backend.h"
#include "runtime/constant_values.h"
#include "runtime/program_buffers.h"

namespace memplan {

class ComputeSteps {
 public:
  // `seed` seeds Dropout masks (one per node and micro-batch, so a recompute reproduces its
  // forward's mask); `disable_dropout` runs Dropout as the identity.
  // REQUIRES: every argument outlives this; buffers.Init() ran.
  ComputeSteps(const Graph& graph, const TrainingProgram& program, Backend& backend,
               ProgramBuffers& buffers, ConstantValues& constants, uint64_t seed,
               bool disable_dropout);

  // Counts micro-batches across optimizer steps (Dropout masks differ per micro-batch).
  void set_micro_batch_counter(uint64_t counter) { micro_batch_counter_ = counter; }

  Status Forward(const Step& step);  // kForward and kRecompute
  // kLoss: returns the micro-batch's mean loss (before 1/k, unscaled).
  Expected<double> Loss(const Step& step);
  // kLossBackward: d(grad_scale * loss) / d(prediction).
  Status LossBackward(const Step& step, float grad_scale);
  Status Backward(const Step& step);
  Status Accumulate(const Step& step);    // kAccumulateGradient
  Status CastGradient(const Step& step);  // kCastGradient: runs the step's casts

 private:
  uint64_t NodeSeed(NodeId n) const;
  bool Training(const Node& node) const;
  // A ForwardCall or BackwardCall holding what both take from the step and its node: the op, its
  // attributes, whether it runs in training mode and the node's seed.
  template <class Call>
  Call KernelCall(const Step& step, const Node& node) const;
  Expected<DeviceTensor> InputTensor(const Node& node, size_t i, const std::vector<BufferId>& read);
  std::map<std::string, DeviceTensor> ExtrasOf(const std::vector<BufferId>& extras) const;
  Status RunCasts(const Step& step);
  // Backward's call, in three parts: the inputs' shapes and dtypes as the forward step ran them
  // (constants bound as values); the buffers the step saved, bound to the inputs and outputs they
  // hold (saved extras to call.extras); the parameters the kernel reads without saving them.
  Status BindBackwardInputShapes(const Node& node, const Step& forward, BackwardCall& call);
  Status BindSavedBuffers(const Step& step, const Node& node, BackwardCall& call);
  Status BindUnsavedParameters(const Node& node, const Step& forward, BackwardCall& call);
  // The output `term` reads, through buffer `b`.
  Expected<DeviceTensor> Prediction(const LossTerm& term, BufferId b) const;
  // The loss term whose kLoss or kLossBackward step `step` is.
  Expected<const LossTerm*> TermOf(const Step& step) const;

  const Graph& g_;
  const TrainingProgram& p_;
  Backend& backend_;
  ProgramBuffers& buffers_;
  ConstantValues& constants_;
  uint64_t seed_;
  bool disable_dropout_;
  uint64_t micro_batch_counter_ = 0;
};

}  // namespace memplan
