#pragma once
// Hand-derived memory results of a tiny MLP and two edits of it, shared by the baseline tests.
// All fp32 (4 bytes per element), micro-batch 8, Adam (two moments per parameter):
//
//   mlp:          x[8,256] -> /fc1/Gemm 256->256 -> /relu1/Relu -> /fc2/Gemm 256->10
//   added layer:  ... /relu1/Relu -> /fc2/Gemm 256->256 -> /relu2/Relu -> /fc3/Gemm 256->10
//   widened:      hidden 256 -> 320
//
// Saved for backward: a Gemm saves its input X, a Relu its output Y; a tensor is counted once,
// at its first saver (fc2 needs relu1's output, which relu1 already saved). Transients: one
// activation gradient of the hidden width. Other: input 8*256*4 = 8192 + labels 8*10*4 = 320.

#include <map>
#include <string>
#include <utility>

#include "analyzer/baseline/baseline.h"

namespace memplan::baseline_test {

// The result of one of the MLPs: gradients as large as the parameters, Adam's two moments twice
// that, no workspace, the input and labels (8192 + 320 = 8512 B) as other memory, and the peak the
// sum of the categories (the breakdown is the bytes at the peak). Every activation counted is a
// saved tensor, so the saved bytes are the activation bytes.
inline MemoryResult AdamFp32MlpResult(int64_t parameter_bytes, int64_t activation_bytes,
                                      int64_t transient_bytes,
                                      std::map<std::string, int64_t> saved_bytes_by_node) {
  MemoryResult r;
  r.breakdown[MemoryCategory::kParameters] = parameter_bytes;
  r.breakdown[MemoryCategory::kGradients] = parameter_bytes;
  r.breakdown[MemoryCategory::kOptimizerState] = 2 * parameter_bytes;
  r.breakdown[MemoryCategory::kActivations] = activation_bytes;
  r.breakdown[MemoryCategory::kTransients] = transient_bytes;
  r.breakdown[MemoryCategory::kWorkspace] = 0;
  r.breakdown[MemoryCategory::kOther] = 8512;
  r.peak_bytes = 4 * parameter_bytes + activation_bytes + transient_bytes + 8512;
  r.saved_activation_bytes = activation_bytes;
  r.saved_bytes_by_node = std::move(saved_bytes_by_node);
  return r;
}

// Peak 4 * 273448 + 16384 + 8192 + 8512 = 1126880 B.
inline MemoryResult MlpResult() {
  // parameters: fc1 256*256+256 = 65792, fc2 256*10+10 = 2570 -> 68362 * 4 B = 273448 B.
  return AdamFp32MlpResult(/*parameter_bytes=*/273448,
                           /*activation_bytes=*/16384,  // X 8*256*4 + relu1 Y 8*256*4
                           /*transient_bytes=*/8192,    // dY 8*256*4
                           {{"/fc1/Gemm", 8192}, {"/relu1/Relu", 8192}, {"/fc2/Gemm", 0}});
}

// Peak 4 * 536616 + 24576 + 8192 + 8512 = 2187744 B.
inline MemoryResult MlpWithAddedLayerResult() {
  // parameters: 65792 + 65792 (fc2 now 256->256) + 2570 (fc3) = 134154 * 4 B = 536616 B.
  return AdamFp32MlpResult(/*parameter_bytes=*/536616,
                           /*activation_bytes=*/24576,  // + relu2 Y 8*256*4
                           /*transient_bytes=*/8192,
                           {{"/fc1/Gemm", 8192},
                            {"/relu1/Relu", 8192},
                            {"/fc2/Gemm", 0},
                            {"/relu2/Relu", 8192},
                            {"/fc3/Gemm", 0}});
}

// Peak 4 * 341800 + 18432 + 10240 + 8512 = 1404384 B.
inline MemoryResult MlpWidenedResult() {
  // parameters: fc1 256*320+320 = 82240, fc2 320*10+10 = 3210 -> 85450 * 4 B = 341800 B.
  return AdamFp32MlpResult(/*parameter_bytes=*/341800,
                           /*activation_bytes=*/18432,  // X 8192 + relu1 Y 8*320*4 = 10240
                           /*transient_bytes=*/10240,   // dY 8*320*4
                           {{"/fc1/Gemm", 8192}, {"/relu1/Relu", 10240}, {"/fc2/Gemm", 0}});
}

inline BaselineEntry Entry(const std::string& name, MemoryResult result) {
  BaselineEntry entry;
  entry.config.name = name;
  entry.config.model = "models/mlp.onnx";
  entry.config.flags.batch = 8;
  entry.config.flags.precision = "fp32";
  entry.config.flags.optimizer = "adam";
  entry.result = std::move(result);
  return entry;
}

inline Baseline BaselineOf(std::vector<BaselineEntry> entries) {
  Baseline b;
  b.entries = std::move(entries);
  return b;
}

}  // namespace memplan::baseline_test
