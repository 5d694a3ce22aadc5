#pragma once
// The ATen operators PyTorch runs for an ONNX op type, as torch.utils.checkpoint's selective
// policies (torch >= 2.4, create_selective_checkpoint_contexts) see them: OpOverload packets below
// autograd, after composite ops have decomposed. "Gemm" (nn.Linear on a 2-D input) runs as
// aten.addmm, or aten.mm without a bias; "MatMul" as aten.mm / aten.bmm, or aten.addmm where it is
// the MatMul + Add that nn.Linear over a [batch, seq, features] input exports to. An ONNX op that
// is one piece of a decomposition torch does not run (LayerNorm below opset 17 as ReduceMean, Sub,
// Pow, ..., Add) still maps to the ATen op of its own type: the names are per op type, not per
// pattern.
//
// This is the registry's table of torch names: keyed by the op types graph/ops registers (a test
// checks every key is registered), kept beside the registry rather than in OpSchema so that the
// planner's facts and the exporters' spelling of them stay apart.

#include <span>
#include <string_view>

namespace memplan {

// The ATen op packets ("aten.addmm") of `onnx_op_type` (ai.onnx domain, or memplan's fused
// "Gelu"), most common first. Empty when memplan knows no mapping.
std::span<const std::string_view> AtenOpsOfOnnxOp(std::string_view onnx_op_type);

// Every op type the table maps, for tests.
std::span<const std::string_view> OnnxOpsWithAtenOps();

}  // namespace memplan
