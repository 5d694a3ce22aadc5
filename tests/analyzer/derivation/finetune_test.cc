// Fine-tuning plans on hand-built graphs: frozen parameters (--train/--freeze), LoRA adapters,
// frozen-weight storage (--base-dtype, nf4/int8 constants) and 8-bit/Lion optimizer state. Every
// byte count is derived by hand in the comment beside it.

#include <catch2/catch.hpp>

#include <string>

#include "analyzer/program/frozen_weight_storage.h"
#include "analyzer/program/optimizer_state.h"
#include "analyzer/simulation/simulator.h"
#include "graph/fine_tuning.h"
#include "graph/onnx_import.h"
#include "tests/analyzer/derivation/program_test_derive.h"
#include "tests/analyzer/derivation/program_test_graphs.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

using testing::DeriveVerified;
using testing::TestGraph;

// x[batch,4] -> MatMul(W1[4,8]) -> h -> Relu -> r -> MatMul(W2[8,3]) -> y, W1 and W2 named
// layer1.weight and layer2.weight as torch names them.
TestGraph TwoLayerMlp() {
  return testing::TwoLayerMlp(/*in=*/4, /*hidden=*/8, /*out=*/3, "layer1.weight", "layer2.weight");
}

SimulationResult Simulate1(const TrainingProgram& program, const Bindings& bindings) {
  SimulationOptions once;
  once.iterations = 1;
  return testing::SimulateExactly(program, bindings, once);
}

int64_t BytesOfRole(const TrainingProgram& program, BufferRole role, const Bindings& bindings) {
  int64_t total = 0;
  for (const Buffer& b : program.buffers) {
    if (b.role != role) continue;
    auto n = b.bytes.Evaluate(bindings);
    REQUIRE(n.ok());
    total += *n;
  }
  return total;
}

const Buffer* BufferNamed(const TrainingProgram& program, const std::string& name) {
  for (const Buffer& b : program.buffers)
    if (b.name == name) return &b;
  return nullptr;
}

TEST_CASE("a frozen first layer saves nothing for its weight and has no gradient or state",
          "[finetune][simulator]") {
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.optimizer = OptimizerKind::kAdam;

  TestGraph full = TwoLayerMlp();
  TrainingProgram all = DeriveVerified(full.graph, options);
  const SimulationResult all_sim = Simulate1(all, full.Bind(2));
  // Everything trains, batch 2: mm1 saves x (2*4*4 = 32) for W1's gradient; relu saves r and
  // mm2 saves r (2*8*4 = 64, stored once): 96 bytes. Adam: 2 moments * (32 + 24) * 4 = 448.
  CHECK(all_sim.saved_activation_bytes == 96);
  CHECK(BytesOfRole(all, BufferRole::kOptimizerState, full.Bind(2)) == 448);

  TestGraph t = TwoLayerMlp();
  TrainableSelection selection;
  selection.freeze = "layer1";
  REQUIRE(ApplyTrainableSelection(t.graph, selection).ok());
  CHECK(TrainedParameterCount(t.graph) == 24);  // W2 only: 8 * 3
  TrainingProgram frozen = DeriveVerified(t.graph, options);
  const SimulationResult sim = Simulate1(frozen, t.Bind(2));
  // W1 frozen: nothing upstream of mm2's input needs a gradient, so x is not saved, relu has no
  // backward (saves nothing); mm2 saves r (64) for W2's gradient.
  CHECK(sim.saved_activation_bytes == 64);
  // Adam state for W2 only: 2 * 24 * 4 = 192; one gradient buffer, W2's (96 bytes).
  CHECK(BytesOfRole(frozen, BufferRole::kOptimizerState, t.Bind(2)) == 192);
  CHECK(BytesOfRole(frozen, BufferRole::kParameterGradient, t.Bind(2)) == 96);
  CHECK(BufferNamed(frozen, "grad(layer1.weight)") == nullptr);
  // Backward stops at mm2: no backward step for relu or mm1.
  for (const Step& step : frozen.steps)
    if (step.kind == StepKind::kBackward) CHECK(step.name == "mm2");
}

TEST_CASE("a --train pattern keeps only matching parameters, bad patterns are one-line errors",
          "[finetune]") {
  TestGraph t = TwoLayerMlp();
  TrainableSelection train_second;
  train_second.train = "^layer2\\.";
  REQUIRE(ApplyTrainableSelection(t.graph, train_second).ok());
  CHECK(TrainedParameterCount(t.graph) == 24);
  CHECK(t.graph.value(*t.graph.FindValue("layer1.weight")).frozen);

  TestGraph u = TwoLayerMlp();
  TrainableSelection none;
  none.train = "decoder";
  Status s = ApplyTrainableSelection(u.graph, none);
  REQUIRE(!s.ok());
  CHECK(s.error().message == "--train: 'decoder' matches no trainable parameter name");

  TestGraph v = TwoLayerMlp();
  TrainableSelection bad;
  bad.freeze = "layer[";
  s = ApplyTrainableSelection(v.graph, bad);
  REQUIRE(!s.ok());
  CHECK_THAT(s.error().message, Catch::StartsWith("--freeze: 'layer[' is not a valid regular"));

  TestGraph w = TwoLayerMlp();
  TrainableSelection everything;
  everything.freeze = "weight";
  s = ApplyTrainableSelection(w.graph, everything);
  REQUIRE(!s.ok());
  CHECK(s.error().message == "--train/--freeze leave no parameter to train");
}

// x[batch,16] -> MatMul(attn.q_proj.weight[16,12]) -> y.
TestGraph QProjection() {
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 16});
  ValueId w = t.Param("attn.q_proj.weight", {16, 12});
  t.Output(t.Op("MatMul", "q_proj", {x, w}, "y", {t.B(), 12}));
  return t;
}

TEST_CASE("LoRA adds r x (in + out) parameters, saves x and the rank-r intermediate",
          "[finetune][lora]") {
  TestGraph t = QProjection();
  FineTuneOptions ft;
  ft.lora = LoraOptions{/*rank=*/4, /*targets=*/"", /*freeze_base=*/true};  // default targets
  REQUIRE(ApplyFineTuning(t.graph, ft).ok());
  // A [16, 4] + B [4, 12] = 64 + 48 = 112 trainable elements; the base 16*12 is frozen.
  CHECK(TrainedParameterCount(t.graph) == 112);
  CHECK(t.graph.value(*t.graph.FindValue("attn.q_proj.weight")).frozen);
  // The adapter nodes follow their base node in topological order.
  auto order = t.graph.TopologicalOrder();
  REQUIRE(order.ok());
  std::vector<std::string> names;
  for (NodeId n : *order) names.push_back(t.graph.node(n).name);
  CHECK(names ==
        std::vector<std::string>{"q_proj", "q_proj/lora_A", "q_proj/lora_B", "q_proj/lora_add"});

  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.optimizer = OptimizerKind::kAdamW;
  TrainingProgram program = DeriveVerified(t.graph, options);
  const SimulationResult sim = Simulate1(program, t.Bind(2));
  // Batch 2: lora_A saves x (2*16*4 = 128) for A's gradient, lora_B saves h (2*4*4 = 32, the
  // rank-r intermediate) for B's; the frozen base and the Add save nothing.
  CHECK(sim.saved_activation_bytes == 128 + 32);
  // Gradients: A 64*4 + B 48*4 = 448; AdamW: 2 * 112 * 4 = 896; none for the base.
  CHECK(BytesOfRole(program, BufferRole::kParameterGradient, t.Bind(2)) == 448);
  CHECK(BytesOfRole(program, BufferRole::kOptimizerState, t.Bind(2)) == 896);
  CHECK(BufferNamed(program, "grad(attn.q_proj.weight)") == nullptr);
}

TEST_CASE("LoRA's bad inputs: no target, not a 2-D weight, rank above the dims",
          "[finetune][lora]") {
  TestGraph t = QProjection();
  Status s = InsertLoraAdapters(t.graph, LoraOptions{4, "k_proj", true});
  REQUIRE(!s.ok());
  CHECK(s.error().message == "--lora-targets: 'k_proj' matches no MatMul/Gemm weight");

  TestGraph u = QProjection();
  s = InsertLoraAdapters(u.graph, LoraOptions{13, "", true});  // min(16, 12) = 12
  REQUIRE(!s.ok());
  CHECK(s.error().message == "--lora: rank 13 exceeds the dims of 'attn.q_proj.weight' (16 x 12)");

  TestGraph v;
  ValueId ids = v.Input("ids", {v.B()}, DType::kInt64);
  ValueId table = v.Param("embed.weight", {10, 6});
  v.Output(v.Op("Gather", "embed", {table, ids}, "e", {v.B(), 6}));
  s = InsertLoraAdapters(v.graph, LoraOptions{2, "embed", true});
  REQUIRE(!s.ok());
  CHECK(s.error().message ==
        "--lora-targets: 'embed.weight' matches but is not a 2-D MatMul/Gemm weight (LoRA "
        "adapts linear layers)");
}

TEST_CASE("nf4 and int8 constants follow bitsandbytes' layout", "[finetune][quantization]") {
  // A 4096 x 4096 weight: 16,777,216 elements; 262,144 blocks of 64 -> 262,144 uint8 absmax
  // codes; 1,024 second-level blocks of 256 -> 4,096 bytes of fp32 absmax; offset 4; NF4 code
  // table 16 * 4 = 64. Total 266,308 bytes beside the 8,388,608 bytes of packed codes.
  CHECK(Nf4QuantizationStateBytes(4096LL * 4096) == 266308);
  // 100 elements: 2 blocks, 1 second-level block: 2 + 4 + 4 + 64 = 74.
  CHECK(Nf4QuantizationStateBytes(100) == 74);
  CHECK(Int8QuantizationStateBytes(4096) == 16384);  // SCB: one fp32 per output row
}

TEST_CASE("an nf4 base is stored packed and dequantised per use, forward and backward",
          "[finetune][quantization]") {
  // x[batch,128] -> MatMul(l1.q_proj.weight[128,64]) -> MatMul(l2.q_proj.weight[64,32]) -> y,
  // LoRA rank 2 on both, base in nf4.
  TestGraph t;
  ValueId x = t.Input("x", {t.B(), 128});
  ValueId w1 = t.Param("l1.q_proj.weight", {128, 64});
  ValueId h = t.Op("MatMul", "l1", {x, w1}, "h", {t.B(), 64});
  ValueId w2 = t.Param("l2.q_proj.weight", {64, 32});
  t.Output(t.Op("MatMul", "l2", {h, w2}, "y", {t.B(), 32}));
  FineTuneOptions ft;
  ft.lora = LoraOptions{2, "", true};
  REQUIRE(ApplyFineTuning(t.graph, ft).ok());
  ProgramOptions options;
  options.loss = LossKind::kSum;
  options.optimizer = OptimizerKind::kSgd;
  options.base_dtype = BaseDType::kNf4;
  TrainingProgram program = DeriveVerified(t.graph, options);
  const Bindings b = t.Bind(2);
  const Buffer* w1_codes = BufferNamed(program, "l1.q_proj.weight");
  REQUIRE(w1_codes != nullptr);
  CHECK(w1_codes->dtype == DType::kUInt4);
  CHECK(*w1_codes->bytes.Evaluate(b) == 128 * 64 / 2);  // 4096 bytes of packed codes
  // 8192 elements: 128 blocks + 4 (one second-level absmax) + 4 + 64 = 200 bytes.
  const Buffer* w1_state = BufferNamed(program, "quant_state(l1.q_proj.weight)");
  REQUIRE(w1_state != nullptr);
  CHECK(*w1_state->bytes.Evaluate(b) == 200);
  CHECK(w1_state->category == MemoryCategory::kParameters);
  // Parameters: codes 4096 + 1024 (64*32/2), constants 200 + (32 blocks + 4 + 4 + 64 = 104),
  // adapters fp32: l1 A 128*2 + B 2*64 = 384, l2 A 64*2 + B 2*32 = 192 elements -> 2304 bytes.
  CHECK(BytesOfRole(program, BufferRole::kParameterMaster, b) == 4096 + 1024 + 2304);
  CHECK(BytesOfRole(program, BufferRole::kQuantizationState, b) == 200 + 104);
  // Dequantisation: l1's weight once (forward: x needs no gradient, so l1 has no backward); l2's
  // twice, forward and backward (h requires grad through l1's adapter): fp32 64*32*4 = 8192.
  int l1_casts = 0, l2_casts = 0;
  for (const Buffer& buf : program.buffers) {
    if (buf.role != BufferRole::kCast) continue;
    if (buf.name.rfind("l1.q_proj.weight.dequantized.", 0) == 0) ++l1_casts;
    if (buf.name.rfind("l2.q_proj.weight.dequantized.", 0) == 0) {
      ++l2_casts;
      CHECK(*buf.bytes.Evaluate(b) == 8192);
      CHECK(!buf.held_for_backward);
    }
  }
  CHECK(l1_casts == 1);
  CHECK(l2_casts == 2);
}

TEST_CASE("8-bit AdamW keeps uint8 moments with fp32 absmax per 2048, Lion one fp32 moment",
          "[finetune][optimizer]") {
  auto bytes = [](OptimizerKind kind, std::vector<Dim> dims) {
    int64_t total = 0;
    for (const OptimizerStateSpec& s : OptimizerStates(kind, Shape{std::move(dims)}))
      total += *s.shape.NumElements().constant_value() * ByteSize(s.dtype);
    return total;
  };
  // 64 x 64 = 4096 elements (not under 4096): 2 * 4096 uint8 + 2 * ceil(4096/2048) = 2 absmax
  // each, fp32: 8192 + 16 = 8208.
  CHECK(bytes(OptimizerKind::kAdamW8bit, {64, 64}) == 8208);
  // 50 x 100 = 5000: 10000 + 2 * ceil(5000/2048) = 3 absmax * 4 * 2 = 24 -> 10024.
  CHECK(bytes(OptimizerKind::kPagedAdamW8bit, {50, 100}) == 10024);
  // 4095 elements stay 32-bit: 2 * 4095 * 4 = 32760.
  CHECK(bytes(OptimizerKind::kAdamW8bit, {4095}) == 32760);
  CHECK(bytes(OptimizerKind::kLion, {64, 64}) == 4096 * 4);
}

// Saved bytes of a fixture with `ft` applied, cross-entropy, every symbol bound to `size`.
int64_t FrozenFixtureSavedBytes(const std::string& file, const FineTuneOptions& ft, int64_t size) {
  auto graph = ImportOnnxModel(memplan::testing::FixturesDir() + "/" + file);
  REQUIRE(graph.ok());
  REQUIRE(ApplyFineTuning(*graph, ft).ok());
  ProgramOptions options;
  options.loss = LossKind::kCrossEntropy;
  TrainingProgram program = DeriveVerified(*graph, options);
  Bindings bindings(&program.symbols);
  for (size_t s = 0; s < program.symbols.size(); ++s) bindings.Bind(static_cast<SymbolId>(s), size);
  return Simulate1(program, bindings).saved_activation_bytes;
}

TEST_CASE("resnet18 with a frozen backbone saves what PyTorch autograd saves",
          "[finetune][program]") {
  // finetune_saved_reference.py: torchvision's resnet18 at batch 32, 64x64, cross-entropy, with
  // requires_grad_(False) on the parameters named ^(conv1|bn1|layer1)\. : 18841860 bytes; with
  // only fc trained: 193796 bytes (fc's input 32*512*4 = 65536, log_softmax's output
  // 32*1000*4 = 128000, nll_loss's int64 labels 256 and its 4-byte total_weight). As in
  // program_models_test.cc the 4-byte total_weight scalar is not modelled by the op registry.
  for (const char* file : {"resnet18_opset13.onnx", "resnet18_opset17.onnx"}) {
    INFO(file);
    FineTuneOptions stem;
    stem.selection.freeze = "^(conv1|bn1|layer1)\\.";
    CHECK(FrozenFixtureSavedBytes(file, stem, 32) == 18841860 - 4);
    FineTuneOptions head;
    head.selection.train = "^fc\\.";
    CHECK(FrozenFixtureSavedBytes(file, head, 32) == 193796 - 4);
  }
}

TEST_CASE("LoRA adapts weights exported as Transpose -> MatMul (torch.onnx nn.Linear)",
          "[finetune][lora]") {
  auto graph = ImportOnnxModel(memplan::testing::FixturesDir() + "/gpt_opset17.onnx");
  REQUIRE(graph.ok());
  const size_t nodes = graph->num_nodes();
  REQUIRE(InsertLoraAdapters(*graph, LoraOptions{4, "attn\\.(qkv|proj)\\.weight", true}).ok());
  // Two blocks, two targets each: 3 new nodes per target.
  CHECK(graph->num_nodes() == nodes + 2 * 2 * 3);
  // qkv.weight [192, 64] is read as x @ W^T: in 64, out 192 -> A [64, 4], B [4, 192].
  const Value& a = graph->value(*graph->FindValue("blocks.0.attn.qkv.weight.lora_A"));
  CHECK(a.shape.dims[0].constant_value() == 64);
  CHECK(a.shape.dims[1].constant_value() == 4);
  const Value& b = graph->value(*graph->FindValue("blocks.0.attn.qkv.weight.lora_B"));
  CHECK(b.shape.dims[1].constant_value() == 192);
  // 2 * (4 * (64 + 192) + 4 * (64 + 64)) = 3072.
  CHECK(TrainedParameterCount(*graph) == 3072);
  ProgramOptions options;
  options.loss = LossKind::kCrossEntropy;
  DeriveVerified(*graph, options);
}

}  // namespace
}  // namespace memplan
