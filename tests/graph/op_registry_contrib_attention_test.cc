// com.microsoft MultiHeadAttention and GroupQueryAttention (graph/ops/attention_ops.cc): their
// input layouts (separate, packed, with a past) read into the eager-attention saved set.

#include <catch2/catch.hpp>

#include "graph/ops/op_registry.h"
#include "op_registry_test_helpers.h"

namespace memplan {
namespace {

using namespace memplan::testing;
using Catch::Matchers::Contains;

constexpr const char* kMs = "com.microsoft";

TEST_CASE("MultiHeadAttention: separate Q, K, V", "[registry][attention]") {
  // num_heads 4: query [2, 5, 64] -> head 16; value [2, 7, 32] -> v_head 8.
  OpCase mha("MultiHeadAttention", {F32({2, 5, 64}), F32({2, 7, 64}), F32({2, 7, 32})},
             /*num_outputs=*/3, kMs);
  mha.Attr("num_heads", int64_t{4});
  CHECK(mha.OutputShape(0) == Dims({2, 5, 32}));     // [B, S, N * v_head]
  CHECK(mha.OutputShape(1) == Dims({2, 4, 7, 16}));  // present_key [B, N, L, H]
  CHECK(mha.OutputShape(2) == Dims({2, 4, 7, 8}));
  auto saved = mha.Saved();
  CHECK(Describe(saved) == std::vector<std::string>{"in0", "in1", "in2", "extra:attention_probs"});
  // Probabilities [B, N, S, L] = 2*4*5*7 = 280.
  CHECK(Eval(Extra(saved, "attention_probs").shape.NumElements()) == 280);
  // 2*280*16 (QK^T) + 2*280*8 (PV) + 5*280 (softmax) = 8960 + 4480 + 1400 = 14840.
  CHECK(Eval(mha.Cost().flops) == 14840);
  CHECK(mha.schema().amp == AmpCategory::kFp16Safe);
}

TEST_CASE("MultiHeadAttention: a past makes the present what is saved", "[registry][attention]") {
  // Slots: query, key, value, bias, key_padding_mask, attention_bias, past_key, past_value.
  OpCase mha("MultiHeadAttention",
             {F32({2, 5, 64}), F32({2, 7, 64}), F32({2, 7, 32}), Absent(), Absent(), Absent(),
              F32({2, 4, 3, 16}), F32({2, 4, 3, 8})},
             /*num_outputs=*/3, kMs);
  mha.Attr("num_heads", int64_t{4});
  CHECK(mha.OutputShape(1) == Dims({2, 4, 10, 16}));  // total = 3 past + 7 new
  auto saved = mha.Saved();
  CHECK(Describe(saved) ==
        std::vector<std::string>{"in0", "out1", "out2", "extra:attention_probs"});
  CHECK(Eval(Extra(saved, "attention_probs").shape.NumElements()) == 2 * 4 * 5 * 10);
}

TEST_CASE("MultiHeadAttention: packed QKV is saved once", "[registry][attention]") {
  OpCase packed("MultiHeadAttention", {F32({2, 5, 4, 3, 16})}, /*num_outputs=*/1, kMs);
  packed.Attr("num_heads", int64_t{4});
  CHECK(packed.OutputShape(0) == Dims({2, 5, 64}));
  CHECK(Describe(packed.Saved()) == std::vector<std::string>{"in0", "extra:attention_probs"});

  OpCase packed_kv("MultiHeadAttention", {F32({2, 5, 64}), F32({2, 7, 4, 2, 16})},
                   /*num_outputs=*/1, kMs);
  packed_kv.Attr("num_heads", int64_t{4});
  CHECK(packed_kv.OutputShape(0) == Dims({2, 5, 64}));
  CHECK(Describe(packed_kv.Saved()) ==
        std::vector<std::string>{"in0", "in1", "extra:attention_probs"});
}

TEST_CASE("GroupQueryAttention: K and V repeated to num_heads", "[registry][attention]") {
  // 8 query heads, 2 KV heads of 16: query [2, 6, 128], key/value [2, 6, 32]; seqlens_k and
  // total_sequence_length (int32) in slots 5 and 6.
  OpCase gqa("GroupQueryAttention",
             {F32({2, 6, 128}), F32({2, 6, 32}), F32({2, 6, 32}), Absent(), Absent(),
              Tensor(DType::kInt32, {2}), Tensor(DType::kInt32, {1})},
             /*num_outputs=*/3, kMs);
  gqa.Attr("num_heads", int64_t{8}).Attr("kv_num_heads", int64_t{2});
  CHECK(gqa.OutputShape(0) == Dims({2, 6, 128}));
  CHECK(gqa.OutputShape(1) == Dims({2, 2, 6, 16}));  // present_key [B, N_kv, T, H]
  auto saved = gqa.Saved();
  CHECK(Describe(saved) == std::vector<std::string>{"in0", "extra:repeated_key",
                                                    "extra:repeated_value",
                                                    "extra:attention_probs"});
  // repeat_kv: [B, N, T, H] = 2*8*6*16 = 1536 each; probabilities 2*8*6*6 = 576.
  CHECK(Eval(Extra(saved, "repeated_key").shape.NumElements()) == 1536);
  CHECK(Eval(Extra(saved, "attention_probs").shape.NumElements()) == 576);
  // 2*576*16 + 2*576*16 + 5*576 = 18432 + 18432 + 2880 = 39744.
  CHECK(Eval(gqa.Cost().flops) == 39744);
  auto grads = gqa.Gradients();
  CHECK(grads[0]);
  CHECK_FALSE(grads[5]);  // seqlens_k
}

TEST_CASE("GroupQueryAttention: packed QKV", "[registry][attention]") {
  // (8 + 2*2) heads of 16 = 192 packed in the query.
  OpCase gqa("GroupQueryAttention", {F32({2, 6, 192})}, /*num_outputs=*/3, kMs);
  gqa.Attr("num_heads", int64_t{8}).Attr("kv_num_heads", int64_t{2});
  CHECK(gqa.OutputShape(0) == Dims({2, 6, 128}));
  CHECK(gqa.OutputShape(2) == Dims({2, 2, 6, 16}));
}

TEST_CASE("contrib attention: bad attributes name the node", "[registry][attention]") {
  OpCase no_heads("MultiHeadAttention", {F32({2, 5, 64}), F32({2, 7, 64}), F32({2, 7, 64})},
                  /*num_outputs=*/1, kMs);
  CHECK_THAT(no_heads.InferError(), Contains("num_heads must be positive"));

  OpCase uneven("GroupQueryAttention", {F32({2, 6, 128}), F32({2, 6, 48}), F32({2, 6, 48})},
                /*num_outputs=*/1, kMs);
  uneven.Attr("num_heads", int64_t{8}).Attr("kv_num_heads", int64_t{3});
  CHECK_THAT(uneven.InferError(), Contains("multiple of kv_num_heads"));
}

}  // namespace
}  // namespace memplan
