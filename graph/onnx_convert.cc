#include "graph/onnx_convert.h"

#include <cmath>
#include <cstring>

#include "graph/checked_math.h"
#include "graph/graph.h"
#include "graph/ops/shape_ops_folding.h"

namespace memplan {
namespace {

// IEEE half -> float, for the few float16 constants whose values are kept.
double HalfToDouble(uint16_t bits) {
  const int sign = (bits >> 15) & 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    value = mantissa ? std::nan("") : INFINITY;
  } else {
    value = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -value : value;
}

double BFloat16ToDouble(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &word, sizeof(f));
  return f;
}

// Little-endian element `i` of raw_data, `width` bytes wide.
uint64_t RawElement(const std::string& raw, size_t i, size_t width) {
  uint64_t v = 0;
  for (size_t b = 0; b < width; ++b)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(raw[i * width + b])) << (8 * b);
  return v;
}

int64_t SignExtend(uint64_t v, size_t width) {
  if (width >= 8) return static_cast<int64_t>(v);
  const uint64_t sign = uint64_t{1} << (8 * width - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

// What the small-value readers need to know before reading a tensor's elements.
struct InlineLayout {
  size_t count = 0;
  DType dtype = DType::kUndefined;
};

// Element count and dtype when the tensor is inline, small enough, of a dtype memplan knows and,
// when it has raw_data, holds exactly that many elements there; nullopt otherwise. Both
// SmallIntegerValues and SmallFloatValues start from it, so they refuse the same tensors.
std::optional<InlineLayout> SmallInlineLayout(const onnx::TensorProto& tensor,
                                              int64_t max_elements) {
  if (IsExternal(tensor)) return std::nullopt;
  std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  for (int64_t d : dims)
    if (d < 0) return std::nullopt;
  auto count = ElementCount(dims);
  auto dtype = DTypeFromOnnx(tensor.data_type());
  if (!count || *count > max_elements || !dtype) return std::nullopt;
  const auto n = static_cast<size_t>(*count);
  if (tensor.has_raw_data() &&
      tensor.raw_data().size() != n * static_cast<size_t>(ByteSize(*dtype)))
    return std::nullopt;
  return InlineLayout{n, *dtype};
}

// A tensor attribute (a Constant's table) with its values, up to kMaxKeptTensorElements.
TensorAttribute ConvertTensor(const onnx::TensorProto& tensor) {
  TensorAttribute t;
  t.dtype = DTypeFromOnnx(tensor.data_type()).value_or(DType::kUndefined);
  t.dims.assign(tensor.dims().begin(), tensor.dims().end());
  if (auto ints = SmallIntegerValues(tensor, kMaxKeptTensorElements))
    t.int_values = std::move(*ints);
  if (auto floats = SmallFloatValues(tensor, kMaxKeptTensorElements))
    t.float_values = std::move(*floats);
  return t;
}

}  // namespace

std::optional<int64_t> ElementCount(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) {
    auto product = CheckedMul(count, d);
    if (!product) return std::nullopt;
    count = *product;
  }
  return count;
}

Expected<std::vector<int64_t>> TensorDims(const onnx::TensorProto& tensor,
                                          const std::string& what) {
  std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return MakeError(what + " has a negative dim " + std::to_string(dims[i]) + " at axis " +
                       std::to_string(i));
    }
  }
  return dims;
}

bool IsExternal(const onnx::TensorProto& tensor) {
  return tensor.data_location() == onnx::TensorProto::EXTERNAL;
}

std::optional<std::string> ExternalLocation(const onnx::TensorProto& tensor) {
  for (const auto& entry : tensor.external_data())
    if (entry.key() == "location") return entry.value();
  return std::nullopt;
}

std::optional<std::vector<int64_t>> SmallIntegerValues(const onnx::TensorProto& tensor,
                                                       int64_t max_elements) {
  auto layout = SmallInlineLayout(tensor, max_elements);
  if (!layout || !IsFoldableDType(layout->dtype)) return std::nullopt;
  const auto [count, dtype] = *layout;
  std::vector<int64_t> values;
  values.reserve(count);
  if (tensor.has_raw_data()) {
    const size_t width = static_cast<size_t>(ByteSize(dtype));
    const bool is_signed = dtype == DType::kInt8 || dtype == DType::kInt16 ||
                           dtype == DType::kInt32 || dtype == DType::kInt64;
    for (size_t i = 0; i < count; ++i) {
      uint64_t raw = RawElement(tensor.raw_data(), i, width);
      values.push_back(is_signed ? SignExtend(raw, width) : static_cast<int64_t>(raw));
    }
    return values;
  }
  // Typed fields (onnx.proto): int64_data for INT64; uint64_data for UINT32/UINT64; int32_data
  // for the narrower integers and bool.
  if (dtype == DType::kInt64) {
    values.assign(tensor.int64_data().begin(), tensor.int64_data().end());
  } else if (dtype == DType::kUInt32 || dtype == DType::kUInt64) {
    for (uint64_t v : tensor.uint64_data()) values.push_back(static_cast<int64_t>(v));
  } else {
    values.assign(tensor.int32_data().begin(), tensor.int32_data().end());
  }
  if (values.size() != count) return std::nullopt;
  return values;
}

std::optional<std::vector<double>> SmallFloatValues(const onnx::TensorProto& tensor,
                                                    int64_t max_elements) {
  auto layout = SmallInlineLayout(tensor, max_elements);
  if (!layout || !IsFloating(layout->dtype)) return std::nullopt;
  const auto [count, dtype] = *layout;
  std::vector<double> values;
  values.reserve(count);
  const bool has_raw = tensor.has_raw_data();
  for (size_t i = 0; i < count; ++i) {
    switch (dtype) {
      case DType::kFloat32: {
        if (!has_raw) {
          if (static_cast<size_t>(tensor.float_data_size()) != count) return std::nullopt;
          values.push_back(tensor.float_data(static_cast<int>(i)));
          break;
        }
        uint32_t bits = static_cast<uint32_t>(RawElement(tensor.raw_data(), i, 4));
        float f;
        std::memcpy(&f, &bits, sizeof(f));
        values.push_back(f);
        break;
      }
      case DType::kFloat64: {
        if (!has_raw) {
          if (static_cast<size_t>(tensor.double_data_size()) != count) return std::nullopt;
          values.push_back(tensor.double_data(static_cast<int>(i)));
          break;
        }
        uint64_t bits = RawElement(tensor.raw_data(), i, 8);
        double d;
        std::memcpy(&d, &bits, sizeof(d));
        values.push_back(d);
        break;
      }
      default: {  // float16 / bfloat16: 16-bit patterns in raw_data or int32_data
        uint16_t bits;
        if (has_raw) {
          bits = static_cast<uint16_t>(RawElement(tensor.raw_data(), i, 2));
        } else {
          if (static_cast<size_t>(tensor.int32_data_size()) != count) return std::nullopt;
          bits = static_cast<uint16_t>(tensor.int32_data(static_cast<int>(i)));
        }
        values.push_back(dtype == DType::kBFloat16 ? BFloat16ToDouble(bits) : HalfToDouble(bits));
      }
    }
  }
  return values;
}

Expected<Attributes> ConvertAttributes(const onnx::NodeProto& node, const std::string& node_label) {
  Attributes attributes;
  for (const auto& a : node.attribute()) {
    switch (a.type()) {
      case onnx::AttributeProto::INT:
        attributes.Set(a.name(), a.i());
        break;
      case onnx::AttributeProto::FLOAT:
        attributes.Set(a.name(), static_cast<double>(a.f()));
        break;
      case onnx::AttributeProto::STRING:
        attributes.Set(a.name(), a.s());
        break;
      case onnx::AttributeProto::INTS:
        attributes.Set(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end()));
        break;
      case onnx::AttributeProto::FLOATS:
        attributes.Set(a.name(), std::vector<double>(a.floats().begin(), a.floats().end()));
        break;
      case onnx::AttributeProto::STRINGS:
        attributes.Set(a.name(), std::vector<std::string>(a.strings().begin(), a.strings().end()));
        break;
      case onnx::AttributeProto::TENSOR: {
        for (size_t i = 0; i < static_cast<size_t>(a.t().dims_size()); ++i) {
          if (a.t().dims(static_cast<int>(i)) < 0) {
            return MakeError(node_label + ": attribute '" + a.name() + "' has a negative dim");
          }
        }
        attributes.Set(a.name(), ConvertTensor(a.t()));
        break;
      }
      case onnx::AttributeProto::GRAPH:
      case onnx::AttributeProto::GRAPHS:
        return MakeError(node_label + ": subgraph ops (If, Loop, Scan) are not supported");
      default:
        break;  // sparse tensors, type protos, unset: no shape rule reads them
    }
  }
  return attributes;
}

}  // namespace memplan
