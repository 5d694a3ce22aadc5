#pragma once
// Derivation, beside pass 5 (liveness): how long eager PyTorch's Python references hold a buffer
// beyond its last reader in the graph. The ONNX graph says when a tensor is last read; a training
// script's variables say when it can be freed, and two of them are certain:
//
//  * the batch: the training loop binds the inputs and the label to variables
//    (`for x, y in loader: loss = loss_fn(model(x), y); loss.backward(); ...`), released only
//    when rebound to the next batch. They live to the end of the micro-batch, read or not;
//  * the model's return value: the caller binds what the model returns and holds it until the
//    loss has been computed from it (`logits = model(x); loss = loss_fn(logits, y)`), so every
//    loss term's output lives to the last loss step (torchtune's list of chunk logits,
//    chunked_loss_plan.h, until `del logits`);
//  * a module's input: the caller holds what it passes to a module until the call returns
//    (`x = self.layer1(x)`; nn.Sequential's `for module in self: input = module(input)`), and the
//    callee's parameter holds it too. So a forward value read by a node inside module M and made
//    outside it (a graph input, or a value of a node not in M) lives at least until M's last
//    forward node. Modules are the exporter's node scopes (analyzer/recompute/
//    checkpoint_modules.h: "/layer1/layer1.0/conv1/Conv" is in layer1, layer1.0 and
//    layer1.0.conv1).
//
// Where autograd saves a tensor for backward it lives longer anyway; these holds matter where it
// does not: frozen parameters (a frozen backbone saves nothing), autocast (a Linear saves its bf16
// cast, not the fp32 module input), ops that save their output only. A hold never makes a buffer
// "held for backward" (saved_activation_bytes counts what autograd saves).

#include <vector>

#include "analyzer/program/training_program.h"
#include "graph/graph.h"

namespace memplan {

// By BufferId: the last step at which a Python reference holds the buffer (-1: none).
std::vector<LogicalTime> PythonReferenceHolds(const Graph& graph, const TrainingProgram& program);

}  // namespace memplan
