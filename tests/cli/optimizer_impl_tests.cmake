# --optimizer-impl foreach|fused|for-loop (analyzer/program/optimizer_transient.h): torch.optim's step
# intermediates. The per-buffer rules are derived in tests/analyzer/program/optimizer_transient_test.cc;
# these pin the CLI: the default, the JSON and text, the exports and the one-line errors.
set(F ${MEMPLAN_TEST_FIXTURES})

# tiny_mlp (676 parameters: W1 512, b1 32, W2 128, b2 4), fp32 Adam, sum loss, batch 1, exact
# allocator. At the optimizer step the live bytes are the parameters 4 * 676 = 2704, their
# gradients 2704 and the two moments 5408: 16 * 676 = 10816. In the second iteration's backward
# the moments of the first step are live too: at fc1's backward the parameters, all four
# gradients and the moments (10816) plus grad(h0) [1, 32] = 128 and the input x [1, 16] = 64.
set(TINY_ADAM analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 1 --precision fp32 --recompute none
    --loss sum --optimizer adam --allocator exact --json)
# fused: no intermediate; the optimizer step's 10816 is below that backward's
# 10816 + 128 + 64 = 11008, the peak.
memplan_cli_test("--optimizer-impl fused: tiny_mlp Adam peaks in backward" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"peak_bytes\": 11008,.*\"phase\": \"backward\",.*\"optimizer\": \"adam\",\n    \"optimizer_impl\": \"fused\""
  COMMAND ${TINY_ADAM} --optimizer-impl fused)
# foreach (the default): + sqrt(exp_avg_sq) of every parameter, 4 * 676 = 2704: 13520, now the
# peak, at the optimizer step.
memplan_cli_test("--optimizer-impl defaults to foreach: + 4 B per parameter" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"peak_bytes\": 13520,.*\"phase\": \"optimizer\",.*\"optimizer_impl\": \"foreach\""
  COMMAND ${TINY_ADAM})
# for-loop: max over W1, b1, W2, b2 of previous denom + 2 * this one: W1 2 * 512 = 1024,
# b1 512 + 64 = 576, W2 32 + 256 = 288, b2 128 + 8 = 136 elements; 1024 * 4 = 4096: 14912.
memplan_cli_test("--optimizer-impl for-loop: + the largest one-at-a-time peak" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"peak_bytes\": 14912,.*\"optimizer_impl\": \"for-loop\""
  COMMAND ${TINY_ADAM} --optimizer-impl for-loop)
# The text names the implementation beside the optimizer.
memplan_cli_test("analyze text names the optimizer's implementation" EXPECT_EXIT 0
  EXPECT_OUTPUT "fp32, adamw \\(foreach\\), loss"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp32 --optimizer adamw)
# Optimizers with their own kernels are named bare and have no plan.optimizer_impl.
memplan_cli_test("8-bit AdamW has no torch.optim implementation to name" EXPECT_EXIT 0
  EXPECT_NO_OUTPUT "optimizer_impl"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp32 --optimizer adamw8bit
          --json)

# The executor runs the same program: the transient is allocated and measured.
foreach(impl foreach for-loop)
  memplan_cli_test("verify tiny_mlp Adam --optimizer-impl ${impl} passes" EXPECT_EXIT 0
    EXPECT_OUTPUT "exact match  PASS.*result: PASS"
    COMMAND verify ${F}/tiny_mlp.onnx --batch 2 --optimizer adam --optimizer-impl ${impl}
            --steps 2)
endforeach()

# Exports construct the optimizer the plan modelled.
memplan_cli_test("analyze --export pytorch writes foreach=True" EXPECT_EXIT 0
  EXPECT_OUTPUT "torch.optim.Adam\\(params, lr=LEARNING_RATE, betas=\\(0.9, 0.999\\), eps=1e-08, foreach=True\\)"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp32 --optimizer adam
          --export pytorch)
memplan_cli_test("analyze --export pytorch --optimizer-impl for-loop writes foreach=False"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "eps=1e-08, foreach=False\\)"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp32 --optimizer adamw
          --optimizer-impl for-loop --export pytorch)
memplan_cli_test("analyze --export hf-trainer --optimizer-impl fused names adamw_torch_fused"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "optim=\"adamw_torch_fused\""
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp32 --optimizer adamw
          --optimizer-impl fused --export hf-trainer)
memplan_cli_test("analyze --export hf-trainer keeps adamw_torch for foreach" EXPECT_EXIT 0
  EXPECT_OUTPUT "optim=\"adamw_torch\""
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp32 --optimizer adamw
          --export hf-trainer)
# Without --optimizer-impl, analyze --export deepspeed plans DeepSpeed's FusedAdam.
memplan_cli_test("analyze --export deepspeed without --optimizer-impl plans fused" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"type\": \"Adam\""
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp32 --optimizer adam
          --export deepspeed)

# Bad input, and a run that could hold more than the plan: one line, exit 2.
memplan_cli_test("unknown --optimizer-impl is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --optimizer-impl: expected foreach, fused or for-loop, got 'nope'\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --optimizer-impl nope)
# DeepSpeed's FusedAdam holds less than a foreach plan counted: exported, with a note.
memplan_cli_test("--export deepspeed of a foreach plan says the plan over-estimates" EXPECT_EXIT 0
  EXPECT_OUTPUT "_not_expressed.*the plan modelled torch.optim's foreach Adam[^\n]*DeepSpeed's FusedAdam holds none"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp32 --optimizer adam
          --optimizer-impl foreach --export deepspeed)
memplan_cli_test("--export hf-trainer refuses a for-loop plan, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: hf-trainer [^\n]*cannot express --optimizer-impl for-loop[^\n]*re-plan with --optimizer-impl foreach or fused\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp32 --optimizer adamw
          --optimizer-impl for-loop --export hf-trainer)
