#pragma once
// Hand-built micro-graphs for the training-program, simulator and allocator tests.

#include <string>
#include <vector>

#include "graph/graph.h"
#include "tests/graph/hand_built_graph.h"

namespace memplan::testing {

class TestGraph {
 public:
  TestGraph() {
    batch = graph.symbols().Intern("batch");
    graph.set_batch_symbol(batch);
  }

  Dim B() const { return Dim::Symbol(batch); }

  ValueId Input(const std::string& name, std::vector<Dim> dims, DType dtype = DType::kFloat32) {
    ValueId id = Add(name, std::move(dims), dtype, ValueKind::kInput);
    graph.MarkInput(id);
    return id;
  }
  ValueId Param(const std::string& name, std::vector<Dim> dims, DType dtype = DType::kFloat32) {
    return Add(name, std::move(dims), dtype, ValueKind::kParameter);
  }
  ValueId Constant(const std::string& name, std::vector<Dim> dims, DType dtype = DType::kInt64) {
    return Add(name, std::move(dims), dtype, ValueKind::kConstant);
  }
  // One node `name` of `op_type` reading `inputs` and writing one value `out`.
  ValueId Op(const std::string& op_type, const std::string& name, std::vector<ValueId> inputs,
             const std::string& out, std::vector<Dim> dims, DType dtype = DType::kFloat32) {
    ValueId o = Add(out, std::move(dims), dtype, ValueKind::kIntermediate);
    NewNode(graph, name, op_type, std::move(inputs), {o});
    return o;
  }
  void Output(ValueId v) { graph.MarkOutput(v); }
  NodeId NodeNamed(const std::string& name) const { return *graph.FindNode(name); }

  Bindings Bind(int64_t b) const {
    Bindings bindings(&graph.symbols());
    bindings.Bind(batch, b);
    return bindings;
  }

  Graph graph;
  SymbolId batch = 0;

 private:
  ValueId Add(const std::string& name, std::vector<Dim> dims, DType dtype, ValueKind kind) {
    return NewValue(graph, name, Shape{std::move(dims)}, kind, dtype);
  }
};

// x[batch,in] -> MatMul(W[in,out]) -> y, the output: in * out parameters and nothing else.
inline TestGraph Linear(int64_t in, int64_t out) {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), in});
  ValueId w = t.Param("W", {in, out});
  t.Output(t.Op("MatMul", "mm", {x, w}, "y", {t.B(), out}));
  return t;
}

// x[batch,4] -> MatMul(W[4,3]) -> y -> Relu -> r, the output: the smallest graph with a
// parameter, a saved operand and a saved output, shared by the program, simulator and executor
// tests whose hand-derived byte counts start from it.
inline TestGraph LinearRelu() {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 4});
  ValueId w = t.Param("W", {4, 3});
  ValueId y = t.Op("MatMul", "mm", {x, w}, "y", {t.B(), 3});
  t.Output(t.Op("Relu", "relu", {y}, "r", {t.B(), 3}));
  return t;
}

// x[batch,in] -> MatMul(W1[in,hidden]) -> h -> Relu -> r -> MatMul(W2[hidden,out]) -> y, the
// output; the nodes are mm1, relu and mm2. in * hidden + hidden * out parameters, named `w1_name`
// and `w2_name` (the fine-tuning tests select them by torch's names).
inline TestGraph TwoLayerMlp(int64_t in, int64_t hidden, int64_t out,
                             const std::string& w1_name = "W1", const std::string& w2_name = "W2") {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), in});
  ValueId w1 = t.Param(w1_name, {in, hidden});
  ValueId w2 = t.Param(w2_name, {hidden, out});
  ValueId h = t.Op("MatMul", "mm1", {x, w1}, "h", {t.B(), hidden});
  ValueId r = t.Op("Relu", "relu", {h}, "r", {t.B(), hidden});
  t.Output(t.Op("MatMul", "mm2", {r, w2}, "y", {t.B(), out}));
  return t;
}

// The MLP whose model states the offload and data-parallel tests count by hand (ZeRO's Psi):
// x[batch,64] -> MatMul(W1[64,128]) -> Relu -> MatMul(W2[128,32]) -> y.
// Psi = 64*128 + 128*32 = 8192 + 4096 = 12288 parameters; the largest layer is W1 (8192).
inline TestGraph TwoLayerMlp() { return TwoLayerMlp(64, 128, 32); }
inline constexpr int64_t kPsi = 12288;

// The start the precision tests share: an fp16-safe MatMul feeding an fp32-required Softmax.
//   x [batch,4] fp32 input, W1 and W2 [4,4] parameters
//   mm1 = MatMul(x, W1) -> y [batch,4]
//   sm  = Softmax(y)    -> s [batch,4]
// The caller goes on from `s` (with W2, declared but not yet read) and marks the output.
struct MatMulSoftmax {
  TestGraph t;
  ValueId s;
  ValueId w2;
};
inline MatMulSoftmax MatMulThenSoftmax() {
  MatMulSoftmax m;
  TestGraph& t = m.t;
  ValueId x = t.Input("x", {t.B(), 4});
  ValueId w1 = t.Param("W1", {4, 4});
  m.w2 = t.Param("W2", {4, 4});
  ValueId y = t.Op("MatMul", "mm1", {x, w1}, "y", {t.B(), 4});
  m.s = t.Op("Softmax", "sm", {y}, "s", {t.B(), 4});
  return m;
}

}  // namespace memplan::testing
