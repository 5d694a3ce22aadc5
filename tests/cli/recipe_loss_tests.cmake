# Loss and optimizer recipes (issue 40; analyzer/precision/loss_precision.h, docs/finetuning.md
# "Loss and optimizer recipes"): --loss-dtype, --loss-chunks, --optimizer-in-backward,
# --cuda-context; bad input; verify; the torch-measured rows re-predicted.
set(F ${MEMPLAN_TEST_FIXTURES})

# lm_head.onnx: x [b, 16, 32] -> MatMul W1 [32, 32] -> h -> MatMul W [32, 100] -> logits, fp32
# graph. At b = 2 the logits have 2 * 16 * 100 = 3200 elements. Saved for backward, pure bf16
# (no autocast: the input x is cast to bf16 for proj, which saves that cast):
#   x.bf16 2*16*32*2 = 2048 + h 2048 + labels 2*16*8 = 256 + log-probs in the loss's dtype:
#   bf16 (auto in pure) 3200*2 = 6400 -> 10752;  fp32 (--loss-dtype fp32) 12800 -> 17152.
# --loss-chunks 8 (analyzer/derivation/chunked_loss_plan.h): torch.chunk cuts seq 16 into 8
# chunks of 2 tokens, each projected by its own MatMul on a strided view of h, which torch's
# matmul copies to fold [2, 2, 32] into [4, 32] (the copy is saved: 8 x 2*2*32*2 = 2048, h itself
# is not), each chunk's labels 2*2*8 = 32 (8 x 32 = 256) and fp32 log-probs 2*2*100*4 = 1600
# (8 x 1600 = 12800): 2048 + 2048 + 256 + 12800 = 17152, as the whole fp32 loss saves.
memplan_cli_test("pure bf16 keeps the loss in bf16: bf16 log-probabilities saved" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 10752,.*\"loss_dtype\": \"bf16\",\n    \"loss_chunks\": 0,\n    \"optimizer_in_backward\": false"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --amp-mode pure
          --recompute none --json)
memplan_cli_test("--loss-dtype fp32 upcasts the logits for the loss (HF's logits.float())"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 17152,.*\"loss_dtype\": \"fp32\""
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --amp-mode pure
          --recompute none --loss-dtype fp32 --json)
memplan_cli_test("--loss-dtype is named in the text report" EXPECT_EXIT 0
  EXPECT_OUTPUT "\nLoss     cross_entropy in fp32 \\(--loss-dtype\\)\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --amp-mode pure
          --recompute none --loss-dtype fp32)
memplan_cli_test("autocast computes the loss in fp32" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"loss_dtype\": \"fp32\""
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --amp-mode autocast
          --recompute none --json)
memplan_cli_test("--loss-chunks 8 saves fp32 log-probs, names the chunks" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 17152,.*\"loss_dtype\": \"fp32\",\n    \"loss_chunks\": 8,"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --amp-mode pure
          --recompute none --loss-chunks 8 --json)
memplan_cli_test("--loss-chunks in the text report" EXPECT_EXIT 0
  EXPECT_OUTPUT "\nLoss     cross_entropy in fp32, 8 chunks of tokens each upcast on its own \\(torchtune's CEWithChunkedOutputLoss\\)\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --amp-mode pure
          --recompute none --loss-chunks 8)
# The CPU executor runs the chunked graph (a Split of h, one head and one cross entropy per
# chunk; 3 chunks of 6, 6 and 4 tokens): what it measures is what the plan predicts.
memplan_cli_test("verify --loss-chunks runs a head and a loss per chunk, memory exact"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "loss cross_entropy\\(logits.chunk0\\) \\+ cross_entropy\\(logits.chunk1\\) \\+ cross_entropy\\(logits.chunk2\\),.*memory      predicted [^\n]*exact match  PASS.*result: PASS"
  COMMAND verify ${F}/lm_head.onnx --batch 2 --precision bf16 --amp-mode pure --loss-chunks 3)
memplan_cli_test("--optimizer-in-backward in the JSON and the text" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"optimizer_in_backward\": true"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --recompute none
          --optimizer-in-backward --json)
memplan_cli_test("--optimizer-in-backward named in the text report" EXPECT_EXIT 0
  EXPECT_OUTPUT "\nOptimizer stepped in backward per parameter, each gradient freed after its step \\(torchtune's optimizer_in_bwd\\)\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --recompute none
          --optimizer-in-backward)
# The CPU executor walks the same program: each parameter's update runs at its step in backward.
memplan_cli_test("verify --optimizer-in-backward measures what it predicts" EXPECT_EXIT 0
  EXPECT_OUTPUT "memory      predicted [^\n]*exact match  PASS.*result: PASS"
  COMMAND verify ${F}/lm_head.onnx --batch 2 --optimizer-in-backward)

# --cuda-context: lazy (default) keeps the 512 MiB estimate; eager is 1331 MiB of context plus
# the generation's cuBLAS workspaces: on an A100 (Ampere) 2 x (8 MiB + 128 KiB) = 17039360, so
# context_bytes = 1331 * 1048576 + 17039360 = 1395654656 + 17039360 = 1412694016.
memplan_cli_test("--cuda-context eager budgets 1.3 GiB and says which figure" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"context_bytes\": 1412694016,.*\"cuda_context_bytes\": 1395654656,.*\"cuda_context_figure\": \"eager\""
  COMMAND analyze ${F}/lm_head.onnx --gpu A100-80GB --batch 2 --cuda-context eager --json)
memplan_cli_test("the default context figure is lazy module loading" EXPECT_EXIT 0
  EXPECT_OUTPUT "budget [^\n]* CUDA context \\(lazy module loading, CUDA >= 11.7\\)"
  COMMAND analyze ${F}/lm_head.onnx --gpu A100-80GB --batch 2)
memplan_cli_test("--cuda-context takes a size" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"cuda_context_bytes\": 2147483648,.*\"cuda_context_figure\": \"--cuda-context\""
  COMMAND analyze ${F}/lm_head.onnx --gpu A100-80GB --batch 2 --cuda-context 2G --json)

# --optimizer paged-adamw8bit: bitsandbytes pages state1/state2 of parameters of >= 1e5
# elements (get_state_buffer). loss_wide_head: W [512, 4096] = 2097152 and W1 [512, 512] =
# 262144 elements, both paged, uint8 states: 2 x (2097152 + 262144) = 4718592 bytes. lm_head's
# largest weight has 3200 elements: nothing paged.
memplan_cli_test("paged-adamw8bit reports the state bitsandbytes pages" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"paged_optimizer_state_bytes\": 4718592"
  COMMAND analyze ${F}/recipe_rows/loss_wide_head.onnx --gpu 24G --batch 1
          --optimizer paged-adamw8bit --json)
# The paged state is outside the caching allocator (analyzer/program/paged_optimizer_state.h):
# not in the peak; on a 24 GiB GPU the room left holds all of it, so nothing is evicted and
# nothing crosses the host link (2 x 0).
memplan_cli_test("paged-adamw8bit names the paged state in the text report" EXPECT_EXIT 0
  EXPECT_OUTPUT "\nPaged    4.5 MiB of optimizer state in CUDA unified memory \\(parameters of >= 1e5 elements\\), outside the caching allocator and the peak above: 4.5 MiB resident in the room the budget leaves, 0 B evicted to the host \\(0 B over the host link per step\\)\n"
  COMMAND analyze ${F}/recipe_rows/loss_wide_head.onnx --gpu 24G --batch 1
          --optimizer paged-adamw8bit)
memplan_cli_test("paged-adamw8bit says what stays resident in the JSON" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"paged_optimizer_state\": \\{\n *\"resident_bytes\": 4718592,\n *\"evicted_bytes\": 0,\n *\"host_traffic_bytes_per_step\": 0\n"
  COMMAND analyze ${F}/recipe_rows/loss_wide_head.onnx --gpu 24G --batch 1
          --optimizer paged-adamw8bit --json)
memplan_cli_test("paged-adamw8bit pages nothing below 1e5 elements" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"paged_optimizer_state_bytes\": 0"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --optimizer paged-adamw8bit --json)

# Exports: the PyTorch loop upcasts the logits for an fp32 loss in a pure plan; only torchtune has
# a switch for optimizer_in_bwd, so the others refuse it (torchtune_export_tests.cmake).
memplan_cli_test("export pytorch of a pure plan with --loss-dtype fp32 calls .float()"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "loss = loss_fn\\(model\\(inputs\\).float\\(\\), targets\\)"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --amp-mode pure
          --loss-dtype fp32 --export pytorch)
memplan_cli_test("export hf-trainer refuses --optimizer-in-backward, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*hf-trainer cannot express --optimizer-in-backward[^\n]*\n$"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --optimizer-in-backward
          --export hf-trainer)

# Bad input: one line, exit 2.
memplan_cli_test("--loss-dtype fp8 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --loss-dtype: expected auto, fp32, bf16 or fp16, got 'fp8'\n$"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --loss-dtype fp8)
memplan_cli_test("--loss-chunks with mse is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*--loss-chunks chunks a cross-entropy loss[^\n]*\n$"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --loss mse --loss-chunks 8)
memplan_cli_test("--optimizer-in-backward with accumulation is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --optimizer-in-backward steps each parameter inside backward[^\n]*\n$"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --micro-batch 2 --global-batch 8
          --optimizer-in-backward)
memplan_cli_test("--cuda-context lots is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --cuda-context: expected lazy, eager or a size such as 1.3G, got 'lots'\n$"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --cuda-context lots)

# The rows torch 2.x measured on the CPU (tools/recipes/measure_loss_recipes.py), re-predicted
# from their weight-free graphs: exact_peak_bytes within 2% of the step's live-bytes peak.
# The chunked rows (8, 4 and 3 chunks: torchtune's head and loss per chunk of tokens,
# chunked_loss_plan.h) peak in forward at the last chunk's log_softmax, as torch does.
add_test(NAME "cli: recipe loss rows re-predicted within 2% of torch"
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tools/recipes/repredict_loss_rows.py
                 --memplan $<TARGET_FILE:memplan> --rows ${F}/recipe_rows/loss_rows.jsonl
                 --check)

# The fit decision leaves the paged state out of the peak: a GPU that holds the paged plan but
# not the same state on the device fits only the paged plan (tests/cli/paged_fit_check.py).
add_test(NAME "cli: paged optimizer state is outside the peak and the fit decision"
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/cli/paged_fit_check.py $<TARGET_FILE:memplan>
                 ${F}/recipe_rows/loss_wide_head.onnx)
