#pragma once
// Which entries of the import-fusion table (graph/fusion/fusion_table.h) the importer applies
// (ImportOptions::fusions). Apart from the table so that graph/onnx_import.h, which users of the
// importer include, needs no ONNX header.

namespace memplan {

enum class FusionSet {
  kNone,      // the graph exactly as exported
  kFusedOps,  // (default) exporters' decompositions of ops PyTorch runs as one autograd node:
              // nn.LayerNorm, nn.GELU (both approximations), nn.SiLU, nn.Hardswish, p=0 dropout
  kAll,       // also formulas written by hand that a fused kernel or a compiler replaces
              // (LLaMA's RMSNorm, GPT-2's gelu_new); eager autograd saves these op by op
  kLiger,     // kFusedOps and what Liger Kernel's patches replace (HF use_liger_kernel=True):
              // the RMSNorm formula as LigerRMSNormFunction, act(gate) * up as LigerSiLUMul-
              // and LigerGELUMulFunction (graph/fusion/fusion_table.h marks the entries)
};

}  // namespace memplan
