#pragma once
// How a frozen parameter is stored under --base-dtype, and what its quantisation constants cost.
//
//   fp32/bf16/fp16: every frozen floating parameter is stored in that dtype; an op computing in
//     another dtype reads a cast (a transient, held for backward when the op saves the weight,
//     as autocast's cast is).
//   int8 (bitsandbytes Int8Params, LLM.int8): a frozen linear weight (graph/linear_weight.h) is
//     stored as int8 codes plus SCB, one fp32 scale per output feature (row of
//     nn.Linear's [out, in] weight).
//   nf4 (bitsandbytes Params4bit as QLoRA uses it: blocksize 64, compress_statistics=True):
//     packed 4-bit codes (n / 2 bytes), the 64-block absmax double-quantised to uint8 (one byte
//     per 64 elements) with a second-level fp32 absmax per 256 blocks, the fp32 offset
//     (absmax.mean()) and the 16-entry fp32 NF4 code table of its QuantState
//     (bitsandbytes/functional.py quantize_4bit). The shared 256-entry dynamic map of the
//     second level is one per device, not per weight, and is not counted.
//   Quantised weights are dequantised per use into a transient in the op's compute dtype, in
//   forward and again in backward (bnb's MatMul4Bit/MatMul8bitLt keep the quantised weight, not
//   the dequantised one). Other frozen parameters (norms, biases, embeddings) keep the model's
//   storage, as bitsandbytes replaces only nn.Linear layers.

#include <cstdint>
#include <optional>

#include "analyzer/vocabulary/base_dtype.h"
#include "graph/dtype.h"
#include "graph/graph.h"
#include "graph/linear_weight.h"

namespace memplan {

inline constexpr int64_t kNf4BlockElements = 64;       // Params4bit blocksize
inline constexpr int64_t kNf4SecondLevelBlocks = 256;  // quantize_blockwise(absmax, 256)
inline constexpr int64_t kNf4CodeTableEntries = 16;    // get_4bit_type("nf4"), fp32

struct FrozenStorage {
  DType dtype = DType::kFloat32;  // of the parameter buffer (kUInt4 packs two codes per byte)
  bool quantized = false;         // dequantised per use (int8, nf4)
  int64_t quantization_state_bytes = 0;  // the constants beside the codes
};

// Bytes of nf4's constants for a weight of `elements`: ceil(n/64) + 4 ceil(ceil(n/64)/256) + 4
// + 64.
int64_t Nf4QuantizationStateBytes(int64_t elements);
// Bytes of int8's SCB for a weight with `output_features` rows: 4 per row.
int64_t Int8QuantizationStateBytes(int64_t output_features);

// How frozen parameter `weight` is stored under `base`; nullopt when the parameter is not frozen
// (trained parameters are never affected).
std::optional<FrozenStorage> FrozenWeightStorage(const Graph& graph, ValueId weight,
                                                 BaseDType base);

}  // namespace memplan
