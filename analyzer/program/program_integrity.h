#pragma once
// Structural checks of a TrainingProgram (ONNX Runtime BasicIntegrityCheck, Glow verifySegments):
// run in tests and, in debug builds, after every derivation.

#include "analyzer/program/training_program.h"
#include "graph/expected.h"

namespace memplan {

// Checks, replaying setup + two optimizer steps of k = 2 micro-batches with guards evaluated:
//  * every event, step operand, saved tensor and gradient names an existing buffer;
//  * nothing is read or written by a step unless it is live at that step (after its Begin);
//  * nothing is allocated while live, nothing freed while dead (no double free);
//  * live bytes never go negative for any size (each buffer is freed at most once per alloc);
//  * at the end of each micro-batch and of the run, only persistent buffers are live;
//  * phase ranges tile the step vector and the loss step lies inside the body.
// The error names the first violation: step index, step name and buffer name.
Status VerifyProgram(const TrainingProgram& program);

}  // namespace memplan
