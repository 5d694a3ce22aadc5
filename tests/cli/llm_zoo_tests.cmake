# The LLM-size zoo entries (tools/zoo/llama.cc): published parameter counts, grouped-query
# attention fused, a QLoRA plan that fits a 24 GB card and a full fine-tune that does not.
# Every number below is derived by hand from the published configs, not from memplan's output.
set(Z ${MEMPLAN_ZOO_DIR})

# Meta-Llama-3-8B: embed_tokens and the untied lm_head 128256 * 4096 = 525,336,576 each; per
# layer q, o 4096^2 = 16,777,216 each, k, v 4096 * 1024 = 4,194,304 each, gate, up, down
# 4096 * 14336 = 58,720,256 each, two RMSNorm weights 4096 each: 218,112,000; final norm 4096.
# 2 * 525,336,576 + 32 * 218,112,000 + 4096 = 8,030,261,248. The attention's ratio-0 Dropout
# keeps the inference-export warning away, as in a real training export.
memplan_cli_test("inspect zoo llama3_8b parameters" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"parameter_count\": 8030261248,.*\"warnings\": \\[\\]\n}\n$"
  COMMAND inspect ${Z}/llama3_8b.onnx --json)
# Mistral-7B-v0.1: the same decoder with vocab 32000: 2 * 131,072,000 + 32 * 218,112,000 + 4096.
memplan_parameter_count_test("inspect zoo mistral_7b parameters" ${Z}/mistral_7b.onnx 7241732096)
# --dim seq binds the symbolic sequence length of input_ids [batch, seq].
memplan_cli_test("inspect zoo llama3_8b binds batch and seq" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"name\": \"input_ids\",.*\"dims\": \\[\n *\"batch\",\n *\"seq\"\n *\\],\n *\"bound_dims\": \\[\n *1,\n *4096\n *\\]"
  COMMAND inspect ${Z}/llama3_8b.onnx --json --batch 1 --dim seq=4096)

# 32 layers, each one attention with 32 query heads over 8 KV heads: all 32 fused, read
# un-repeated (grouped_query), with the additive causal mask; the ratio-0 Dropout is no dropout.
memplan_cli_test("llama3_8b: 32 grouped-query attentions fused" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"attention\": {\n      \"mode\": \"sdpa\",\n      \"requested\": \"sdpa\",\n      \"fused\": 32,.*\"node\": \"/model/layers.31/self_attn/ScaledDotProductAttention\",\n *\"mask\": \"add\",\n *\"grouped_query\": true,\n *\"dropout\": false,"
  COMMAND analyze ${Z}/llama3_8b.onnx --gpu 80G --batch 1 --dim seq=512 --attention sdpa
          --lora 8 --json)
memplan_cli_test("mistral_7b: 32 attentions fused" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"fused\": 32,"
  COMMAND analyze ${Z}/mistral_7b.onnx --gpu 80G --batch 1 --dim seq=512 --lora 8 --json)

# QLoRA on a 24 GB card at seq 4096. Default targets (graph/lora_adapters.h) are q_proj,
# k_proj, v_proj, o_proj; rank 16 adds r * (in + out) per projection:
#   q, o: 16 * (4096 + 4096) = 131,072 each; k, v: 16 * (4096 + 1024) = 81,920 each;
#   per layer 425,984; 32 layers: 13,631,488.
memplan_cli_test("llama3_8b QLoRA r16 nf4 fits 24G at seq 4096" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"trainable_parameter_count\": 13631488"
  COMMAND analyze ${Z}/llama3_8b.onnx --gpu 24G --dim seq=4096 --lora 16 --base-dtype nf4
          --json)
# A full fine-tune does not fit: its fp32 weights alone are 8,030,261,248 * 4 B =
# 32,121,044,992 B = 29.9 GiB, as are the gradients; Adam's two moments are 59.8 GiB, the
# largest part of the peak, which the does-not-fit sentence names.
# (The State line names the AMP regime when the chosen plan is mixed. Its alternatives are
# tested in alternatives_tests.cmake.)
memplan_cli_test("llama3_8b full fine-tune does not fit 24G" EXPECT_EXIT 1
  EXPECT_OUTPUT "Does not fit even at micro-batch 1: [^\n]*; the largest part is optimizer state, 59.8 GiB\\. .*State +([a-z-]+: )?parameters 29.9 GiB, gradients 29.9 GiB, optimizer state 59.8 GiB"
  COMMAND analyze ${Z}/llama3_8b.onnx --gpu 24G --dim seq=4096 --no-alternatives)
