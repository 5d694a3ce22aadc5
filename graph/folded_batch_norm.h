#pragma once
// torch.onnx.export(dynamo=True) cannot write a training-mode BatchNorm: onnxscript's torch_lib
// translates aten::_native_batch_norm_legit_functional (what torch.export records for a
// BatchNorm in train()) with `training = False` forced (core.py, "a temporary fix ... ORT only
// supports training mode with opset version lower than 14"), so every BatchNorm is written as an
// inference BatchNormalization reading the running statistics. The exporter's optimizer
// (optimize=True, the default) then folds each such BatchNormalization that follows a Conv,
// ConvTranspose or Gemm into that node's weight and bias (onnxscript rewriter
// _fuse_batchnorm.py, FuseBatchNormIntoConv / ...ConvTranspose / ...Gemm), and the graph has no
// BatchNorm left: autograd's native_batch_norm in the training step keeps the conv's output,
// save_mean and save_invstd, which a plan of the file as written never sees (ResNet-18: -47% of
// torch's saved bytes).
//
// The rewriter records its rules on the node it writes: metadata_props
// "pkg.onnxscript.rewriter.rule_name" = "RemoveOptionalBiasFromConv, FuseBatchNormIntoConv, ...".
// RestoreFoldedBatchNorms puts the BatchNormalization back after each node that names a
// FuseBatchNormInto* rule: the node writes a new value, the BatchNormalization reads it with
// fresh [C] scale, bias, running mean and variance (1, 0, 0, 1: values the plan does not read)
// and writes the node's old output. The four are named after the BatchNorm module the node's
// "pkg.torch.onnx.name_scopes" records ("layer1.0.bn1.weight", ...), the targets the graph
// signature lists, so the weight and bias train as PARAMETERs and the statistics are BUFFERs
// (graph/exported_buffers.h); without the scopes they are named after the output and are not
// trained (2C parameters of the BatchNorm uncounted; the saved tensors are the same).

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string_view>

namespace memplan {

inline constexpr std::string_view kRewriterRuleNameKey = "pkg.onnxscript.rewriter.rule_name";

// Restores the BatchNormalization folded into every Conv / ConvTranspose / Gemm whose rewriter
// metadata names a FuseBatchNormInto* rule and whose weight is an initializer of known dims (the
// channel count); returns how many. The graph stays in topological order.
int64_t RestoreFoldedBatchNorms(onnx::GraphProto& graph);

// The BatchNormalizations the dynamo exporter left in the file (after no Conv, or optimize=False)
// say training_mode = 0 for the same reason. The graph signature records what torch ran: a
// BatchNorm in train() updates its running statistics, an output "getitem_3: BUFFER_MUTATION
// target='layer1.0.bn1.running_mean'". Every BatchNormalization whose running-mean input is a
// buffer the signature mutates is marked training_mode = 1, as torch ran it (an export of a model
// in eval() mutates nothing and stays as written, inference, with its warning); returns how many.
int64_t MarkTrainingBatchNorms(onnx::GraphProto& graph);

}  // namespace memplan
