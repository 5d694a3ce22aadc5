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

#include "analyzer/baseline/baseline.h"

namespace memplan::baseline_test {

inline MemoryResult MlpResult() {
  MemoryResult r;
  // parameters: fc1 256*256+256 = 65792, fc2 256*10+10 = 2570 -> 68362 * 4 B = 273448 B.
  r.breakdown[MemoryCategory::kParameters] = 273448;
  r.breakdown[MemoryCategory::kGradients] = 273448;
  r.breakdown[MemoryCategory::kOptimizerState] = 546896;  // 2 * 273448
  r.breakdown[MemoryCategory::kActivations] = 16384;      // X 8*256*4 + relu1 Y 8*256*4
  r.breakdown[MemoryCategory::kTransients] = 8192;        // dY 8*256*4
  r.breakdown[MemoryCategory::kWorkspace] = 0;
  r.breakdown[MemoryCategory::kOther] = 8512;  // 8192 + 320
  r.peak_bytes = 1126880;                      // sum of the above
  r.saved_activation_bytes = 16384;
  r.saved_bytes_by_node = {{"/fc1/Gemm", 8192}, {"/relu1/Relu", 8192}, {"/fc2/Gemm", 0}};
  return r;
}

inline MemoryResult MlpWithAddedLayerResult() {
  MemoryResult r;
  // parameters: 65792 + 65792 (fc2 now 256->256) + 2570 (fc3) = 134154 * 4 B = 536616 B.
  r.breakdown[MemoryCategory::kParameters] = 536616;
  r.breakdown[MemoryCategory::kGradients] = 536616;
  r.breakdown[MemoryCategory::kOptimizerState] = 1073232;
  r.breakdown[MemoryCategory::kActivations] = 24576;  // + relu2 Y 8*256*4
  r.breakdown[MemoryCategory::kTransients] = 8192;
  r.breakdown[MemoryCategory::kWorkspace] = 0;
  r.breakdown[MemoryCategory::kOther] = 8512;
  r.peak_bytes = 2187744;  // sum of the above
  r.saved_activation_bytes = 24576;
  r.saved_bytes_by_node = {{"/fc1/Gemm", 8192},
                           {"/relu1/Relu", 8192},
                           {"/fc2/Gemm", 0},
                           {"/relu2/Relu", 8192},
                           {"/fc3/Gemm", 0}};
  return r;
}

inline MemoryResult MlpWidenedResult() {
  MemoryResult r;
  // parameters: fc1 256*320+320 = 82240, fc2 320*10+10 = 3210 -> 85450 * 4 B = 341800 B.
  r.breakdown[MemoryCategory::kParameters] = 341800;
  r.breakdown[MemoryCategory::kGradients] = 341800;
  r.breakdown[MemoryCategory::kOptimizerState] = 683600;
  r.breakdown[MemoryCategory::kActivations] = 18432;  // X 8192 + relu1 Y 8*320*4 = 10240
  r.breakdown[MemoryCategory::kTransients] = 10240;   // dY 8*320*4
  r.breakdown[MemoryCategory::kWorkspace] = 0;
  r.breakdown[MemoryCategory::kOther] = 8512;
  r.peak_bytes = 1404384;  // sum of the above
  r.saved_activation_bytes = 18432;
  r.saved_bytes_by_node = {{"/fc1/Gemm", 8192}, {"/relu1/Relu", 10240}, {"/fc2/Gemm", 0}};
  return r;
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
