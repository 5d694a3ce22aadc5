#include "graph/weight_free_model.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "graph/checked_math.h"
#include "graph/dim.h"
#include "graph/dtype.h"

namespace memplan {
namespace {

// Field numbers of onnx.proto (ModelProto, GraphProto, TensorProto) this pass reads.
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kTensorDims = 1;
constexpr uint32_t kTensorDataType = 2;
constexpr uint32_t kTensorFloatData = 4;
constexpr uint32_t kTensorRawData = 9;
constexpr uint32_t kTensorDoubleData = 10;

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

constexpr size_t kMaxVarintBytes = 10;  // a 64-bit varint's longest encoding

Error Malformed(const std::string& what) { return Error{"not well-formed: " + what}; }

// The source read through one bounded window: the graph's own bytes (nodes, value infos, small
// tensors) are served from it, and a skipped payload simply moves the next read past the window.
class WindowedReader {
 public:
  explicit WindowedReader(ModelByteSource& source) : source_(source) {}

  int64_t size() const { return source_.size(); }

  Status Copy(int64_t offset, int64_t count, std::string& out) {
    if (offset < 0 || count < 0 || count > size() - offset) return Malformed("field past the end");
    const size_t start = out.size();
    out.resize(start + static_cast<size_t>(count));
    char* dst = out.data() + start;
    while (count > 0) {
      MEMPLAN_RETURN_IF_ERROR(Fill(offset));
      const int64_t in_window = std::min<int64_t>(count, window_end() - offset);
      std::memcpy(dst, window_.data() + (offset - window_offset_), static_cast<size_t>(in_window));
      dst += in_window;
      offset += in_window;
      count -= in_window;
    }
    return OkStatus();
  }

  Expected<uint8_t> Byte(int64_t offset) {
    if (offset < 0 || offset >= size()) return Malformed("field past the end");
    MEMPLAN_RETURN_IF_ERROR(Fill(offset));
    return static_cast<uint8_t>(window_[static_cast<size_t>(offset - window_offset_)]);
  }

 private:
  // Small enough that skipping a payload wastes little (each refill past a skipped weight reads
  // at most one window of it), large enough that the graph's own bytes take few reads.
  static constexpr int64_t kWindowBytes = 64 * 1024;

  int64_t window_end() const { return window_offset_ + static_cast<int64_t>(window_.size()); }

  // Makes `offset` (< size()) fall inside the window.
  Status Fill(int64_t offset) {
    if (offset >= window_offset_ && offset < window_end()) return OkStatus();
    const int64_t count = std::min<int64_t>(kWindowBytes, size() - offset);
    window_.resize(static_cast<size_t>(count));
    window_offset_ = offset;
    Status read = source_.Read(offset, count, window_.data());
    if (!read.ok()) window_.clear();
    return read;
  }

  ModelByteSource& source_;
  std::string window_;
  int64_t window_offset_ = 0;
};

// One field of a message: its tag and where its bytes lie.
struct Field {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  int64_t begin = 0;          // first byte of the tag
  int64_t payload_begin = 0;  // first byte after the tag (and after the length, if delimited)
  int64_t end = 0;            // one past the field's last byte
  uint64_t varint = 0;        // the value of a varint field
};

Expected<uint64_t> ReadVarint(WindowedReader& in, int64_t& offset, int64_t limit) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (offset >= limit) return Malformed("varint past the end of its message");
    MEMPLAN_TRY(uint8_t byte, in.Byte(offset));
    ++offset;
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  return Malformed("varint longer than 10 bytes");
}

Expected<Field> ReadFieldAtDepth(WindowedReader& in, int64_t offset, int64_t limit, int depth);

// Skips a group's fields up to its matching end tag; returns the offset after it. Its fields are
// read at its own depth, so nested groups count towards the bound (a file of start-group tags
// nested a hundred thousand deep would otherwise recurse until the stack overflows).
Expected<int64_t> SkipGroup(WindowedReader& in, int64_t offset, int64_t limit, uint32_t number,
                            int depth) {
  if (depth > 64) return Malformed("groups nested too deeply");
  while (offset < limit) {
    MEMPLAN_TRY(Field f, ReadFieldAtDepth(in, offset, limit, depth));
    if (f.wire_type == kEndGroup) {
      if (f.number != number) return Malformed("mismatched end group");
      return f.end;
    }
    offset = f.end;
  }
  return Malformed("group without an end");
}

Expected<Field> ReadFieldAtDepth(WindowedReader& in, int64_t offset, int64_t limit, int depth) {
  Field f;
  f.begin = offset;
  MEMPLAN_TRY(uint64_t tag, ReadVarint(in, offset, limit));
  f.number = static_cast<uint32_t>(tag >> 3);
  f.wire_type = static_cast<uint32_t>(tag & 7);
  if (f.number == 0 || tag >> 32 != 0) return Malformed("invalid field number");
  switch (f.wire_type) {
    case kVarint: {
      MEMPLAN_TRY(f.varint, ReadVarint(in, offset, limit));
      f.payload_begin = f.begin;
      f.end = offset;
      return f;
    }
    case kFixed64:
    case kFixed32: {
      const int64_t width = f.wire_type == kFixed64 ? 8 : 4;
      if (width > limit - offset) return Malformed("fixed-width field past the end");
      f.payload_begin = offset;
      f.end = offset + width;
      return f;
    }
    case kLengthDelimited: {
      MEMPLAN_TRY(uint64_t length, ReadVarint(in, offset, limit));
      if (length > static_cast<uint64_t>(limit - offset)) {
        return Malformed("length-delimited field past the end");
      }
      f.payload_begin = offset;
      f.end = offset + static_cast<int64_t>(length);
      return f;
    }
    case kStartGroup: {
      f.payload_begin = offset;
      MEMPLAN_TRY(f.end, SkipGroup(in, offset, limit, f.number, depth + 1));
      return f;
    }
    case kEndGroup:
      f.payload_begin = f.end = offset;
      return f;
    default:
      return Malformed("invalid wire type " + std::to_string(f.wire_type));
  }
}

Expected<Field> ReadField(WindowedReader& in, int64_t offset, int64_t limit) {
  return ReadFieldAtDepth(in, offset, limit, /*depth=*/0);
}

void AppendVarint(uint64_t value, std::string& out) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// `body` as length-delimited field `number`.
void AppendMessageField(uint32_t number, const std::string& body, std::string& out) {
  AppendVarint((static_cast<uint64_t>(number) << 3) | kLengthDelimited, out);
  AppendVarint(body.size(), out);
  out += body;
}

// Payloads of these types are weights the analysis never reads (float8/float4 included).
bool IsFloatPayloadType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat64:
    case DType::kComplex64:
    case DType::kComplex128:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1:
      return true;
    default:
      return false;
  }
}

class Stripper {
 public:
  Stripper(WindowedReader& in, const WeightFreeOptions& options) : in_(in), options_(options) {}

  Expected<WeightFreeModel> Run() {
    WeightFreeModel result;
    result.bytes.reserve(static_cast<size_t>(std::min<int64_t>(in_.size(), 1 << 20)));
    MEMPLAN_RETURN_IF_ERROR(CopyMessage(0, in_.size(), /*level=*/Level::kModel, result.bytes));
    result.stripped_tensors = stripped_tensors_;
    result.stripped_bytes = stripped_bytes_;
    return result;
  }

 private:
  enum class Level { kModel, kGraph };

  // Copies the message in [begin, end), descending into the one field on the path to the
  // initializers (model.graph, then graph.initializer) and copying every other field verbatim.
  Status CopyMessage(int64_t begin, int64_t end, Level level, std::string& out) {
    int64_t offset = begin;
    while (offset < end) {
      MEMPLAN_TRY(Field f, ReadField(in_, offset, end));
      if (f.wire_type == kEndGroup) return Malformed("end group outside a group");
      offset = f.end;
      const bool delimited = f.wire_type == kLengthDelimited;
      if (delimited && level == Level::kModel && f.number == kModelGraph) {
        // The graph is most of the model: it is copied once, into `out` behind room for its tag
        // and length (known only after the copy), and the gap left is closed by one move. (No
        // reserve: the field's size in the file includes the payloads about to be dropped.)
        const size_t header = out.size();
        out.append(2 * kMaxVarintBytes, '\0');
        MEMPLAN_RETURN_IF_ERROR(CopyMessage(f.payload_begin, f.end, Level::kGraph, out));
        std::string prefix;
        AppendVarint((static_cast<uint64_t>(f.number) << 3) | kLengthDelimited, prefix);
        AppendVarint(out.size() - header - 2 * kMaxVarintBytes, prefix);
        const size_t start = header + 2 * kMaxVarintBytes - prefix.size();
        std::memcpy(out.data() + start, prefix.data(), prefix.size());
        out.erase(header, start - header);
      } else if (delimited && level == Level::kGraph && f.number == kGraphInitializer) {
        MEMPLAN_RETURN_IF_ERROR(CopyTensor(f, out));
      } else {
        MEMPLAN_RETURN_IF_ERROR(in_.Copy(f.begin, f.end - f.begin, out));
      }
    }
    return OkStatus();
  }

  // The element count of a tensor from its dims fields (packed or not); nullopt on overflow or a
  // malformed dims field (then nothing is stripped and the importer's checks speak).
  std::optional<int64_t> ElementCount(const std::vector<Field>& fields) {
    int64_t count = 1;
    auto multiply = [&count](uint64_t d) {
      if (d > static_cast<uint64_t>(INT64_MAX)) return false;
      auto next = CheckedMul(count, static_cast<int64_t>(d));
      if (!next) return false;
      count = *next;
      return true;
    };
    for (const Field& f : fields) {
      if (f.number != kTensorDims) continue;
      if (f.wire_type == kVarint) {
        if (!multiply(f.varint)) return std::nullopt;
      } else if (f.wire_type == kLengthDelimited) {
        int64_t offset = f.payload_begin;
        while (offset < f.end) {
          auto d = ReadVarint(in_, offset, f.end);
          if (!d || !multiply(*d)) return std::nullopt;
        }
      } else {
        return std::nullopt;
      }
    }
    return count;
  }

  // The payload field a weight-free copy may drop, when exactly one is present and its length
  // is what the dims and dtype need; -1 otherwise.
  int DroppablePayload(const std::vector<Field>& fields) {
    int32_t data_type = 0;
    int payload = -1;
    int payload_fields = 0;
    for (size_t i = 0; i < fields.size(); ++i) {
      const Field& f = fields[i];
      if (f.number == kTensorDataType && f.wire_type == kVarint) {
        data_type = static_cast<int32_t>(f.varint);
      }
      if (f.number == kTensorRawData || f.number == kTensorFloatData ||
          f.number == kTensorDoubleData) {
        ++payload_fields;
        payload = static_cast<int>(i);
      }
    }
    if (payload_fields != 1) return -1;
    const Field& p = fields[static_cast<size_t>(payload)];
    const int64_t length = p.end - p.payload_begin;
    if (p.wire_type != kLengthDelimited || length <= options_.max_kept_payload_bytes) return -1;
    auto dtype = DTypeFromOnnx(data_type);
    if (!dtype || !IsFloatPayloadType(*dtype)) return -1;
    auto count = ElementCount(fields);
    if (!count) return -1;
    std::optional<int64_t> expected;
    if (p.number == kTensorRawData) {
      expected = TensorBytes(Dim(*count), *dtype).constant_value();
    } else if (p.number == kTensorFloatData && *dtype == DType::kFloat32) {
      expected = CheckedMul(*count, 4);
    } else if (p.number == kTensorFloatData && *dtype == DType::kComplex64) {
      expected = CheckedMul(*count, 8);
    } else if (p.number == kTensorDoubleData && *dtype == DType::kFloat64) {
      expected = CheckedMul(*count, 8);
    } else if (p.number == kTensorDoubleData && *dtype == DType::kComplex128) {
      expected = CheckedMul(*count, 16);
    }
    if (!expected || *expected != length) return -1;
    return payload;
  }

  Status CopyTensor(const Field& tensor, std::string& out) {
    std::vector<Field> fields;
    for (int64_t offset = tensor.payload_begin; offset < tensor.end;) {
      MEMPLAN_TRY(Field f, ReadField(in_, offset, tensor.end));
      if (f.wire_type == kEndGroup) return Malformed("end group outside a group");
      offset = f.end;
      fields.push_back(f);
    }
    const int drop = DroppablePayload(fields);
    if (drop < 0) return in_.Copy(tensor.begin, tensor.end - tensor.begin, out);
    std::string body;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (static_cast<int>(i) == drop) continue;
      MEMPLAN_RETURN_IF_ERROR(in_.Copy(fields[i].begin, fields[i].end - fields[i].begin, body));
    }
    AppendMessageField(tensor.number, body, out);
    ++stripped_tensors_;
    stripped_bytes_ +=
        fields[static_cast<size_t>(drop)].end - fields[static_cast<size_t>(drop)].begin;
    return OkStatus();
  }

  WindowedReader& in_;
  const WeightFreeOptions& options_;
  int64_t stripped_tensors_ = 0;
  int64_t stripped_bytes_ = 0;
};

}  // namespace

Status MemoryByteSource::Read(int64_t offset, int64_t count, char* out) {
  MEMPLAN_CHECK(offset >= 0 && count >= 0 && count <= size() - offset);
  std::memcpy(out, bytes_.data() + offset, static_cast<size_t>(count));
  return OkStatus();
}

Expected<WeightFreeModel> StripLargeWeightPayloads(ModelByteSource& source,
                                                   const WeightFreeOptions& options) {
  WindowedReader reader(source);
  return Stripper(reader, options).Run();
}

}  // namespace memplan
