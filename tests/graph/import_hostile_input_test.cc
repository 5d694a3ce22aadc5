// Inputs a hostile user would try (issue 14): each must come back as one Error line, at once,
// never as a crash, an unbounded read or a silently wrong graph.

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "graph/onnx_import.h"
#include "graph/proto_node_order.h"
#include "graph/regular_file.h"
#include "tests/graph/import_test_util.h"
#include "tests/graph/proto_model.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

using Catch::Matchers::Contains;

std::string ImportError(const std::string& path) {
  auto graph = ImportOnnxModel(path);
  INFO(path);
  REQUIRE_FALSE(graph.ok());
  CHECK(graph.error().message.find('\n') == std::string::npos);
  return graph.error().message;
}

TEST_CASE("devices and FIFOs are refused before any read", "[import][bad-input]") {
  // /dev/zero and /dev/urandom never end: a read loop would fill memory.
  CHECK(ImportError("/dev/zero") == "/dev/zero is not a regular file");
  CHECK(ImportError("/dev/urandom") == "/dev/urandom is not a regular file");
  // Opening a FIFO for reading blocks until a writer appears; stat() sees it first.
  const std::string fifo =
      (std::filesystem::temp_directory_path() / ("memplan_fifo_" + std::to_string(getpid())))
          .string();
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(ImportError(fifo) == fifo + " is not a regular file");
  std::filesystem::remove(fifo);
}

TEST_CASE("a file over the caller's limit is refused by its size", "[import][bad-input]") {
  // tiny_mlp.onnx is 2,985 bytes, so a 100-byte limit refuses it without reading it.
  auto bytes = ReadRegularFile(memplan::testing::FixturesDir() + "/tiny_mlp.onnx",
                               /*max_bytes=*/100, "model file");
  REQUIRE_FALSE(bytes.ok());
  CHECK_THAT(bytes.error().message, Contains("2985 bytes, more than the 100 bytes"));
  auto whole = ReadRegularFile(memplan::testing::FixturesDir() + "/tiny_mlp.onnx",
                               /*max_bytes=*/2985, "model file");
  REQUIRE(whole.ok());
  CHECK(whole->size() == 2985);
}

using onnx::TensorProto;
using testing::ProtoModel;

std::string ProtoImportError(const ProtoModel& model, const std::string& file) {
  return model.ImportError(file);
}

// x[batch,4] -> Relu -> y: the smallest model the tensors below can be attached to.
ProtoModel ReluModel() {
  ProtoModel m(/*opset=*/17);
  m.Input("x", TensorProto::FLOAT, {std::string("batch"), int64_t{4}});
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y", TensorProto::FLOAT,
           std::vector<testing::ProtoDim>{std::string("batch"), int64_t{4}});
  return m;
}

TEST_CASE("proto nodes are sorted by their value dependencies", "[import]") {
  ProtoModel m(/*opset=*/17);
  m.Node("Relu", {"b"}, {"c"});  // needs b
  m.Node("Relu", {"a"}, {"b"});  // needs a
  m.Node("Relu", {"x"}, {"a"});  // needs only the graph input
  REQUIRE(SortProtoNodesTopologically(m.graph()));
  CHECK(m.graph().node(0).output(0) == "a");
  CHECK(m.graph().node(1).output(0) == "b");
  CHECK(m.graph().node(2).output(0) == "c");

  ProtoModel cyclic(/*opset=*/17);
  cyclic.Node("Relu", {"q"}, {"p"});
  cyclic.Node("Relu", {"p"}, {"q"});
  CHECK_FALSE(SortProtoNodesTopologically(cyclic.graph()));
  CHECK(cyclic.graph().node(0).output(0) == "p");  // left as it was
}

TEST_CASE("an unsorted model whose GELU is fused imports (inference sees it sorted)",
          "[import][gelu][bad-input]") {
  // y = Relu(Gelu(x)) with the exporter's five-node GELU, nodes written consumers first.
  ProtoModel m(/*opset=*/17);
  m.Input("x", TensorProto::FLOAT, {std::string("batch"), int64_t{4}});
  m.Node("Relu", {"g"}, {"y"});
  m.Node("Mul", {"m", "half"}, {"g"});
  m.Node("Mul", {"x", "a"}, {"m"});
  m.Node("Add", {"e", "one"}, {"a"});
  m.Node("Erf", {"d"}, {"e"});
  m.Node("Div", {"x", "sqrt2"}, {"d"});
  m.FloatScalar("sqrt2", 1.41421356f).FloatScalar("one", 1.0f).FloatScalar("half", 0.5f);
  m.Output("y", TensorProto::FLOAT,
           std::vector<testing::ProtoDim>{std::string("batch"), int64_t{4}});
  Graph graph = m.Import("unsorted_gelu.onnx");
  int gelus = 0;
  for (const Node& node : graph.nodes()) gelus += node.op_type == "Gelu";
  CHECK(gelus == 1);
  CHECK(graph.nodes().size() == 2);  // Gelu, Relu
  CHECK(testing::ValueNamed(graph, "y").shape.dims.size() == 2);
}

TEST_CASE("tensor data shorter than the dims claim is refused before libonnx reads it",
          "[import][bad-input]") {
  SECTION("an int64 Constant with 8 bytes of raw_data for 4 elements") {
    ProtoModel m = ReluModel();
    auto& c = m.Node("Constant", {}, {"shape"});
    auto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(TensorProto::INT64);
    a->mutable_t()->add_dims(4);
    a->mutable_t()->set_raw_data(std::string(8, '\0'));
    // 4 int64 elements need 4 * 8 = 32 bytes.
    CHECK(ProtoImportError(m, "short_constant.onnx") ==
          "node 'shape_node' (Constant) attribute 'value' claims 4 elements (32 bytes) but its "
          "raw_data holds 8 bytes");
  }
  SECTION("an initializer claiming 2^40 floats with 8 bytes") {
    ProtoModel m = ReluModel();
    auto* t = m.graph().add_initializer();
    t->set_name("W");
    t->set_data_type(TensorProto::FLOAT);
    t->add_dims(int64_t{1} << 20);
    t->add_dims(int64_t{1} << 20);
    t->set_raw_data(std::string(8, '\0'));
    // 2^40 elements * 4 bytes = 4398046511104 bytes.
    CHECK(ProtoImportError(m, "huge_initializer.onnx") ==
          "initializer 'W' claims 1099511627776 elements (4398046511104 bytes) but its raw_data "
          "holds 8 bytes");
  }
  SECTION("an int64 initializer with 3 typed values for 2 elements") {
    ProtoModel m = ReluModel();
    m.Int64s("s", {1, 2, 3});
    m.graph().mutable_initializer(0)->set_dims(0, 2);
    CHECK(ProtoImportError(m, "typed_mismatch.onnx") ==
          "initializer 's' claims 2 elements but stores 3");
  }
}

// An external float initializer W[8, 8] (256 bytes) with the given external_data entries.
ProtoModel ExternalModel(std::vector<std::pair<std::string, std::string>> entries,
                         int32_t dtype = TensorProto::FLOAT) {
  ProtoModel m = ReluModel();
  auto* t = m.graph().add_initializer();
  t->set_name("W");
  t->set_data_type(dtype);
  t->add_dims(8);
  t->add_dims(8);
  t->set_data_location(TensorProto::EXTERNAL);
  for (const auto& [key, value] : entries) {
    auto* e = t->add_external_data();
    e->set_key(key);
    e->set_value(value);
  }
  return m;
}

TEST_CASE("external data: every location, offset and length are validated", "[import][bad-input]") {
  // Well-formed: 8 * 8 floats = 256 bytes at offset 512 of w.bin (absent: only metadata is read).
  CHECK(ExternalModel({{"location", "w.bin"}, {"offset", "512"}, {"length", "256"}})
            .TryImport("external_ok.onnx")
            .ok());
  CHECK(ProtoImportError(ExternalModel({{"location", "w.bin"}, {"location", "../secret"}}),
                         "external_two_locations.onnx") ==
        "initializer 'W': external data location '../secret' escapes the model's folder");
  CHECK(ProtoImportError(ExternalModel({{"location", "w.bin"}, {"offset", "-1"}}),
                         "external_negative_offset.onnx") ==
        "initializer 'W': external data offset '-1' is not a non-negative integer");
  CHECK(ProtoImportError(
            ExternalModel(
                {{"location", "w.bin"}, {"offset", "9223372036854775807"}, {"length", "256"}}),
            "external_overflow.onnx") ==
        "initializer 'W': external data offset + length overflows 64 bits");
  CHECK(ProtoImportError(ExternalModel({{"location", "w.bin"}, {"length", "100"}}),
                         "external_short_length.onnx") ==
        "initializer 'W': external data length 100 differs from the 256 bytes its dims and type "
        "need");
  CHECK(ProtoImportError(ExternalModel({{"location", "w.bin"}}, TensorProto::UNDEFINED),
                         "external_undefined_dtype.onnx") ==
        "initializer 'W' has an undefined data type (0)");
}

TEST_CASE("a node with fewer inputs than its ONNX schema needs is an error (fuzzer finding)",
          "[import][bad-input]") {
  // Gather needs data and indices; the shape rule indexed input 1 of a one-input Gather.
  ProtoModel m(/*opset=*/17);
  m.Input("x", TensorProto::FLOAT, {int64_t{3}, int64_t{4}});
  m.Node("Gather", {"x"}, {"y"});
  m.Output("y", TensorProto::FLOAT, std::vector<testing::ProtoDim>{int64_t{4}});
  CHECK(ProtoImportError(m, "gather_one_input.onnx") ==
        "node 'y_node' (Gather): has 1 inputs and 1 outputs; ONNX needs at least 2 and 1");
}

// libonnx 1.12's Shape-15 data propagation dereferences the type of an input it could not type
// (graph/libonnx_crash_guards.h): before the guard both models below killed the process (SIGSEGV),
// as python3-onnx's infer_shapes(m, data_prop=True) still does on them.
TEST_CASE("a Shape of a value libonnx cannot type imports (fuzzer finding)",
          "[import][bad-input]") {
  // z = Reshape(y, Shape(y)), y = com.microsoft Gelu(x): libonnx has no schema for the contrib
  // Gelu, so y has no type when Shape reads it; memplan's registry knows y is x's [batch, 3].
  ProtoModel m(/*opset=*/17);
  m.Opset("com.microsoft", 1);
  m.Input("x", TensorProto::FLOAT, {std::string("batch"), int64_t{3}});
  m.Node("Gelu", {"x"}, {"y"}, "com.microsoft");
  m.Node("Shape", {"y"}, {"s"});
  m.Node("Reshape", {"y", "s"}, {"z"});
  m.Output("z", TensorProto::FLOAT,
           std::vector<testing::ProtoDim>{std::string("batch"), int64_t{3}});
  Graph graph = m.Import("shape_of_contrib_op.onnx");
  CHECK(testing::ShapeOf(graph, "z") == "[batch, 3]");
}

TEST_CASE("a Shape after an inner-dim mismatch is one error line, not a crash (fuzzer finding)",
          "[import][bad-input]") {
  // The fuzzer's case in small: a MatMul whose inner dims disagree (3 vs 4, as after a Reshape
  // target mutated from 768 to 256 in BERT) leaves libonnx without a type for it, and a Shape
  // reads the Add after it.
  ProtoModel m(/*opset=*/17);
  m.Input("x", TensorProto::FLOAT, {std::string("batch"), int64_t{3}});
  m.Initializer("W", TensorProto::FLOAT, {4, 5});
  m.Initializer("b", TensorProto::FLOAT, {5});
  m.Node("MatMul", {"x", "W"}, {"y"});
  m.Node("Add", {"y", "b"}, {"a"});
  m.Node("Shape", {"a"}, {"s"});
  m.Output("s", TensorProto::INT64, std::vector<testing::ProtoDim>{int64_t{2}});
  CHECK_THAT(ProtoImportError(m, "shape_after_mismatch.onnx"), Contains("MatMul"));
}

// Conv y = Conv(x[1, 8, 4, 4], W[2, 4, 3, 3]) with the given attributes.
ProtoModel ConvModel(int64_t group, std::vector<int64_t> pads) {
  ProtoModel m(/*opset=*/17);
  m.Input("x", TensorProto::FLOAT, {int64_t{1}, int64_t{8}, int64_t{4}, int64_t{4}});
  m.Initializer("W", TensorProto::FLOAT, {2, 4, 3, 3});
  auto& conv = m.Node("Conv", {"x", "W"}, {"y"});
  testing::SetInt(conv, "group", group);
  testing::SetInts(conv, "pads", pads);
  m.Output("y", TensorProto::FLOAT,
           std::vector<testing::ProtoDim>{int64_t{1}, int64_t{2}, int64_t{4}, int64_t{4}});
  return m;
}

TEST_CASE("Conv attributes near 2^63 are errors, not overflows", "[import][bad-input]") {
  // Sanity: group 2 with 4 weight channels is the 8 input channels; pads 1 keep 4x4.
  CHECK(ConvModel(/*group=*/2, {1, 1, 1, 1}).TryImport("conv_ok.onnx").ok());
  // 4 weight channels * 2^61 overflows int64: a channel mismatch, not a wrapped product.
  const int64_t huge_group = int64_t{1} << 61;
  CHECK_THAT(ProtoImportError(ConvModel(huge_group, {1, 1, 1, 1}), "conv_huge_group.onnx"),
             Contains("input has 8 channels but weight expects 4 x group 2305843009213693952"));
  // 4 + pad_begin + pad_end with pads of 2^62 each overflows int64.
  const int64_t huge_pad = int64_t{1} << 62;
  CHECK_THAT(ProtoImportError(ConvModel(2, {huge_pad, huge_pad, huge_pad, huge_pad}),
                              "conv_huge_pads.onnx"),
             Contains("overflow"));
}

}  // namespace
}  // namespace memplan
