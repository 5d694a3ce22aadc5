// Shape-op rules on hand-built micro-graphs: each expected shape/contents is derived in a comment.

#include <catch2/catch.hpp>

#include "graph/data_dependent_counts.h"
#include "graph/graph.h"
#include "graph/ops/op_registry.h"
#include "tests/graph/hand_built_graph.h"

namespace memplan {
namespace {

// A tiny graph builder: values with shape/contents, and one node under test.
struct Micro {
  Graph g;
  SymbolId batch = g.symbols().Intern("batch");
  SymbolId seq = g.symbols().Intern("seq");

  ValueId Tensor(const std::string& name, DType dtype, std::vector<Dim> dims,
                 ValueKind kind = ValueKind::kIntermediate) {
    return testing::NewValue(g, name, Shape{std::move(dims)}, kind, dtype);
  }
  ValueId Ints(const std::string& name, std::vector<Dim> values) {
    ValueId id = Tensor(name, DType::kInt64, {Dim(static_cast<int64_t>(values.size()))},
                        ValueKind::kConstant);
    g.mutable_value(id).contents = std::move(values);
    return id;
  }
  ValueId Scalar(const std::string& name, Dim value) {
    ValueId id = Tensor(name, DType::kInt64, {}, ValueKind::kConstant);
    g.mutable_value(id).contents = std::vector<Dim>{value};
    return id;
  }
  std::vector<TensorInfo> Run(const std::string& op, std::vector<ValueId> inputs,
                              Attributes attrs = {}, size_t outputs = 1) {
    std::vector<ValueId> outs;
    for (size_t i = 0; i < outputs; ++i)
      outs.push_back(Tensor(op + "_out" + std::to_string(i), DType::kUndefined, {}));
    NodeId id = testing::NewNode(g, op + "_under_test", op, std::move(inputs), std::move(outs),
                                 std::move(attrs));
    const OpSchema* schema = OpRegistry::Get().Find(op);
    REQUIRE(schema != nullptr);
    auto result = schema->infer_shapes(MakeOpContext(g, id, &g.symbols()));
    if (!result.ok()) FAIL(result.error().message);
    return *result;
  }
  std::string Text(const TensorInfo& t) const { return t.shape.ToString(g.symbols()); }
  std::string Text(const std::vector<Dim>& dims) const { return Shape{dims}.ToString(g.symbols()); }
  Dim B() const { return Dim::Symbol(batch); }
  Dim S() const { return Dim::Symbol(seq); }
};

Attributes Attr(const std::string& name, AttributeValue value) {
  Attributes a;
  a.Set(name, std::move(value));
  return a;
}

TEST_CASE("Shape exposes symbolic dims as contents, with start/end", "[folding]") {
  Micro m;
  ValueId x = m.Tensor("x", DType::kFloat32, {m.B(), m.S(), 768});
  auto all = m.Run("Shape", {x});
  CHECK(all[0].dtype == DType::kInt64);
  CHECK(m.Text(all[0]) == "[3]");
  REQUIRE(all[0].contents);
  CHECK(m.Text(*all[0].contents) == "[batch, seq, 768]");
  Attributes a;
  a.Set("start", int64_t{-2});
  auto tail = m.Run("Shape", {x}, a);
  CHECK(m.Text(*tail[0].contents) == "[seq, 768]");
}

TEST_CASE("Reshape resolves 0 and -1 in terms of the symbols", "[folding]") {
  Micro m;
  ValueId x = m.Tensor("x", DType::kFloat32, {m.B(), m.S(), 768});
  // [0, 0, 12, -1]: 0 copies batch and seq; -1 = batch*seq*768 / (batch*seq*12) = 64.
  auto heads = m.Run("Reshape", {x, m.Ints("t1", {0, 0, 12, -1})});
  CHECK(m.Text(heads[0]) == "[batch, seq, 12, 64]");
  // [-1, 768]: batch*seq*768 / 768 = batch*seq.
  auto flat = m.Run("Reshape", {x, m.Ints("t2", {-1, 768})});
  CHECK(m.Text(flat[0]) == "[batch*seq, 768]");
  // [-1, 7]: 768*batch*seq is not divisible by 7 as a polynomial -> a fresh symbol.
  auto odd = m.Run("Reshape", {x, m.Ints("t3", {-1, 7})});
  REQUIRE(odd[0].shape.rank() == 2);
  CHECK(odd[0].shape.dims[0].IsSingleSymbol());
  CHECK(odd[0].shape.dims[1] == Dim(7));
  // allowzero=1: a 0 is a real zero-sized dim.
  ValueId e = m.Tensor("e", DType::kFloat32, {0, 4});
  auto zero = m.Run("Reshape", {e, m.Ints("t4", {4, 0})}, Attr("allowzero", int64_t{1}));
  CHECK(m.Text(zero[0]) == "[4, 0]");
}

TEST_CASE("Reshape rejects an element-count mismatch", "[folding]") {
  Micro m;
  ValueId x = m.Tensor("x", DType::kFloat32, {3, 4});
  ValueId target = m.Ints("t", {5});
  NodeId id = testing::NewNode(m.g, "bad_reshape", "Reshape", {x, target},
                               {m.Tensor("y", DType::kUndefined, {})});
  auto r = OpRegistry::Get().Find("Reshape")->infer_shapes(MakeOpContext(m.g, id, &m.g.symbols()));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "node 'bad_reshape' (Reshape): cannot reshape [3, 4] (12 elements) to [5]");
}

TEST_CASE("Gather picks symbols out of a shape, Unsqueeze and Concat build a target", "[folding]") {
  Micro m;
  ValueId shape = m.Ints("shape", {m.B(), m.S(), 768});
  auto batch = m.Run("Gather", {shape, m.Scalar("i0", 0)}, Attr("axis", int64_t{0}));
  CHECK(m.Text(batch[0]) == "[]");  // a scalar index gives a scalar
  REQUIRE(batch[0].contents);
  CHECK(m.Text(*batch[0].contents) == "[batch]");
  auto last = m.Run("Gather", {shape, m.Scalar("im1", -1)});
  CHECK(m.Text(*last[0].contents) == "[768]");

  ValueId b = m.Scalar("b", m.B());
  ValueId s = m.Scalar("s", m.S());
  ValueId axes = m.Ints("axes", {0});
  auto b1 = m.Run("Unsqueeze", {b, axes});
  CHECK(m.Text(b1[0]) == "[1]");
  ValueId b1v = m.Ints("b1", *b1[0].contents);
  ValueId s1v = m.Ints("s1", {m.S()});
  auto target = m.Run("Concat", {b1v, s1v, m.Ints("rest", {12, 64})}, Attr("axis", int64_t{0}));
  CHECK(m.Text(target[0]) == "[4]");
  CHECK(m.Text(*target[0].contents) == "[batch, seq, 12, 64]");
  (void)s;
}

TEST_CASE("Unsqueeze and Squeeze take axes as attribute (old opsets) or input", "[folding]") {
  Micro m;
  ValueId x = m.Tensor("x", DType::kFloat32, {m.B(), 1, m.S()});
  CHECK(m.Text(m.Run("Squeeze", {x}, Attr("axes", std::vector<int64_t>{1}))[0]) == "[batch, seq]");
  CHECK(m.Text(m.Run("Squeeze", {x, m.Ints("ax", {-2})})[0]) == "[batch, seq]");
  // No axes: only dims known to be 1 go; symbols stay.
  CHECK(m.Text(m.Run("Squeeze", {x})[0]) == "[batch, seq]");
  // Output rank 5; axes 0 and -1 (= 4) become 1s.
  CHECK(m.Text(m.Run("Unsqueeze", {x}, Attr("axes", std::vector<int64_t>{0, -1}))[0]) ==
        "[1, batch, 1, seq, 1]");
}

TEST_CASE("Slice with symbolic ends, negative starts and steps", "[folding]") {
  Micro m;
  // The causal mask buffer [1, 1, 32, 32] sliced to [:, :, :T, :T] with T = seq.
  ValueId mask = m.Tensor("mask", DType::kFloat32, {1, 1, 32, 32});
  auto sliced = m.Run("Slice", {mask, m.Ints("st", {0, 0}), m.Ints("en", {m.S(), m.S()}),
                                m.Ints("ax", {2, 3}), m.Ints("sp", {1, 1})});
  CHECK(m.Text(sliced[0]) == "[1, 1, seq, seq]");
  // x[:, -1]: start -1 .. INT64_MAX on [batch, seq, 64] axis 1 -> seq - (seq - 1) = 1.
  ValueId x = m.Tensor("x", DType::kFloat32, {m.B(), m.S(), 64});
  auto last = m.Run("Slice", {x, m.Ints("s2", {-1}), m.Ints("e2", {INT64_MAX}), m.Ints("a2", {1})});
  CHECK(m.Text(last[0]) == "[batch, 1, 64]");
  // x[:, :, ::2] on 64: ceil(64 / 2) = 32; x[:, :, 10:3:-3] on 64: indices 10, 7, 4 -> 3.
  auto even = m.Run("Slice", {x, m.Ints("s3", {0}), m.Ints("e3", {INT64_MAX}), m.Ints("a3", {2}),
                              m.Ints("p3", {2})});
  CHECK(m.Text(even[0]) == "[batch, seq, 32]");
  auto back = m.Run(
      "Slice", {x, m.Ints("s4", {10}), m.Ints("e4", {3}), m.Ints("a4", {-1}), m.Ints("p4", {-3})});
  CHECK(m.Text(back[0]) == "[batch, seq, 3]");
  // Opset < 10 attribute form, and contents of a sliced shape vector: [batch, seq, 768][1:] .
  Attributes a;
  a.Set("starts", std::vector<int64_t>{1});
  a.Set("ends", std::vector<int64_t>{1000});
  auto tail = m.Run("Slice", {m.Ints("shape", {m.B(), m.S(), 768})}, a);
  CHECK(m.Text(tail[0]) == "[2]");
  REQUIRE(tail[0].contents);
  CHECK(m.Text(*tail[0].contents) == "[seq, 768]");
}

TEST_CASE("F.pad's pads table folds through a rank-2 Slice and Transpose", "[folding]") {
  Micro m;
  // torch.onnx writes F.pad(x, (0, 0, 0, r, 0, b)) at opset >= 11 as: the 6 pads (each dim's
  // (begin, end), last dim first) Reshape'd to [3, 2], flipped on axis 0 by Slice(-1, -INT64_MAX,
  // step -1), Transpose'd to [2, 3], Reshape'd to [6]: ONNX's begins-then-ends order, first dim
  // first. Pads (0, 0, 0, r, 0, b) with r = seq, b = 3:
  //   [3, 2] table  [[0, 0], [0, seq], [0, 3]]
  //   flipped       [[0, 3], [0, seq], [0, 0]]
  //   transposed    [[0, 0, 0], [3, seq, 0]]  ->  [0, 0, 0, 3, seq, 0]
  ValueId table = m.Tensor("table", DType::kInt64, {3, 2});
  m.g.mutable_value(table).contents = std::vector<Dim>{0, 0, 0, m.S(), 0, 3};
  auto flipped = m.Run("Slice", {table, m.Ints("st", {-1}), m.Ints("en", {-INT64_MAX}),
                                 m.Ints("ax", {0}), m.Ints("sp", {-1})});
  CHECK(m.Text(flipped[0]) == "[3, 2]");
  REQUIRE(flipped[0].contents);
  CHECK(m.Text(*flipped[0].contents) == "[0, 3, 0, seq, 0, 0]");
  ValueId f = m.Tensor("flipped", DType::kInt64, {3, 2});
  m.g.mutable_value(f).contents = flipped[0].contents;
  auto transposed = m.Run("Transpose", {f}, Attr("perm", std::vector<int64_t>{1, 0}));
  CHECK(m.Text(transposed[0]) == "[2, 3]");
  REQUIRE(transposed[0].contents);
  CHECK(m.Text(*transposed[0].contents) == "[0, 0, 0, 3, seq, 0]");
  // A rank-2 slice of rows and columns: [[0, 3], [0, seq], [0, 0]][1:, 1:] = [seq, 0].
  auto corner =
      m.Run("Slice", {f, m.Ints("s2", {1, 1}), m.Ints("e2", {3, 2}), m.Ints("a2", {0, 1})});
  REQUIRE(corner[0].contents);
  CHECK(m.Text(*corner[0].contents) == "[seq, 0]");
}

TEST_CASE("Split into equal symbolic parts and by sizes", "[folding]") {
  Micro m;
  // qkv [batch, seq, 192] split in 3 on axis 2 (no sizes): 192 / 3 = 64 each.
  ValueId qkv = m.Tensor("qkv", DType::kFloat32, {m.B(), m.S(), 192});
  auto parts = m.Run("Split", {qkv}, Attr("axis", int64_t{2}), 3);
  REQUIRE(parts.size() == 3);
  for (const auto& p : parts) CHECK(m.Text(p) == "[batch, seq, 64]");
  // By a sizes input [64, 128].
  auto two = m.Run("Split", {qkv, m.Ints("sizes", {64, 128})}, Attr("axis", int64_t{-1}), 2);
  CHECK(m.Text(two[1]) == "[batch, seq, 128]");
  // A symbolic axis split in 2: 2*seq / 2 = seq.
  ValueId y = m.Tensor("y", DType::kFloat32, {m.B(), Dim(2) * m.S()});
  auto halves = m.Run("Split", {y}, Attr("axis", int64_t{1}), 2);
  CHECK(m.Text(halves[0]) == "[batch, seq]");
}

TEST_CASE("Equal and Where fold PyTorch's expand(-1) pattern", "[folding]") {
  Micro m;
  // shape = [batch, -1, 64]; Where(Equal(shape, -1), ones, shape) -> [batch, 1, 64].
  ValueId shape = m.Ints("shape", {m.B(), -1, 64});
  auto eq = m.Run("Equal", {shape, m.Scalar("minus1", -1)});
  CHECK(eq[0].dtype == DType::kBool);
  REQUIRE(eq[0].contents);
  CHECK(m.Text(*eq[0].contents) == "[0, 1, 0]");  // batch is positive, so never -1
  ValueId cond = m.Tensor("cond", DType::kBool, {3}, ValueKind::kConstant);
  m.g.mutable_value(cond).contents = eq[0].contents;
  auto where = m.Run("Where", {cond, m.Ints("ones", {1, 1, 1}), shape});
  REQUIRE(where[0].contents);
  CHECK(m.Text(*where[0].contents) == "[batch, 1, 64]");
  // Expand [1, 1, 64] by it -> [batch, 1, 64].
  ValueId bias = m.Tensor("bias", DType::kFloat32, {1, 1, 64});
  ValueId target = m.Ints("target", *where[0].contents);
  CHECK(m.Text(m.Run("Expand", {bias, target})[0]) == "[batch, 1, 64]");
  // Undecidable comparisons keep no contents: seq < 128 is unknown; seq < seq + 1 is true.
  auto less = m.Run("Less", {m.Scalar("s", m.S()), m.Scalar("c128", 128)});
  CHECK_FALSE(less[0].contents);
  auto less2 = m.Run("Less", {m.Scalar("s2", m.S()), m.Scalar("s1", m.S() + Dim(1))});
  REQUIRE(less2[0].contents);
  CHECK(m.Text(*less2[0].contents) == "[1]");
  auto no = m.Run("Not", {m.Ints("bits", {0, 1})});
  CHECK(m.Text(*no[0].contents) == "[1, 0]");
}

TEST_CASE("arithmetic on contents broadcasts as the shapes do", "[folding]") {
  Micro m;
  // T5's relative positions: [1, 4] - [4, 1] is [4, 4], 16 elements; pairing the four of each
  // side one to one would give 4 values for 16 places, so nothing is folded.
  ValueId row = m.Tensor("row", DType::kInt64, {1, 4}, ValueKind::kConstant);
  m.g.mutable_value(row).contents = std::vector<Dim>{0, 1, 2, 3};
  ValueId column = m.Tensor("column", DType::kInt64, {4, 1}, ValueKind::kConstant);
  m.g.mutable_value(column).contents = std::vector<Dim>{0, 1, 2, 3};
  auto offsets = m.Run("Sub", {row, column});
  CHECK(m.Text(offsets[0]) == "[4, 4]");
  CHECK_FALSE(offsets[0].contents);
  ValueId divisors = m.Tensor("divisors", DType::kInt64, {4, 1}, ValueKind::kConstant);
  m.g.mutable_value(divisors).contents = std::vector<Dim>{1, 2, 3, 4};
  CHECK_FALSE(m.Run("Mod", {row, divisors})[0].contents);
  // Same shapes pair one to one: [0, 1, 2, 3] - [0, 1, 2, 3].
  auto same = m.Run("Sub", {m.Ints("a", {0, 1, 2, 3}), m.Ints("b", {0, 1, 2, 3})});
  REQUIRE(same[0].contents);
  CHECK(m.Text(*same[0].contents) == "[0, 0, 0, 0]");
}

TEST_CASE("a Div or Mod of a symbol is a new symbol per element", "[folding]") {
  Micro m;
  // seq // 4 and seq % 4 are no polynomials in seq: each element is a generated symbol, which
  // binding seq determines (tests/graph/determined_symbols_test.cc).
  auto groups = m.Run("Div", {m.Ints("n", {m.S()}), m.Ints("w", {4})});
  REQUIRE(groups[0].contents);
  REQUIRE(groups[0].contents->size() == 1);
  CHECK(m.Text(*groups[0].contents).rfind("[div_", 0) == 0);
  auto rest = m.Run("Mod", {m.Ints("n2", {m.S()}), m.Ints("w2", {4})});
  REQUIRE(rest[0].contents);
  CHECK(m.Text(*rest[0].contents).rfind("[mod_", 0) == 0);
  // Exact divisions and constants stay exact: (4 * seq) // 4 = seq, 12 // 4 = 3, 12 % 5 = 2.
  CHECK(m.Text(*m.Run("Div", {m.Ints("n4", {Dim(4) * m.S()}), m.Ints("w4", {4})})[0].contents) ==
        "[seq]");
  CHECK(m.Text(*m.Run("Div", {m.Ints("c12", {12}), m.Ints("w5", {4})})[0].contents) == "[3]");
  CHECK(m.Text(*m.Run("Mod", {m.Ints("d12", {12}), m.Ints("w6", {5})})[0].contents) == "[2]");
}

TEST_CASE("a power of float constants cast to int64 folds: int(16 ** 0.5)", "[folding]") {
  Micro m;
  // DINOv2's interpolate_pos_encoding: sqrt of the 16 patch positions, 16.0 ** 0.5 = 4.0, cast
  // to int64 = 4 (truncation, as ONNX Cast and Python int() do: 10.0 ** 0.5 = 3.16 -> 3).
  auto scalar = [&](const std::string& name, double value) {
    ValueId id = m.Tensor(name, DType::kFloat32, {}, ValueKind::kConstant);
    m.g.mutable_value(id).float_values = std::vector<double>{value};
    return id;
  };
  auto root = m.Run("Pow", {scalar("positions", 16.0), scalar("half", 0.5)});
  REQUIRE(root[0].float_values);
  CHECK(root[0].float_values->front() == 4.0);
  ValueId four = m.Tensor("root", DType::kFloat32, {}, ValueKind::kConstant);
  m.g.mutable_value(four).float_values = root[0].float_values;
  auto as_int = m.Run("Cast", {four}, Attr("to", int64_t{7}));  // 7 = INT64
  REQUIRE(as_int[0].contents);
  CHECK(m.Text(*as_int[0].contents) == "[4]");
  ValueId ten = m.Tensor("ten", DType::kFloat32, {}, ValueKind::kConstant);
  m.g.mutable_value(ten).float_values = std::vector<double>{3.1622776601683795};
  CHECK(m.Text(*m.Run("Cast", {ten}, Attr("to", int64_t{7}))[0].contents) == "[3]");
}

TEST_CASE("Python-float shape arithmetic folds: math.ceil(h / p) * p", "[folding]") {
  Micro m;
  // MobileViT's unfold into patches (transformers 5.25, TorchScript export): new_height =
  // int(math.ceil(orig_height / patch_height) * patch_height) with the division already traced to
  // a constant: Mul(Ceil(Constant 2.0), Constant 2.0), then Cast to int64. Here h = 7, p = 2:
  // 7 / 2 = 3.5, ceil 4.0, times 2 = 8.0, cast 8; floor(3.5) = 3.0.
  auto scalar = [&](const std::string& name, double value) {
    ValueId id = m.Tensor(name, DType::kFloat32, {}, ValueKind::kConstant);
    m.g.mutable_value(id).float_values = std::vector<double>{value};
    return id;
  };
  auto known = [&](const std::string& name, const TensorInfo& info) {
    REQUIRE(info.float_values);
    ValueId id = m.Tensor(name, DType::kFloat32, {}, ValueKind::kConstant);
    m.g.mutable_value(id).float_values = info.float_values;
    return id;
  };
  auto ratio = m.Run("Div", {scalar("h", 7.0), scalar("p", 2.0)});
  REQUIRE(ratio[0].float_values);
  CHECK(ratio[0].float_values->front() == 3.5);
  auto up = m.Run("Ceil", {known("ratio", ratio[0])});
  REQUIRE(up[0].float_values);
  CHECK(up[0].float_values->front() == 4.0);
  auto down = m.Run("Floor", {known("ratio_f", ratio[0])});
  REQUIRE(down[0].float_values);
  CHECK(down[0].float_values->front() == 3.0);
  auto height = m.Run("Mul", {known("up", up[0]), scalar("p2", 2.0)});
  REQUIRE(height[0].float_values);
  CHECK(height[0].float_values->front() == 8.0);
  auto as_int = m.Run("Cast", {known("height", height[0])}, Attr("to", int64_t{7}));
  REQUIRE(as_int[0].contents);
  CHECK(m.Text(*as_int[0].contents) == "[8]");
  // A division by a known 0 folds nothing (the shape rule itself refuses integer zeros only).
  CHECK_FALSE(m.Run("Div", {scalar("one", 1.0), scalar("zero", 0.0)})[0].float_values);
  // With a symbolic batch h comes from Shape, Gather, then Cast to float: constant integer
  // contents [7] become the float 7.0; a symbolic element has no value.
  auto h = m.Run("Cast", {m.Ints("h_int", {7})}, Attr("to", int64_t{1}));  // 1 = FLOAT
  REQUIRE(h[0].float_values);
  CHECK(*h[0].float_values == std::vector<double>{7.0});
  CHECK_FALSE(m.Run("Cast", {m.Ints("n_int", {m.S()})}, Attr("to", int64_t{1}))[0].float_values);
}

TEST_CASE("Python-float shape arithmetic folds: timm's same padding", "[folding]") {
  Micro m;
  // timm's get_same_padding (tf_efficientnetv2_b0, transformers-free TorchScript export), the
  // stem's 3x3 stride-2 conv on 32 pixels: max((ceil(32 / 2) - 1) * 2 + (3 - 1) * 1 + 1 - 32, 0)
  // traced as Sub(Ceil 16.0, 1.0), Mul 2.0, Add 2.0, Add 1.0, Sub 32.0, Clip(min 0.0), Div 2.0:
  // (16 - 1) * 2 = 30, + 2 = 32, + 1 = 33, - 32 = 1, clip 1, / 2 = 0.5 (the left pad, cast 0).
  auto scalar = [&](const std::string& name, double value) {
    ValueId id = m.Tensor(name, DType::kFloat32, {}, ValueKind::kConstant);
    m.g.mutable_value(id).float_values = std::vector<double>{value};
    return id;
  };
  auto step = [&](const std::string& op, const std::string& name, ValueId a, ValueId b) {
    auto out = m.Run(op, {a, b});
    REQUIRE(out[0].float_values);
    ValueId id = m.Tensor(name, DType::kFloat32, {}, ValueKind::kConstant);
    m.g.mutable_value(id).float_values = out[0].float_values;
    return id;
  };
  auto value = [&](ValueId id) { return m.g.value(id).float_values->front(); };
  ValueId blocks = step("Sub", "blocks", scalar("ceil", 16.0), scalar("one", 1.0));
  CHECK(value(blocks) == 15.0);
  ValueId span = step("Mul", "span", blocks, scalar("stride", 2.0));
  ValueId kernel = step("Add", "kernel", span, scalar("reach", 2.0));
  ValueId total = step("Add", "total", kernel, scalar("one_more", 1.0));
  CHECK(value(total) == 33.0);
  ValueId pad = step("Sub", "pad", total, scalar("size", 32.0));
  CHECK(value(pad) == 1.0);
  auto clipped = m.Run("Clip", {pad, scalar("zero", 0.0)});
  REQUIRE(clipped[0].float_values);
  CHECK(clipped[0].float_values->front() == 1.0);
  // A pad below zero clips to 0 (a stride-1 conv whose input needs none: 32 - 33 = -1).
  auto negative = m.Run("Clip", {scalar("minus_one", -1.0), scalar("zero_2", 0.0)});
  REQUIRE(negative[0].float_values);
  CHECK(negative[0].float_values->front() == 0.0);
  // An unknown bound folds nothing.
  ValueId unknown = m.Tensor("bound", DType::kFloat32, {}, ValueKind::kConstant);
  CHECK_FALSE(m.Run("Clip", {pad, unknown})[0].float_values);
  // F.pad's symbolic unsqueezes each amount to [1] before its Concat: the value passes through.
  auto listed = m.Run("Unsqueeze", {pad, m.Ints("axes0", {0})});
  REQUIRE(listed[0].float_values);
  CHECK(*listed[0].float_values == std::vector<double>{1.0});
}

TEST_CASE("Range, ConstantOfShape, Constant, Cast, Size, Tile, Flatten, Transpose", "[folding]") {
  Micro m;
  // torch.arange(0, seq): length seq.
  auto r = m.Run("Range", {m.Scalar("zero", 0), m.Scalar("seq", m.S()), m.Scalar("one", 1)});
  CHECK(m.Text(r[0]) == "[seq]");
  // Range(2, 11, 3) = [2, 5, 8]: ceil((11 - 2) / 3) = 3.
  auto r2 = m.Run("Range", {m.Scalar("a", 2), m.Scalar("b", 11), m.Scalar("c", 3)});
  CHECK(m.Text(*r2[0].contents) == "[2, 5, 8]");

  TensorAttribute one;
  one.dtype = DType::kInt64;
  one.dims = {1};
  one.int_values = {7};
  auto cos = m.Run("ConstantOfShape", {m.Ints("sh", {m.B(), 2})}, Attr("value", one));
  CHECK(m.Text(cos[0]) == "[batch, 2]");
  CHECK(cos[0].dtype == DType::kInt64);
  auto filled = m.Run("ConstantOfShape", {m.Ints("sh2", {3})}, Attr("value", one));
  CHECK(m.Text(*filled[0].contents) == "[7, 7, 7]");

  TensorAttribute c;
  c.dtype = DType::kInt64;
  c.dims = {2};
  c.int_values = {-1, 768};
  auto k = m.Run("Constant", {}, Attr("value", c));
  CHECK(m.Text(*k[0].contents) == "[-1, 768]");
  CHECK(
      m.Text(*m.Run("Constant", {}, Attr("value_ints", std::vector<int64_t>{3, 4}))[0].contents) ==
      "[3, 4]");

  ValueId x = m.Tensor("x", DType::kFloat32, {m.B(), m.S(), 4});
  auto size = m.Run("Size", {x});
  CHECK(m.Text(*size[0].contents) == "[4*batch*seq]");
  // Cast to float drops contents (float maths is not integer maths); to int32 keeps them.
  auto to_float = m.Run("Cast", {m.Ints("v", {m.S()})}, Attr("to", int64_t{1}));
  CHECK(to_float[0].dtype == DType::kFloat32);
  CHECK_FALSE(to_float[0].contents);
  auto to_int = m.Run("Cast", {m.Ints("v2", {m.S()})}, Attr("to", int64_t{6}));
  CHECK(m.Text(*to_int[0].contents) == "[seq]");

  CHECK(m.Text(m.Run("Tile", {x, m.Ints("reps", {1, 2, 3})})[0]) == "[batch, 2*seq, 12]");
  CHECK(m.Text(m.Run("Flatten", {x})[0]) == "[batch, 4*seq]");
  CHECK(m.Text(m.Run("Flatten", {x}, Attr("axis", int64_t{0}))[0]) == "[1, 4*batch*seq]");
  CHECK(m.Text(m.Run("Transpose", {x}, Attr("perm", std::vector<int64_t>{0, 2, 1}))[0]) ==
        "[batch, 4, seq]");
  CHECK(m.Text(m.Run("Transpose", {x})[0]) == "[4, seq, batch]");
}

TEST_CASE("GatherND: indices.shape[:-1] + data.shape[batch_dims + k:]", "[folding]") {
  Micro m;
  // The causal-mask index of a dynamo Llama export: data [batch, seq] (r = 2), indices
  // [batch, 1, seq, 1, 2] (q = 5, k = 2): [batch, 1, seq, 1] + data.shape[2:] (nothing).
  ValueId mask = m.Tensor("mask", DType::kBool, {m.B(), m.S()});
  ValueId rows = m.Tensor("rows", DType::kInt64, {m.B(), 1, m.S(), 1, 2});
  CHECK(m.Text(m.Run("GatherND", {mask, rows})[0]) == m.Text(std::vector<Dim>{m.B(), 1, m.S(), 1}));
  // k = 1 keeps data's trailing dims: [5] + [3, 2].
  ValueId data = m.Tensor("data", DType::kFloat32, {4, 3, 2});
  ValueId one = m.Tensor("one", DType::kInt64, {5, 1});
  CHECK(m.Text(m.Run("GatherND", {data, one})[0]) == "[5, 3, 2]");
  // batch_dims 1: data [batch, 3, 4], indices [batch, 2, 1] -> [batch, 2] + data.shape[2:] = [4].
  ValueId batched = m.Tensor("batched", DType::kFloat32, {m.B(), 3, 4});
  ValueId per_row = m.Tensor("per_row", DType::kInt64, {m.B(), 2, 1});
  CHECK(m.Text(m.Run("GatherND", {batched, per_row}, Attr("batch_dims", int64_t{1}))[0]) ==
        m.Text(std::vector<Dim>{m.B(), 2, 4}));
  // Index rows deeper than data's rank are refused.
  ValueId deep = m.Tensor("deep", DType::kInt64, {2, 4});
  const OpSchema* schema = OpRegistry::Get().Find("GatherND");
  const NodeId bad = testing::NewNode(m.g, "bad", "GatherND", {data, deep},
                                      {m.Tensor("bad_out", DType::kUndefined, {})}, {});
  CHECK_FALSE(schema->infer_shapes(MakeOpContext(m.g, bad, &m.g.symbols())).ok());
}

TEST_CASE("shape-op schema facts: views and saved tensors", "[folding]") {
  const OpRegistry& r = OpRegistry::Get();
  for (const char* view : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose",
                           "Expand", "Split", "Slice"}) {
    INFO(view);
    REQUIRE(r.Find(view));
    CHECK(r.Find(view)->is_view);
    CHECK_FALSE(r.Find(view)->saved_source.empty());
    // torch.split and slicing view a part of their input; the others all of it.
    const std::string op = view;
    CHECK(r.Find(view)->view_is_partial == (op == "Split" || op == "Slice"));
    // Only Identity keeps its input's strides without a rule.
    CHECK(static_cast<bool>(r.Find(view)->view_strides) == (op != "Identity"));
  }
  for (const char* copy : {"Concat", "Cast", "Where", "Tile"}) {
    INFO(copy);
    CHECK_FALSE(r.Find(copy)->is_view);
  }
  // Gather is a view only as torch's select (one constant scalar index, view_layout.h).
  REQUIRE(r.Find("Gather"));
  CHECK(r.Find("Gather")->is_view);
  CHECK(r.Find("Gather")->view_is_partial);
  CHECK(static_cast<bool>(r.Find("Gather")->view_applies));
  Micro m;
  ValueId table = m.Tensor("table", DType::kFloat32, {100, 64}, ValueKind::kParameter);
  ValueId ids = m.Tensor("ids", DType::kInt64, {m.B(), m.S()}, ValueKind::kInput);
  m.Run("Gather", {table, ids});
  auto ctx = MakeOpContext(m.g, NodeId(0), nullptr);
  CHECK_FALSE(r.Find("Gather")->IsViewFor(ctx));  // an index tensor: an embedding lookup
  // embedding backward needs the indices only.
  auto saved = r.Find("Gather")->saved_for_backward(ctx);
  REQUIRE(saved.size() == 1);
  CHECK(saved[0].source == SavedTensor::Source::kInput);
  CHECK(saved[0].index == 1);
  CHECK(r.Find("Reshape")->saved_for_backward(ctx).empty());
  auto where_saved = r.Find("Where")->saved_for_backward(ctx);
  REQUIRE(where_saved.size() == 1);
  CHECK(where_saved[0].index == 0);  // the condition
}

// NonZero over values known at import counts exactly: [[0, 3], [5, 7]] has its non-zeros at
// (0, 1), (1, 0), (1, 1), so the output is [2 axes, 3] with rows [0, 1, 1] and [1, 0, 1]. An
// activation's count is the data's: planned at its upper bound, every element non-zero, [2,
// batch * seq] for a [batch, seq] mask (no fresh symbol `analyze` would ask a --dim for).
TEST_CASE("NonZero counts known values exactly and bounds the rest by the element count",
          "[folding]") {
  Micro m;
  ValueId known = m.Tensor("known", DType::kInt64, {2, 2}, ValueKind::kConstant);
  m.g.mutable_value(known).contents = std::vector<Dim>{0, 3, 5, 7};
  auto exact = m.Run("NonZero", {known});
  CHECK(m.Text(exact[0]) == "[2, 3]");
  REQUIRE(exact[0].contents);
  CHECK(m.Text(*exact[0].contents) == "[0, 1, 1, 1, 0, 1]");
  // The TorchScript exporter's opset-9 arange(4): NonZero(ConstantOfShape([4], 1)) = [[0, 1, 2,
  // 3]].
  auto arange = m.Run("NonZero", {m.Ints("ones", {1, 1, 1, 1})});
  CHECK(m.Text(arange[0]) == "[1, 4]");
  CHECK(m.Text(*arange[0].contents) == "[0, 1, 2, 3]");
  ValueId mask = m.Tensor("mask", DType::kBool, {m.B(), m.S()});
  auto bounded = m.Run("NonZero", {mask});
  CHECK(m.Text(bounded[0]) == "[2, batch*seq]");
  CHECK_FALSE(bounded[0].contents);
}

// The import names the NonZero planned at its bound; a known or constant non-zero fill is exact.
TEST_CASE("a NonZero over data is named in one warning, a constant fill is not", "[folding]") {
  Micro m;
  ValueId mask = m.Tensor("mask", DType::kBool, {m.B(), m.S()});
  testing::NewNode(m.g, "global_tokens", "NonZero", {mask},
                   {m.Tensor("where", DType::kInt64, {2, m.B() * m.S()})});
  ValueId n = m.Ints("n", {100});
  ValueId ones = m.Tensor("ones", DType::kInt64, {100}, ValueKind::kConstant);
  Attributes fill;
  fill.Set("value", TensorAttribute{DType::kInt64, {1}, {1}, {}});
  testing::NewNode(m.g, "fill", "ConstantOfShape", {n}, {ones}, fill);
  testing::NewNode(m.g, "arange", "NonZero", {ones},
                   {m.Tensor("positions", DType::kInt64, {1, 100}, ValueKind::kConstant)});
  WarnDataDependentCounts(m.g);
  REQUIRE(m.g.warnings.size() == 1);
  CHECK(m.g.warnings[0] ==
        "1 NonZero node has a count that depends on the data, planned at its upper bound (every "
        "input element non-zero): 'global_tokens' of [batch, seq]");
}

// Indices computed from shapes alone that stand for a view or a slice write keep nothing:
// symbolic_opset9.as_strided gathers a flattened activation at arange-built offsets (torch's
// as_strided keeps sizes and strides), a slice assignment becomes ScatterND (torch's CopySlices
// keeps nothing). An embedding's indices, or indices computed from activations, stay saved
// (derivatives.yaml embedding / index_put: indices).
TEST_CASE("indices computed from shapes for as_strided or a slice write are not saved", "[saved]") {
  Micro m;
  auto saved = [&](const std::string& op, std::vector<ValueId> inputs) {
    const std::string n = std::to_string(m.g.num_nodes());
    NodeId id = testing::NewNode(m.g, op + "_saved_" + n, op, std::move(inputs),
                                 {m.Tensor("out_" + n, DType::kFloat32, {})});
    return OpRegistry::Get().Find(op)->saved_for_backward(MakeOpContext(m.g, id));
  };
  ValueId flat = m.Tensor("flat", DType::kFloat32, {64});
  ValueId offsets = m.Tensor("offsets", DType::kInt64, {4, 8}, ValueKind::kConstant);
  CHECK(saved("Gather", {flat, offsets}).empty());
  ValueId table = m.Tensor("table", DType::kFloat32, {64}, ValueKind::kParameter);
  CHECK(saved("Gather", {table, offsets}).size() == 1);  // an embedding of a 1-D table
  ValueId rows = m.Tensor("rows", DType::kFloat32, {8, 8});
  CHECK(saved("Gather", {rows, offsets}).size() == 1);  // T5's bucketed positions: index_select
  ValueId picked = m.Tensor("picked", DType::kInt64, {4, 8});
  CHECK(saved("Gather", {flat, picked}).size() == 1);  // indices the data decides
  ValueId where = m.Tensor("where", DType::kInt64, {3, 1}, ValueKind::kConstant);
  ValueId update = m.Tensor("update", DType::kFloat32, {3, 8});
  CHECK(saved("ScatterND", {rows, where, update}).empty());
  ValueId chosen = m.Tensor("chosen", DType::kInt64, {3, 1});
  CHECK(saved("ScatterND", {rows, chosen, update}).size() == 1);
}

}  // namespace
}  // namespace memplan
