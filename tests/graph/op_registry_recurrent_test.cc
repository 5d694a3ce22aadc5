// LSTM / GRU / RNN (graph/ops/recurrent_ops.cc): shapes for both layouts and directions, FLOPs,
// what cuDNN keeps for backward (input, initial states, output sequence, reserve space), and the
// parameter count of an imported layer against PyTorch's nn.LSTM.

#include <catch2/catch.hpp>

#include "graph/ops/op_registry.h"
#include "import_test_util.h"
#include "op_registry_test_helpers.h"
#include "proto_model.h"

namespace memplan {
namespace {

using namespace memplan::testing;
using Catch::Matchers::Contains;

TEST_CASE("LSTM: sequence-first shapes, cost and what cuDNN keeps", "[registry][recurrent]") {
  // nn.LSTM(10, 20) on T=5, batch=3: W [1, 4*20, 10], R [1, 80, 20], B [1, 2*80].
  OpCase lstm("LSTM", {F32({5, 3, 10}), Param({1, 80, 10}), Param({1, 80, 20}), Param({1, 160})},
              /*num_outputs=*/3);
  lstm.Attr("hidden_size", int64_t{20});
  CHECK(lstm.OutputShape(0) == Dims({5, 1, 3, 20}));  // [T, D, batch, H]
  CHECK(lstm.OutputShape(1) == Dims({1, 3, 20}));     // Y_h [D, batch, H]
  CHECK(lstm.OutputShape(2) == Dims({1, 3, 20}));     // Y_c

  auto saved = lstm.Saved();
  // X, the weights W and R (parameters: the gradients of X and h are products with them; they
  // cost no saved bytes), Y and the reserve.
  CHECK(Describe(saved) ==
        std::vector<std::string>{"in0", "in1", "in2", "out0", "extra:reserve_space"});
  // Reserve: 6 hidden-sized tensors per step (4 gates, c_t, h_{t-1}) = T*batch*D*6H =
  // 5*3*1*120 = 1800 floats = 7200 bytes.
  const SavedTensor& reserve = Extra(saved, "reserve_space");
  CHECK(reserve.dtype == DType::kFloat32);
  CHECK(Eval(reserve.shape.NumElements()) == 1800);

  // Gate elements per forward: T*D*batch*4H = 5*1*3*80 = 1200. Projections 2*1200*(10 + 20) =
  // 72000, activations 4*1200 = 4800: 76800 FLOPs.
  CHECK(Eval(lstm.Cost().flops) == 76800);
  CHECK(lstm.schema().amp == AmpCategory::kFp16Safe);
  CHECK_FALSE(lstm.schema().saved_source.empty());
  CHECK_FALSE(lstm.schema().amp_source.empty());
}

TEST_CASE("GRU: batch-first, bidirectional, hidden size from R", "[registry][recurrent]") {
  // nn.GRU(8, 16, bidirectional=True, batch_first=True) on batch 2, T=7; no hidden_size
  // attribute: H = R's last dim. Inputs X, W, R, B (absent), sequence_lens (absent), initial_h.
  OpCase gru(
      "GRU",
      {F32({2, 7, 8}), Param({2, 48, 8}), Param({2, 48, 16}), Absent(), Absent(), F32({2, 2, 16})},
      /*num_outputs=*/2);
  gru.Attr("layout", int64_t{1}).Attr("direction", std::string("bidirectional"));
  CHECK(gru.OutputShape(0) == Dims({2, 7, 2, 16}));  // [batch, T, D, H]
  CHECK(gru.OutputShape(1) == Dims({2, 2, 16}));     // Y_h [batch, D, H]
  auto saved = gru.Saved();
  CHECK(Describe(saved) ==
        std::vector<std::string>{"in0", "in1", "in2", "in5", "out0", "extra:reserve_space"});
  // 6H per step (workspace r, z, n, hidden n-gate, h_{t-1}: 5H; linear_hh's h_{t-1}: H):
  // T*batch*D*6H = 7*2*2*96 = 2688 floats (10752 bytes).
  CHECK(Eval(Extra(saved, "reserve_space").shape.NumElements()) == 2688);
  // Gate elements 7*2*2*48 = 1344: 2*1344*(8 + 16) + 4*1344 = 64512 + 5376 = 69888 FLOPs.
  CHECK(Eval(gru.Cost().flops) == 69888);
}

TEST_CASE("RNN: an unused Y is still kept by cuDNN", "[registry][recurrent]") {
  // nn.RNN(3, 5) on T=4, batch 2, where the graph reads only Y_h.
  OpCase rnn("RNN", {F32({4, 2, 3}), Param({1, 5, 3}), Param({1, 5, 5})}, /*num_outputs=*/2);
  rnn.Attr("hidden_size", int64_t{5}).OmitOutput(0);
  CHECK(rnn.OutputShape(1) == Dims({1, 2, 5}));
  auto saved = rnn.Saved();
  CHECK(Describe(saved) == std::vector<std::string>{"in0", "in1", "in2", "extra:output_sequence",
                                                    "extra:reserve_space"});
  // Output sequence [T, batch, D*H] = 4*2*5 = 40 floats; reserve 1H per step = 4*2*1*5 = 40.
  CHECK(Eval(Extra(saved, "output_sequence").shape.NumElements()) == 40);
  CHECK(Eval(Extra(saved, "reserve_space").shape.NumElements()) == 40);
}

TEST_CASE("recurrent ops: a layer nothing trains saves nothing", "[registry][recurrent]") {
  // Frozen weights and a graph input: autograd records no node.
  OpCase frozen("LSTM", {F32({5, 3, 10}, ValueKind::kInput), F32({1, 80, 10}, ValueKind::kConstant),
                         F32({1, 80, 20}, ValueKind::kConstant)});
  frozen.Attr("hidden_size", int64_t{20});
  CHECK(frozen.Saved().empty());
}

TEST_CASE("recurrent ops: attributes the spec rejects name the node", "[registry][recurrent]") {
  SECTION("unknown direction") {
    OpCase bad("LSTM", {F32({5, 3, 10}), Param({1, 80, 10}), Param({1, 80, 20})});
    bad.Attr("direction", std::string("sideways"));
    CHECK_THAT(bad.InferError(), Contains("node 'n' (LSTM)") && Contains("sideways"));
  }
  SECTION("two directions of weights for a forward layer") {
    OpCase bad("GRU", {F32({5, 3, 8}), Param({2, 48, 8}), Param({2, 48, 16})});
    CHECK_THAT(bad.InferError(), Contains("1 direction(s)"));
  }
  SECTION("layout 2") {
    OpCase bad("RNN", {F32({4, 2, 3}), Param({1, 5, 3}), Param({1, 5, 5})});
    bad.Attr("layout", int64_t{2});
    CHECK_FALSE(bad.Infer().ok());
  }
}

TEST_CASE("an imported LSTM layer counts nn.LSTM's parameters", "[import][recurrent]") {
  // torch.onnx.export of nn.LSTM(10, 20) writes W [1, 80, 10], R [1, 80, 20], B [1, 160].
  ProtoModel m(/*opset=*/14);
  m.Input("x", onnx::TensorProto::FLOAT, {int64_t{5}, std::string("batch"), int64_t{10}});
  m.Initializer("W", onnx::TensorProto::FLOAT, {1, 80, 10});
  m.Initializer("R", onnx::TensorProto::FLOAT, {1, 80, 20});
  m.Initializer("B", onnx::TensorProto::FLOAT, {1, 160});
  SetInt(m.Node("LSTM", {"x", "W", "R", "B"}, {"y", "y_h", "y_c"}), "hidden_size", 20);
  m.Output("y", onnx::TensorProto::FLOAT,
           {{int64_t{5}, int64_t{1}, std::string("batch"), int64_t{20}}});
  Graph graph = m.Import("lstm_layer.onnx");
  // PyTorch: 4*H*(I + H) + 2*4*H = 4*20*30 + 160 = 2400 + 160 = 2560 (weight_ih_l0 800,
  // weight_hh_l0 1600, bias_ih_l0 80, bias_hh_l0 80).
  CHECK(ParameterCount(graph) == 2560);
  CHECK(ShapeOf(graph, "y") == "[5, 1, batch, 20]");
  CHECK(ShapeOf(graph, "y_c") == "[1, batch, 20]");
}

}  // namespace
}  // namespace memplan
