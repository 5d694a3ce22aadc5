// Nodes with fewer inputs than their op reads (a fuzz_import finding, session 23): the builder
// checks arity against libonnx's schema at the model's opset, so a model whose opset libonnx
// cannot look up must be refused, and an op libonnx does not know must fail its shape rule with
// one line naming the node, never an escaped std::out_of_range.

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "graph/onnx_import.h"
#include "graph/ops/op_schema.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using onnx::TensorProto;
using testing::ProtoModel;

// x[batch,4] -> Unsqueeze() -> y: an Unsqueeze with no data input.
ProtoModel InputlessUnsqueeze(int64_t opset) {
  ProtoModel m(opset);
  m.Input("x", TensorProto::FLOAT, {std::string("batch"), int64_t{4}});
  m.Node("Unsqueeze", {}, {"y"});
  m.Output("y", TensorProto::FLOAT,
           std::vector<testing::ProtoDim>{std::string("batch"), int64_t{4}});
  return m;
}

TEST_CASE("an opset version below 1 is refused", "[import][bad-input]") {
  // At opset 0 libonnx has no schema for any op, so no arity check could run: the fuzzer's
  // reproducer reached the Unsqueeze shape rule, which read input 0 of an input-less node.
  CHECK(InputlessUnsqueeze(0).ImportError("opset0.onnx") ==
        "the model imports ai.onnx opset 0; operator set versions start at 1");
  CHECK(InputlessUnsqueeze(-3).ImportError("opset_negative.onnx") ==
        "the model imports ai.onnx opset -3; operator set versions start at 1");
}

TEST_CASE("a node with fewer inputs than its op reads is named", "[import][bad-input]") {
  SECTION("an op libonnx knows at the model's opset: the builder's arity check") {
    // Unsqueeze-13 takes data and axes (both required).
    CHECK(InputlessUnsqueeze(13).ImportError("unsqueeze13.onnx") ==
          "node 'y_node' (Unsqueeze): has 0 inputs and 1 outputs; ONNX needs at least 2 and 1");
  }
  SECTION("a rule that checks its required inputs says which one") {
    ProtoModel m(/*opset=*/17);
    m.Opset("com.microsoft", 1);
    m.Input("x", TensorProto::FLOAT, {std::string("batch"), int64_t{4}});
    m.Node("BiasGelu", {}, {"y"}, "com.microsoft");
    m.Output("y", TensorProto::FLOAT,
             std::vector<testing::ProtoDim>{std::string("batch"), int64_t{4}});
    CHECK(m.ImportError("bias_gelu.onnx") ==
          "node 'y_node' (BiasGelu): required input 0 is missing");
  }
}

// x[batch,4,8] -> op(x, then `extra` more copies of x) -> y, at ai.onnx opset 23 with
// com.microsoft 1 (libonnx 1.12 knows neither RotaryEmbedding-23 nor any contrib op).
ProtoModel ShortNode(const std::string& op_type, const std::string& domain, int extra) {
  ProtoModel m(/*opset=*/23);
  m.Opset("com.microsoft", 1);
  const std::vector<testing::ProtoDim> dims = {std::string("batch"), int64_t{4}, int64_t{8}};
  m.Input("x", TensorProto::FLOAT, dims);
  m.Node(op_type, std::vector<std::string>(static_cast<size_t>(1 + extra), "x"), {"y"}, domain);
  m.Output("y", TensorProto::FLOAT, dims);
  return m;
}

TEST_CASE("ops libonnx lacks state their fewest inputs in the registry", "[import][bad-input]") {
  // The specs' required inputs: ai.onnx RotaryEmbedding-23 (X, cos_cache, sin_cache);
  // com.microsoft RotaryEmbedding (input, position_ids, cos_cache, sin_cache);
  // SkipLayerNormalization (input, skip, gamma); RMSNormalization-23 (X, scale); Attention-23
  // (Q, K, V); GroupQueryAttention (query, key?, value?, past_key?, past_value?, seqlens_k,
  // total_sequence_length). Each with one input fewer is refused, naming the node.
  struct Case {
    const char* op;
    const char* domain;
    int needs;
  };
  for (const Case& c : {Case{"RotaryEmbedding", "", 3}, Case{"RotaryEmbedding", "com.microsoft", 4},
                        Case{"SkipLayerNormalization", "com.microsoft", 3},
                        Case{"SkipSimplifiedLayerNormalization", "com.microsoft", 3},
                        Case{"RMSNormalization", "", 2}, Case{"Attention", "", 3},
                        Case{"GroupQueryAttention", "com.microsoft", 7}}) {
    INFO(c.op << " " << c.domain);
    CHECK(ShortNode(c.op, c.domain, c.needs - 2).ImportError("short.onnx") ==
          std::string("node 'y_node' (") + c.op + "): has " + std::to_string(c.needs - 1) +
              " inputs; the op needs at least " + std::to_string(c.needs));
  }
}

TEST_CASE("a rule's read past a node's inputs throws instead of reading past the vector",
          "[import][bad-input]") {
  // Rules index inputs by ONNX position; ops libonnx does not know reach them unchecked, and
  // shape propagation turns the exception into an error naming the node.
  TensorInfoList inputs(1);
  CHECK_NOTHROW(inputs[0]);
  CHECK_THROWS_AS(inputs[1], std::out_of_range);
  const TensorInfoList& read_only = inputs;
  CHECK_THROWS_AS(read_only[7], std::out_of_range);
}

}  // namespace
}  // namespace memplan
