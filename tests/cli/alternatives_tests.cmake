# When nothing fits, analyze plans the alternatives (analyzer/alternatives/alternative_search.h)
# and still exits 1. Every number below is derived by hand.
set(Z ${MEMPLAN_ZOO_DIR})

# The zoo MLP 784-1024-1024-10 in fp32 with Adam, live bytes (exact allocator), no headroom, on a
# generic GPU of 536,870,912 + 20,000,000 B: the budget is 20,000,000 B after the 512 MiB context.
# Its 1,863,690 parameters are 7,454,760 B; as many gradient bytes.
#  * adam: 2 x 7,454,760 B of moments: 29,819,040 B of model state alone, over the budget.
#  * lion: one moment: 3 x 7,454,760 = 22,364,280 B, over the budget: does not fit.
#  * adamw8bit: 2 B per element + 8 B per 2048-element block for tensors of 4096 elements or more,
#    8 B per element below (bitsandbytes' min_8bit_size): fc1 802,816 -> 1,605,632 + 8 x 392 =
#    1,608,768; fc2 1,048,576 -> 2,097,152 + 8 x 512 = 2,101,248; fc3 10,240 -> 20,480 + 8 x 5 =
#    20,520; biases 1024, 1024, 10 -> 8 x 2058 = 16,464: 3,747,000 B of state, 18,656,520 B in
#    all. The 1,343,480 B left hold micro-batch 1's activations (784 + 4 x 1024 + 10 floats a
#    sample, some KiB; the weight gradients are the gradient buffers above): fits.
#  * recompute: parameters + Adam moments = 22,364,280 B = 21.3 MiB exceed the budget, 19.1 MiB:
#    not planned. LoRA: the MLP has no attention projection: not planned, with the CLI's error.
set(MLP ${Z}/mlp.onnx --gpu 556870912 --precision fp32 --recompute none --allocator exact
    --headroom 0)
memplan_cli_test("alternatives: mlp fits with the 8-bit optimizer, not with lion" EXPECT_EXIT 1
  EXPECT_OUTPUT "Does not fit even at micro-batch 1[^\n]*\n\nAlternatives that fit[^\n]*\n(  [0-9]\\. [^\n]*\n     [^\n]*\n)*  [0-9]\\. --optimizer adamw8bit\n     m=[0-9]+, peak [0-9.]+ MiB of 19.1 MiB,.*  does not fit: --optimizer lion \\(peak 2[1-9]\\.[0-9] MiB of 19.1 MiB\\)\n.*  not planned: --recompute auto: the parameters and optimizer state alone \\(21.3 MiB\\) exceed the budget \\(19.1 MiB\\). this changes activations only\n  not planned: --lora 16 --base-dtype fp16: --lora-targets: [^\n]* matches no MatMul/Gemm weight\n"
  COMMAND analyze ${MLP})
# The same in JSON: the change, every flag of its request (table order; only the flags given),
# fits, the budget. (An array's "[" is matched by "." where its "]" is not matched: CMake does
# not split a list element with unbalanced brackets.)
memplan_cli_test("alternatives: JSON of the 8-bit optimizer alternative" EXPECT_EXIT 1
  EXPECT_OUTPUT "\"alternatives\": .\n.*\"kinds\": \\[\n *\"optimizer\"\n *\\],\n *\"flags\": \"--optimizer adamw8bit\",\n *\"arguments\": \"--gpu 556870912 --precision fp32 --optimizer adamw8bit --allocator exact --recompute none --headroom 0\",\n *\"fits\": true,\n *\"gpu\": \"generic 531.1 MiB\",\n *\"gpus\": 1,\n *\"budget_bytes\": 20000000,\n *\"micro_batch\": [1-9][0-9]*,.*\"flags\": \"--optimizer lion\",\n *\"arguments\": \"[^\"]*\",\n *\"fits\": false,.*\"alternatives_not_planned\": .\n *{\n *\"kinds\": \\[\n *\"recompute\"\n *\\],\n *\"flags\": \"--recompute auto\",\n *\"reason\": \"the parameters and optimizer state alone"
  COMMAND analyze ${MLP} --json)
# Replayed by hand: the alternative's arguments plan a fitting plan (exit 0).
memplan_cli_test("alternatives: the 8-bit optimizer alternative's arguments fit" EXPECT_EXIT 0
  EXPECT_OUTPUT "Peak     [0-9.]+ MiB of 19.1 MiB \\([0-9]+%\\) - fits"
  COMMAND analyze ${MLP} --optimizer adamw8bit)
memplan_cli_test("alternatives: --no-alternatives exits 1 without them" EXPECT_EXIT 1
  EXPECT_OUTPUT "Does not fit even at micro-batch 1"
  EXPECT_NO_OUTPUT "Alternatives|\"alternatives\""
  COMMAND analyze ${MLP} --no-alternatives)
# A plan that fits has no alternatives.
memplan_cli_test("alternatives: none when the plan fits" EXPECT_EXIT 0
  EXPECT_NO_OUTPUT "\"alternatives"
  COMMAND analyze ${Z}/mlp.onnx --gpu 24G --json)

# Llama-3-8B on a 24 GB card at seq 4096 without recompute (--recompute none). A full fine-tune
# keeps fp32 weights and Adam moments: 8,030,261,248 x 12 B = 89.7 GiB, over the 23.5 GiB budget,
# so recompute alone is not planned. QLoRA alone does not fit: its nf4 linear weights
# (32 x 218,103,808 x 0.5 B = 3.25 GiB) and fp32 embeddings and lm_head (2 x 525,336,576 x 4 B =
# 3.9 GiB) leave about 16 GiB, and without recompute every layer keeps at seq 4096 at least its
# SwiGLU gate and up outputs and their product (3 x 4096 x 14336 x 2 B = 336 MiB) and the fp32
# RMSNorm inputs (2 x 4096 x 4096 x 4 B = 128 MiB): 32 x 464 MiB = 14.5 GiB, plus the fp32
# logits 4096 x 128256 x 4 B = 2.0 GiB: over. With --recompute auto (the pair) only each layer's
# input is kept (32 x 4096 x 4096 x 2 B = 1 GiB): fits, as "llama3_8b QLoRA r16 nf4 fits 24G at
# seq 4096" (llm_zoo_tests.cmake) plans the same request. Fitting plans rank first: the pair
# comes before QLoRA alone.
memplan_cli_test("alternatives: llama3_8b 24G lists QLoRA + recompute as fitting" EXPECT_EXIT 1
  EXPECT_OUTPUT "\"kinds\": \\[\n *\"qlora\",\n *\"recompute\"\n *\\],\n *\"flags\": \"--recompute auto --lora 16 --base-dtype nf4\",\n *\"replaces\": \"--recompute none\",\n *\"arguments\": \"--dim seq=4096 --gpu 24G --recompute auto --lora 16 --base-dtype nf4\",\n *\"fits\": true,.*\"kinds\": \\[\n *\"qlora\"\n *\\],\n *\"flags\": \"--lora 16 --base-dtype nf4\",\n *\"arguments\": \"[^\"]*\",\n *\"fits\": false,"
  COMMAND analyze ${Z}/llama3_8b.onnx --gpu 24G --dim seq=4096 --recompute none --json)

# Each alternative is its recorded `arguments` planned as a user would plan them: the same peak
# and fits decision as `analyze` run directly on those flags. T5-small (the recorded GPU row's
# export) under bf16 autocast with --attention sdpa keeps its 12 trained-bias attentions in fp32
# (SDPA's math kernel upcasts); on a 1 GiB card nothing fits, and the alternatives lost that
# placement: "--gpu T4" was offered at 5.0 GiB where planning it gives 5.6 GiB (each alternative
# 0.6 GiB optimistic). The script plans every alternative again and compares.
add_test(NAME "cli: every alternative is what its own flags plan (T5 sdpa, bf16)"
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/alternatives_match_direct_test.py
                 $<TARGET_FILE:memplan> ${MEMPLAN_TEST_FIXTURES}/gpu_rows/t5-small.onnx.xz
                 ${CMAKE_CURRENT_BINARY_DIR}/alternatives_match_direct --
                 --gpu 1G --micro-batch 16 --optimizer adam --optimizer-impl foreach
                 --loss cross_entropy --headroom 0 --precision bf16 --amp-mode autocast
                 --attention sdpa --recompute none)
set_tests_properties("cli: every alternative is what its own flags plan (T5 sdpa, bf16)"
                     PROPERTIES TIMEOUT 600)
