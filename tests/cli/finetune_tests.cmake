# Fine-tuning flags (docs/finetuning.md): --train/--freeze, --lora/--lora-targets, --base-dtype,
# the 8-bit and Lion optimizers; their one-line errors (exit 2); `verify` executes the plans.
# tests/fixtures/tiny_mlp.onnx: x -> fc1 (MatMul W1[16,32]) -> fc1_bias (Add b1[32]) -> relu ->
# fc2 (MatMul W2[32,4]) -> fc2_bias (Add b2[4]); 512 + 32 + 128 + 4 = 676 parameters.
set(F ${MEMPLAN_TEST_FIXTURES})

# Freezing W1 trains 676 - 512 = 164.
memplan_cli_test("--freeze reports trainable_parameter_count" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"parameter_count\": 676.*\"trainable_parameter_count\": 164"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --freeze "^W1$" --json)
memplan_cli_test("--train reports the frozen rest in text" EXPECT_EXIT 0
  EXPECT_OUTPUT "Train    4 of 676 parameters \\(the rest frozen"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --train "^b2$")
# LoRA rank 4 on W1 [16, 32]: A [16, 4] + B [4, 32] = 64 + 128 = 192 trained.
memplan_cli_test("--lora counts the adapters only" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"trainable_parameter_count\": 192"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --lora 4 --lora-targets "^W1$" --json)
memplan_cli_test("--base-dtype nf4 is reported" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"base_dtype\": \"nf4\""
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --lora 2 --lora-targets "W[12]"
          --base-dtype nf4 --json)
# With --precision auto a bf16 base plans in bf16.
memplan_cli_test("--base-dtype bf16 under --precision auto plans bf16" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"precision\": \"bf16\".*\"base_dtype\": \"bf16\""
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --freeze "^W1$" --base-dtype bf16 --json)
foreach(optimizer adamw8bit paged-adamw8bit lion)
  memplan_cli_test("--optimizer ${optimizer} plans" EXPECT_EXIT 0
    EXPECT_OUTPUT "\"optimizer_state\": [1-9]"
    COMMAND analyze ${F}/transformer_opset17.onnx --gpu 24G --batch 2 --dim seq=8
            --optimizer ${optimizer} --json)
endforeach()

# Bad input: one line naming the flag, exit 2.
memplan_cli_test("--train matching nothing is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --train: 'decoder' matches no trainable parameter name\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --train decoder)
memplan_cli_test("--freeze matching nothing is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --freeze: 'W9' matches no trainable parameter name\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --freeze W9)
memplan_cli_test("--freeze everything is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --train/--freeze leave no parameter to train\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --freeze "[Wb]")
memplan_cli_test("--lora-targets matching nothing is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --lora-targets: 'W9' matches no MatMul/Gemm weight\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --lora 2 --lora-targets W9)
memplan_cli_test("--lora rank above the dims is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --lora: rank 17 exceeds the dims of 'W1' \\(16 x 32\\)\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --lora 17 --lora-targets "^W1$")
# GPT's token embedding is 2-D but read by Gather, not a linear layer.
memplan_cli_test("--lora-targets on an embedding is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --lora-targets: 'tok.weight' matches but is not a 2-D MatMul/Gemm weight[^\n]*\n$"
  COMMAND analyze ${F}/gpt_opset17.onnx --gpu 24G --batch 2 --dim seq=8 --lora 2
          --lora-targets "^tok")
memplan_cli_test("--lora-targets without --lora is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --lora-targets needs --lora RANK\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --lora-targets W1)
memplan_cli_test("--base-dtype unknown is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --base-dtype: expected [^\n]*nf4, got 'nf9'\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --lora 2 --lora-targets W1
          --base-dtype nf9)
memplan_cli_test("--base-dtype without frozen weights is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --base-dtype stores frozen weights[^\n]*\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --base-dtype nf4)
memplan_cli_test("--base-dtype fp16 under --precision bf16 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --base-dtype fp16 cannot pair with --precision bf16[^\n]*\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --freeze "^W1$" --base-dtype fp16
          --precision bf16)
memplan_cli_test("--optimizer unknown lists the 8-bit ones" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: unknown optimizer 'adam8' \\(choose one of: [^\n]*, adamw8bit, paged-adamw8bit, lion\\)\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --optimizer adam8)

# The CPU runtime executes the plans; measured equals predicted and the loss falls.
memplan_cli_test("verify a frozen first layer passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "exact match  PASS.*falls  PASS.*result: PASS"
  COMMAND verify ${F}/tiny_mlp.onnx --batch 4 --global-batch 8 --optimizer adamw
          --freeze "^W1$" --steps 3)
memplan_cli_test("verify LoRA on GPT attention passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "exact match  PASS.*falls  PASS.*result: PASS"
  COMMAND verify ${F}/gpt_opset17.onnx --batch 2 --dim seq=8 --optimizer adamw --lora 4
          --lora-targets "attn\\.(qkv|proj)\\.weight" --steps 3)
memplan_cli_test("verify adamw8bit passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "adamw8bit.*exact match  PASS.*falls  PASS.*result: PASS"
  COMMAND verify ${F}/transformer_opset17.onnx --batch 2 --dim seq=8 --optimizer adamw8bit
          --steps 3)
memplan_cli_test("verify lion passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "lion.*exact match  PASS.*falls  PASS.*result: PASS"
  COMMAND verify ${F}/transformer_opset17.onnx --batch 2 --dim seq=8 --optimizer lion --steps 3)
# QLoRA's shape with a bf16 base (the runtime executes 16-bit bases, not int8/nf4 codes).
memplan_cli_test("verify LoRA on a bf16 base passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "bf16, adam.*exact match  PASS.*falls  PASS.*result: PASS"
  COMMAND verify ${F}/gpt_opset17.onnx --batch 2 --dim seq=8 --precision bf16 --lora 4
          --lora-targets "attn\\.(qkv|proj)\\.weight" --base-dtype bf16 --steps 3)
memplan_cli_test("verify refuses a quantised base, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: verify: the runtime does not execute --base-dtype nf4[^\n]*\n$"
  COMMAND verify ${F}/tiny_mlp.onnx --batch 4 --lora 2 --lora-targets W1 --base-dtype nf4)
