// memplan:ScaledDotProductAttention (graph/ops/sdpa_op.h), the fused node --attention sdpa plans:
// shape, FLOPs, the flash kernel's saved set and backward workspace, every number derived in a
// comment. The same attention as the ONNX Attention op's eager test (op_registry_transformer_
// test.cc: B=2, heads=8, seq=128, head=64) saves 2621440 bytes there.

#include <catch2/catch.hpp>

#include "graph/ops/common_rules.h"
#include "graph/ops/sdpa_op.h"
#include "tests/graph/op_registry_test_helpers.h"

namespace memplan {
namespace {

using testing::Describe;
using testing::Dims;
using testing::Eval;
using testing::F32;
using testing::OpCase;
using testing::Tensor;

using Names = std::vector<std::string>;

int64_t ExtraBytes(const std::vector<SavedTensor>& saved) {
  int64_t total = 0;
  for (const SavedTensor& s : saved)
    if (s.source == SavedTensor::Source::kExtra)
      total += Eval(TensorBytes(s.shape.NumElements(), s.dtype));
  return total;
}

OpCase Sdpa(std::vector<TensorInfo> inputs) {
  return OpCase(sdpa::kOpType, std::move(inputs), 1, sdpa::kDomain);
}

TEST_CASE("sdpa 4D: shape, FLOPs, saved q, k, v, out and an fp32 logsumexp",
          "[registry][attention]") {
  OpCase c = Sdpa({F32({2, 8, 128, 64}), F32({2, 8, 128, 64}), F32({2, 8, 128, 64})});
  CHECK(c.OutputShape() == Dims({2, 8, 128, 64}));
  // As eager: scores 2*8*128*128 = 262144; 2 matmuls 2*262144*64 each = 67108864; softmax 5 per
  // score = 1310720. Total 68419584.
  CHECK(Eval(c.Cost().flops) == 68419584);
  CHECK(Describe(c.Saved()) == Names{"in0", "in1", "in2", "out0", "extra:logsumexp"});
  // logsumexp fp32 [2, 8, 128] = 2048 elements = 8192 bytes; with q, k, v and out at 524288
  // bytes each, 4 * 524288 + 8192 = 2105344 against eager's 2621440 (no 1048576-byte P).
  CHECK(ExtraBytes(c.Saved()) == 8192);
  // flash backward workspace: softmax_d fp32 [2, 8, 128] (2048) + dq accumulator fp32
  // [2, 128, 8, 64] (131072) = 133120 elements * 4 = 532480 bytes.
  CHECK(Eval(c.schema().backward_workspace(c.Context())) == 532480);
  CHECK(c.schema().backward_flops_factor == 2.5);
  CHECK(c.schema().amp == AmpCategory::kFp16Safe);
}

TEST_CASE("sdpa with dropout keeps the RNG state, the mask gets no gradient",
          "[registry][attention]") {
  // Grouped-query: 8 query heads over 2 kv heads, key given transposed [B, Hkv, D, S].
  OpCase c = Sdpa({F32({2, 8, 16, 32}), F32({2, 2, 32, 16}), F32({2, 2, 16, 32}),
                   Tensor(DType::kBool, {1, 1, 16, 16}, ValueKind::kConstant)});
  c.Attr(sdpa::kKeyTransposed, int64_t{1})
      .Attr(sdpa::kMaskMode, std::string(sdpa::kMaskKeep))
      .Attr(sdpa::kDropoutRatio, 0.1);
  CHECK(c.OutputShape() == Dims({2, 8, 16, 32}));
  CHECK(Describe(c.Saved()) ==
        Names{"in0", "in1", "in2", "in3", "out0", "extra:logsumexp", "extra:rng_state"});
  // logsumexp [2, 8, 16] fp32 = 1024 bytes; RNG state 2 int64 = 16 bytes.
  CHECK(ExtraBytes(c.Saved()) == 1040);
  CHECK(c.Gradients() == std::vector<bool>{true, true, true, false});
}

TEST_CASE("sdpa 3D: heads folded into the batch", "[registry][attention]") {
  OpCase c = Sdpa({F32({16, 10, 8}), F32({16, 12, 8}), F32({16, 12, 4})});
  CHECK(c.OutputShape() == Dims({16, 10, 4}));
  // logsumexp [16, 10] fp32 = 640 bytes.
  CHECK(ExtraBytes(c.Saved()) == 640);
  CHECK_FALSE(c.schema().saved_source.empty());
  CHECK_FALSE(c.schema().amp_source.empty());
}

TEST_CASE("sdpa 3D packed: heads side by side in the hidden axis (ONNX Attention 3D)",
          "[registry][attention]") {
  // q [2, 16, 4 heads * 8], k and v [2, 12, 2 heads * 8]: grouped-query, head_size 8.
  OpCase c = Sdpa({F32({2, 16, 32}), F32({2, 12, 16}), F32({2, 12, 16})});
  c.Attr(sdpa::kHeadSize, int64_t{8});
  CHECK(c.OutputShape() == Dims({2, 16, 32}));
  // Scores 2*4*16*12 = 1536: 2 matmuls 2*1536*8 = 24576 each, softmax 5*1536 = 7680. 56832.
  CHECK(Eval(c.Cost().flops) == 56832);
  CHECK(Describe(c.Saved()) == Names{"in0", "in1", "in2", "out0", "extra:logsumexp"});
  // logsumexp fp32 [2, 4, 16] = 128 elements = 512 bytes (per head, not per folded row).
  CHECK(ExtraBytes(c.Saved()) == 512);
  // softmax_d [2, 4, 16] (128) + dq accumulator [2, 16, 4, 8] (1024) = 1152 * 4 = 4608 bytes.
  CHECK(Eval(c.schema().backward_workspace(c.Context())) == 4608);
  // v's heads may be wider: 2 kv heads of 12 -> output 4 heads * 12.
  OpCase wide = Sdpa({F32({2, 16, 32}), F32({2, 12, 16}), F32({2, 12, 24})});
  wide.Attr(sdpa::kHeadSize, int64_t{8});
  CHECK(wide.OutputShape() == Dims({2, 16, 48}));
}

TEST_CASE("sdpa 3D packed: hidden sizes that are not whole heads are refused",
          "[registry][attention]") {
  OpCase q_odd = Sdpa({F32({2, 16, 30}), F32({2, 12, 16}), F32({2, 12, 16})});
  q_odd.Attr(sdpa::kHeadSize, int64_t{8});
  CHECK(q_odd.InferError().find("not whole heads of head_size 8") != std::string::npos);
  OpCase v_odd = Sdpa({F32({2, 16, 32}), F32({2, 12, 16}), F32({2, 12, 15})});
  v_odd.Attr(sdpa::kHeadSize, int64_t{8});
  REQUIRE_FALSE(v_odd.Infer().ok());
  OpCase four_d = Sdpa({F32({2, 4, 16, 8}), F32({2, 4, 16, 8}), F32({2, 4, 16, 8})});
  four_d.Attr(sdpa::kHeadSize, int64_t{8});
  REQUIRE_FALSE(four_d.Infer().ok());
}

}  // namespace
}  // namespace memplan
