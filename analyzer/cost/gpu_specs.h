#pragma once
// The GPUs memplan knows by name (`--gpu A100-80GB`), and generic GPUs given only by memory size
// (`--gpu 24G`). The planner reads memory_bytes - context_bytes as the budget and the throughput
// figures for the roofline cost model (analyzer/cost/cost_model.h).
//
// Every figure is the vendor datasheet's *dense* peak (NVIDIA quotes tensor-core numbers "with
// sparsity" too; those are twice the dense figure and never reached by training). Sources are
// cited beside each entry in gpu_specs.cc.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/vocabulary/name_table.h"
#include "graph/expected.h"

namespace memplan {

// The architecture generation: the per-process figures that differ by generation follow it.
#define MEMPLAN_GPU_GENERATIONS(X) \
  X(kVolta, "Volta")               \
  X(kTuring, "Turing")             \
  X(kAmpere, "Ampere")             \
  X(kAda, "Ada")                   \
  X(kHopper, "Hopper")
MEMPLAN_NAMED_ENUM(GpuGeneration, MEMPLAN_GPU_GENERATIONS);

// PyTorch's cuBLAS workspace per (handle, stream), allocated through the caching allocator at
// the first GEMM and kept for the life of the process (torch.cuda.memory_snapshot shows it):
// 32 MiB on Hopper (sm_90, as the cuBLAS reference's cublasSetWorkspace recommends and PyTorch
// uses since 2.1), 8 MiB + 128 KiB before (CUBLAS_WORKSPACE_CONFIG's default ":4096:2:16:8" =
// 2 x 4 MiB + 8 x 16 KiB).
int64_t CublasWorkspaceBytes(GpuGeneration generation);

// A training step uses two cuBLAS handles, each with its workspace: the forward runs on the
// Python thread, the backward on autograd's device thread, and PyTorch's handle pool gives each
// thread its own handle.
inline constexpr int64_t kCublasHandlesPerTraining = 2;

struct GpuSpec {
  std::string name;         // canonical table name ("A100-80GB"), or "generic-24GiB"
  std::string description;  // "NVIDIA A100 80GB SXM4"
  // Device memory a process can see: nvidia-smi's "Total" (slightly below the datasheet capacity
  // where the driver reserves some, e.g. ECC on the T4); for a generic GPU, the size given.
  int64_t memory_bytes = 0;
  // Memory the process loses before the first tensor: CUDA context (driver state, kernel images
  // of the loaded libraries) plus cuBLAS/cuDNN handles and workspaces. See kDefaultContextBytes.
  int64_t context_bytes = 0;
  // context_bytes split into its parts (ContextBytes below): the CUDA context itself (driver
  // state, kernel images) and the cuBLAS workspaces of the generation.
  GpuGeneration generation = GpuGeneration::kTuring;
  int64_t cuda_context_bytes = 0;
  // Which figure cuda_context_bytes is (SetCudaContext): "lazy" (the default), "eager", or
  // "--cuda-context" for a size the user gave.
  std::string cuda_context_figure = "lazy";
  int64_t cublas_workspace_bytes = 0;  // per handle: CublasWorkspaceBytes(generation)
  double fp32_flops_per_second = 0;    // CUDA-core FP32 (non-tensor)
  // TF32 tensor cores (Ampere+); equals fp32_flops_per_second on GPUs without TF32.
  double tf32_flops_per_second = 0;
  // FP16 tensor cores with FP32 accumulation (what mixed-precision training uses); BF16 is the
  // same rate where supported.
  double fp16_flops_per_second = 0;
  double memory_bytes_per_second = 0;  // DRAM bandwidth
  bool supports_bf16 = false;
  bool is_generic = false;  // true when made from a size, with kGenericGpu throughput
};

// Fixed per-process overhead assumed for every GPU: 512 MiB. Rationale:
//  * the CUDA context itself (driver state, kernel images of the loaded libraries): a few hundred
//    MiB on recent GPUs with lazy module loading (CUDA_MODULE_LOADING=LAZY, the default since
//    CUDA 11.7's opt-in / 12.2's default; CUDA C++ Programming Guide, "Lazy Loading"), more
//    without it because every kernel of cuBLAS/cuDNN is loaded eagerly;
//  * PyTorch's cuBLAS workspace per handle and stream: 8519680 B (CUBLAS_WORKSPACE_CONFIG default
//    ":4096:2:16:8" = 2 x 4 MiB + 8 x 16 KiB, visible in torch.cuda.memory_snapshot()); the cuBLAS
//    API reference (cublasSetWorkspace) recommends 32 MiB on Hopper, which recent PyTorch uses;
//  * the cuDNN handle. cuDNN convolution workspaces are per-call and modelled by the op registry
//    (OpSchema::backward_workspace), not here.
// 512 MiB covers the high end of these; the runtime's measured figure belongs in
// docs/measurements.md and should replace this estimate.
inline constexpr int64_t kDefaultContextBytes = int64_t{512} << 20;

// The parts of kDefaultContextBytes for a generation: the cuBLAS workspaces are stated by cuBLAS
// and PyTorch (CublasWorkspaceBytes x kCublasHandlesPerTraining); the CUDA context is the rest of
// the 512 MiB estimate (not measured: docs/precision.md says which figures are). Hopper:
// 512 MiB - 2 x 32 MiB = 448 MiB; before: 512 MiB - 2 x 8.125 MiB = 495.75 MiB.
int64_t CudaContextBytes(GpuGeneration generation);

// The CUDA context by how the process loads kernel modules (--cuda-context):
//
//   loading                                   CUDA context (without cuBLAS workspaces)
//   lazy  (CUDA >= 11.7 with                  CudaContextBytes(generation): 495.75 MiB,
//          CUDA_MODULE_LOADING=LAZY; the       Hopper 448 MiB (the 512 MiB estimate above;
//          driver's default on Linux since     PyTorch's maintainers quote ~300 MB and ~400 MB
//          12.2)                               for it: pytorch/pytorch#107667, #109888)
//   eager (CUDA < 11.7, or LAZY unset /       kEagerCudaContextBytes = 1.3 GiB on every
//          CUDA_MODULE_LOADING=EAGER)          generation: every kernel of every library loaded
//                                              at init ("> 1000MB", pytorch/pytorch#107667;
//                                              1122 MiB after a first conv on CUDA 10,
//                                              pytorch/pytorch#12873; about 1.3 GiB measured on
//                                              a V100 with CUDA 11, memplan issue 40)
//
// NVIDIA's CUDA Programming Guide, "Lazy Loading": introduced in 11.7 (disabled by default),
// enabled by default on Linux in 12.2; the CUDA runtime and driver >= R515 are both required.
inline constexpr int64_t kEagerCudaContextBytes = int64_t{1331} << 20;  // 1.3 GiB

// Sets spec's CUDA context from --cuda-context: "lazy", "eager" or a memory size ("1.3G", the
// context alone; the cuBLAS workspaces are still added), and context_bytes with it.
// Error: anything else, naming the choices.
Status SetCudaContext(GpuSpec& spec, std::string_view figure);

// Every named GPU, in a fixed order (for listings and error messages).
const std::vector<GpuSpec>& KnownGpus();

// Accepted names, canonical names first then aliases, for help texts and errors.
std::vector<std::string> KnownGpuNames();

// A known name (case-insensitive; "A100" = "A100-80GB", "H100" = H100 SXM 80GB, "V100" = 16GB) or
// a memory size as ParseMemorySize reads it ("24G", "80GB"). A size yields a generic GPU with
// that memory, kDefaultContextBytes and the throughput of the NVIDIA T4 (the slowest
// tensor-core GPU in the table), so times for an unnamed GPU err on the slow side.
// Error: neither a known name nor a size; the message lists the known names.
Expected<GpuSpec> ResolveGpu(std::string_view size_or_name);

}  // namespace memplan
