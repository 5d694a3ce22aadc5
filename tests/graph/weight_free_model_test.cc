// The weight-free parse (graph/weight_free_model.h): large float payloads are dropped by a
// wire-format pass, everything else survives byte for byte, malformed bytes are reported, and a
// file is read around the payloads rather than whole.

#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "graph/file_byte_source.h"
#include "graph/weight_free_model.h"
#include "import_test_util.h"
#include "proto_model.h"
#include "tests/require_value.h"

namespace memplan {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

onnx::TensorProto* RawTensor(onnx::GraphProto& g, const std::string& name, int32_t type,
                             std::vector<int64_t> dims, size_t raw_bytes) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(raw_bytes, '\x01'));
  return t;
}

// A Gemm model whose initializers cover every case the pass distinguishes.
onnx::ModelProto MixedInitializerModel() {
  testing::ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {int64_t{4}, int64_t{256}});
  m.Node("Gemm", {"x", "W", "bias"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{int64_t{4}, int64_t{256}}});
  auto& g = m.graph();
  // Dropped: float32 [256, 256] in raw_data, 256*256*4 = 262144 bytes > 64 KiB.
  RawTensor(g, "W", onnx::TensorProto::FLOAT, {256, 256}, 262144);
  // Kept: 1 KiB of bias is under the 64 KiB threshold.
  RawTensor(g, "bias", onnx::TensorProto::FLOAT, {256}, 1024);
  // Kept: an int64 table of 20000 * 8 = 160000 bytes (integers may be read as shapes/indices).
  RawTensor(g, "table", onnx::TensorProto::INT64, {20000}, 160000);
  // Kept: a float tensor whose payload (100000 bytes) is not what dims need (300*300*4), so the
  // importer's own check still sees and reports it.
  RawTensor(g, "odd", onnx::TensorProto::FLOAT, {300, 300}, 100000);
  // Dropped: packed float_data, 100 * 200 floats = 80000 bytes.
  auto* packed = g.add_initializer();
  packed->set_name("W2");
  packed->set_data_type(onnx::TensorProto::FLOAT);
  packed->add_dims(100);
  packed->add_dims(200);
  for (int i = 0; i < 100 * 200; ++i) packed->add_float_data(0.5F);
  return m.model();
}

TEST_CASE("weight-free parse drops large float payloads and keeps everything else",
          "[import][weight-free]") {
  const onnx::ModelProto original = MixedInitializerModel();
  const std::string bytes = original.SerializeAsString();
  MemoryByteSource source(bytes);
  auto stripped = StripLargeWeightPayloads(source);
  REQUIRE(stripped.ok());

  CHECK(stripped->stripped_tensors == 2);
  // Wire bytes of the dropped fields: W's raw_data = tag (1 byte) + length varint of 262144
  // (2^18 needs 3 bytes of 7 bits) + 262144 = 262148; W2's packed float_data = tag (1) + varint
  // of 80000 (3 bytes, 16384 <= 80000 < 2^21) + 80000 = 80004. Sum 342152.
  CHECK(stripped->stripped_bytes == 342152);
  CHECK(static_cast<int64_t>(bytes.size() - stripped->bytes.size()) >= 342152);

  // The result is exactly the original with those two payloads cleared.
  onnx::ModelProto expected = original;
  for (auto& t : *expected.mutable_graph()->mutable_initializer()) {
    if (t.name() == "W") t.clear_raw_data();
    if (t.name() == "W2") t.clear_float_data();
  }
  onnx::ModelProto parsed;
  REQUIRE(parsed.ParseFromString(stripped->bytes));
  CHECK(parsed.SerializeAsString() == expected.SerializeAsString());
}

TEST_CASE("weight-free import counts the same parameters as a full parse",
          "[import][weight-free]") {
  const std::string bytes = MixedInitializerModel().SerializeAsString();
  // The "odd" tensor's payload does not match its dims: kept, so the importer reports it.
  auto bad = ImportOnnxModelFromBytes(bytes, "mixed.onnx");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Contains("initializer 'odd'"));

  onnx::ModelProto fixed = MixedInitializerModel();
  auto& inits = *fixed.mutable_graph()->mutable_initializer();
  for (int i = 0; i < inits.size(); ++i) {
    if (inits[i].name() == "odd") {
      inits.DeleteSubrange(i, 1);
      break;
    }
  }
  auto graph = ImportOnnxModelFromBytes(fixed.SerializeAsString(), "mixed.onnx");
  if (!graph.ok()) FAIL(graph.error().message);
  // Floating initializers are parameters: W 256*256 = 65536, bias 256, W2 100*200 = 20000;
  // 65536 + 256 + 20000 = 85792. The int64 table is not a parameter.
  CHECK(testing::ParameterCount(*graph) == 85792);
}

// Why StripLargeWeightPayloads refuses `bytes`; fails the test when it accepts them.
std::string StripError(const std::string& bytes) {
  MemoryByteSource source(bytes);
  return testing::RequireError(StripLargeWeightPayloads(source));
}

TEST_CASE("weight-free parse reports malformed bytes", "[import][weight-free][bad-input]") {
  const std::string bytes = MixedInitializerModel().SerializeAsString();
  SECTION("a cut inside a payload runs a length past the end") {
    const std::string cut = bytes.substr(0, bytes.size() / 2);
    CHECK_THAT(StripError(cut), StartsWith("not well-formed"));
    // Through the importer it is the usual one-line parse failure.
    auto graph = ImportOnnxModelFromBytes(cut, "cut.onnx");
    REQUIRE_FALSE(graph.ok());
    CHECK_THAT(graph.error().message, Contains("is not a valid ONNX model"));
  }
  SECTION("an invalid wire type") {
    const std::string junk = "\x0f\x01";  // field 1, wire type 7
    CHECK_THAT(StripError(junk), StartsWith("not well-formed: invalid wire type 7"));
  }
  SECTION("start-group tags nested without end (fuzzer finding: a stack overflow before)") {
    // Field 1, wire type 3 (start group), 100,000 times: each opens a group inside the last.
    const std::string junk(100000, '\x0b');
    CHECK_THAT(StripError(junk), Contains("groups nested too deeply"));
    auto graph = ImportOnnxModelFromBytes(junk, "groups.onnx");
    REQUIRE_FALSE(graph.ok());
  }
  SECTION("a varint that never ends") {
    const std::string junk(12, '\xff');
    MemoryByteSource source(junk);
    CHECK_FALSE(StripLargeWeightPayloads(source).ok());
  }
}

// Counts what the pass reads, to show a payload is skipped and not read.
class CountingSource final : public ModelByteSource {
 public:
  explicit CountingSource(std::string_view bytes) : inner_(bytes) {}
  int64_t size() const override { return inner_.size(); }
  Status Read(int64_t offset, int64_t count, char* out) override {
    read_bytes += count;
    return inner_.Read(offset, count, out);
  }
  int64_t read_bytes = 0;

 private:
  MemoryByteSource inner_;
};

TEST_CASE("weight-free parse reads around skipped payloads", "[import][weight-free]") {
  testing::ProtoModel m(/*opset=*/13);
  m.Input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1024}});
  m.Node("MatMul", {"x", "W"}, {"y"});
  m.Output("y", onnx::TensorProto::FLOAT, {{int64_t{1}, int64_t{2048}}});
  // 1024 * 2048 floats = 8 MiB of weights.
  RawTensor(m.graph(), "W", onnx::TensorProto::FLOAT, {1024, 2048}, 8u << 20);
  const std::string bytes = m.model().SerializeAsString();
  CountingSource source(bytes);
  auto stripped = StripLargeWeightPayloads(source);
  REQUIRE(stripped.ok());
  CHECK(stripped->stripped_tensors == 1);
  // The graph is a few hundred bytes: at most one 64 KiB window before the payload and one after
  // it (clipped at the end) are read, far below the 8 MiB the weights take.
  CHECK(source.read_bytes <= 2 * 64 * 1024);
}

TEST_CASE("a file byte source reads a regular file piecewise", "[import][weight-free]") {
  auto dir = std::filesystem::temp_directory_path() / "memplan_file_byte_source_test";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "bytes.bin").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << "0123456789";
  }
  auto file = FileByteSource::Open(path, /*max_bytes=*/100, "model file");
  REQUIRE(file.ok());
  CHECK((*file)->size() == 10);
  std::string got(4, '\0');
  REQUIRE((*file)->Read(3, 4, got.data()).ok());
  CHECK(got == "3456");

  auto too_big = FileByteSource::Open(path, /*max_bytes=*/5, "model file");
  REQUIRE_FALSE(too_big.ok());
  CHECK_THAT(too_big.error().message, Contains("more than the 5 bytes"));
  auto missing = FileByteSource::Open((dir / "absent.onnx").string(), 100, "model file");
  CHECK_FALSE(missing.ok());
  auto directory = FileByteSource::Open(dir.string(), 100, "model file");
  CHECK_FALSE(directory.ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace memplan
