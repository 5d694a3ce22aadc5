#pragma once
// Import bounded by the graph, not the weights: a protobuf wire-format pass over a serialized
// ModelProto that copies everything except the payloads of large floating-point initializers.
// memplan never reads a float weight (parameter counts and byte sizes come from dims and dtype;
// `verify` seeds its own weights, runtime/weight_init.h), so a 650 MB inline-weight export
// becomes a model of a few hundred KB that protobuf, the libonnx checker and shape inference
// handle in milliseconds.
//
// What is dropped, per graph initializer (ModelProto.graph = 7, GraphProto.initializer = 5):
// the one payload field (raw_data = 9, packed float_data = 4, packed double_data = 10) of a
// tensor whose dtype is floating point, whose payload is larger than `max_kept_payload_bytes`,
// and whose payload length is exactly what its dims and dtype need. Everything else is copied
// byte for byte: integer and bool tensors (shape tensors for Reshape/Expand/Slice, index tables)
// of any size, small float constants, tensors whose payload does not match their dims (the
// importer's own check then reports them as before), node attributes, external-data entries.
// A stripped tensor keeps its name, dims and dtype, so it reads as a metadata-only initializer
// (the zoo's form); StrippedPayloads counts what was left out.
//
// Reading: the source is read through a bounded window and payloads are skipped by offset, so a
// file source never holds the weights in memory (graph/file_byte_source.h reads a file with pread).

#include <cstdint>
#include <string>
#include <string_view>

#include "graph/expected.h"

namespace memplan {

// Random-access bytes of a serialized model: a file read with pread, or memory.
class ModelByteSource {
 public:
  virtual ~ModelByteSource() = default;
  virtual int64_t size() const = 0;
  // Reads exactly `count` bytes at `offset` into `out` (REQUIRES: offset + count <= size()).
  // An error means the source changed under us (a file shrank) or could not be read.
  virtual Status Read(int64_t offset, int64_t count, char* out) = 0;
};

class MemoryByteSource final : public ModelByteSource {
 public:
  explicit MemoryByteSource(std::string_view bytes) : bytes_(bytes) {}
  int64_t size() const override { return static_cast<int64_t>(bytes_.size()); }
  Status Read(int64_t offset, int64_t count, char* out) override;

 private:
  std::string_view bytes_;
};

struct WeightFreeOptions {
  // Float payloads up to this size are kept: small constants are cheap, and a few rules read
  // scalar float values (GELU fusion's constants).
  int64_t max_kept_payload_bytes = 64 * 1024;
};

struct WeightFreeModel {
  std::string bytes;  // the serialized model without the dropped payloads
  int64_t stripped_tensors = 0;
  int64_t stripped_bytes = 0;  // payload bytes left out (wire bytes, as stored in the file)
};

// Errors: the bytes are not a well-formed protobuf message at the levels this pass walks (a
// length or varint running past the end, an invalid wire type), reported as
// "not well-formed: ..." so the caller can phrase it as a parse failure; or a read error.
Expected<WeightFreeModel> StripLargeWeightPayloads(ModelByteSource& source,
                                                   const WeightFreeOptions& options = {});

}  // namespace memplan
