#pragma once
// `memplan verify --gpus N` (a per-rank program): the N ranks run in one process, each an
// Executor on its own backend and thread, meeting at the program's collectives
// (runtime/rank_group.h, runtime/collective_steps.h). Rank r feeds micro-batches r*k .. r*k+k-1
// of the global batch, so the group sees every sample once. Checked:
//
//  * memory: each rank's measured peak (live program bytes after each Begin, its own backend)
//    against the per-rank prediction; on the CPU backend equal byte for byte;
//  * gradients: as the first optimizer step reads them (after the ranks' reductions, unscaling
//    and clipping), each rank's gradient (its shard, or the whole averaged gradient) against the
//    single-GPU program's over the whole global batch (k*N micro-batches of m): the same samples,
//    summed in another order, within EquivalenceBound;
//  * weights: each rank's part of the parameters after the first optimizer step against that
//    single-GPU step, relative to its largest update, within 1e-2 (or the gradient bound if
//    larger): Adam's division by sqrt(v) + eps magnifies rounding in tiny gradients, while a
//    missed or misplaced update is of the order of the update itself. Elements whose reference
//    gradient is within the gradient bound of zero are left out: Adam's first step moves by lr *
//    sign(gradient), and the sign of a gradient that is zero up to rounding is the summation
//    order's.
//
// Dropout is off (masks depend on the batch shape and the micro-batch counter). Sharded optimizer
// state needs an elementwise optimizer (SGD, momentum, Adam, AdamW, Lion): another is an error
// naming it. This validates the per-rank program, not a distributed engine.

#include "analyzer/program/training_program.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "runtime/verification.h"

namespace memplan {

// Fills report.device, measured (rank 0), ranks, steps, scaler_events, losses_finite, gradient,
// step_seconds and samples_per_second. REQUIRES: per_rank is plan.program derived (its
// data_parallel set).
Status VerifyRanks(const Graph& graph, const VerifyPlan& plan, const TrainingProgram& per_rank,
                   const BackendFactory& backends, const VerifyOptions& options,
                   VerificationReport& report);

}  // namespace memplan
