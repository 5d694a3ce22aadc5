#include "analyzer/program/frozen_weight_storage.h"

namespace memplan {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t Nf4QuantizationStateBytes(int64_t elements) {
  const int64_t blocks = CeilDiv(elements, kNf4BlockElements);
  const int64_t second_level = CeilDiv(blocks, kNf4SecondLevelBlocks);
  return blocks * 1 + second_level * 4 + /*offset=*/4 + kNf4CodeTableEntries * 4;
}

int64_t Int8QuantizationStateBytes(int64_t output_features) { return output_features * 4; }

std::optional<FrozenStorage> FrozenWeightStorage(const Graph& graph, ValueId weight,
                                                 BaseDType base) {
  const Value& v = graph.value(weight);
  if (v.kind != ValueKind::kParameter || !v.frozen || !IsFloating(v.dtype)) return std::nullopt;
  FrozenStorage storage;
  storage.dtype = v.dtype;
  switch (base) {
    case BaseDType::kFp32:
      storage.dtype = DType::kFloat32;
      return storage;
    case BaseDType::kBf16:
      storage.dtype = DType::kBFloat16;
      return storage;
    case BaseDType::kFp16:
      storage.dtype = DType::kFloat16;
      return storage;
    case BaseDType::kInt8:
    case BaseDType::kNf4:
      break;
  }
  std::optional<LinearWeightUse> linear = AsLinearWeight(graph, weight);
  if (!linear) return storage;  // not an nn.Linear weight: kept as the model stores it
  storage.quantized = true;
  if (base == BaseDType::kInt8) {
    storage.dtype = DType::kInt8;
    storage.quantization_state_bytes = Int8QuantizationStateBytes(linear->output_features);
  } else {
    storage.dtype = DType::kUInt4;
    storage.quantization_state_bytes =
        Nf4QuantizationStateBytes(linear->input_features * linear->output_features);
  }
  return storage;
}

}  // namespace memplan
