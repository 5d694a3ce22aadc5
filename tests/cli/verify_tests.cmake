# Regexes keep [ and ] balanced: CMake's list splitting counts brackets even when escaped.
# `memplan verify` on small fixtures: the plan runs on the CPU reference backend, measured memory
# must equal the prediction (exact match on the CPU backend), and the checks pass.
set(F ${MEMPLAN_TEST_FIXTURES})

memplan_cli_test("verify tiny_mlp from flags passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "exact match  PASS.*result: PASS"
  COMMAND verify ${F}/tiny_mlp.onnx --batch 4 --global-batch 8 --optimizer sgd --steps 3)
# Mixed precision with every node recomputed: the plan trains (the loss falls), recompute is
# bitwise neutral and the measured peak is the prediction.
foreach(precision bf16 fp16)
  memplan_cli_test("verify transformer ${precision} with recompute passes" EXPECT_EXIT 0
    EXPECT_OUTPUT "${precision}, adam.*exact match  PASS.*recompute   bitwise identical  PASS.*falls  PASS.*result: PASS"
    COMMAND verify ${F}/transformer_opset17.onnx --batch 2 --dim seq=8 --precision ${precision}
            --recompute all --steps 2)
endforeach()
# The checked-in plan was printed by `memplan analyze tiny_mlp.onnx --gpu 24G --batch 4
# --global-batch 8 --optimizer adamw --json` (tests/fixtures/plans/tiny_mlp_verify_plan.json).
# CMake regexes have no back-references, so "exact_match": true carries predicted == measured.
memplan_cli_test("verify --plan json carries the documented keys" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"device\": \"cpu\".*\"accumulation_steps\": 2.*\"predicted_peak_bytes\": [0-9]+,\n  \"measured_peak_bytes\": [0-9]+,.*\"exact_match\": true.*\"gradient_equivalence\": {\n    \"checked\": true,\n    \"passed\": true,\n    \"max_rel_error\": [0-9].*\"recompute_equivalence\": {\n    \"checked\": true,\n    \"passed\": true.*\"losses\": \\[\n    [0-9.e-]+,\n    [0-9.e-]+,\n    [0-9.e-]+\n  \\],\n  \"loss_decreased\": true.*\"loss_scaler_events\".*\"step_seconds\".*\"samples_per_second\".*\"passed\": true\n}"
  COMMAND verify ${F}/tiny_mlp.onnx --plan ${F}/plans/tiny_mlp_verify_plan.json --json)
memplan_cli_test("verify --plan that does not exist is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot open plan '[^\n]+no_such_plan.json'\n$"
  COMMAND verify ${F}/tiny_mlp.onnx --plan ${F}/no_such_plan.json)
memplan_cli_test("verify without a plan is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: verify needs a plan[^\n]*\n$" COMMAND verify ${F}/tiny_mlp.onnx)
memplan_cli_test("verify refuses a plan above --max-cpu-memory, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: the plan needs [^\n]+--max-cpu-memory[^\n]*\n$"
  COMMAND verify ${F}/tiny_mlp.onnx --batch 4 --max-cpu-memory 1K)
memplan_cli_test("verify bad --tolerance is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --tolerance: [^\n]+\n$"
  COMMAND verify ${F}/tiny_mlp.onnx --batch 4 --tolerance lots)
# Without a CUDA backend in the build there is no device to run on.
if(NOT TARGET memplan_runtime_cuda)
  memplan_cli_test("verify --device cuda without CUDA exits 2" EXPECT_EXIT 2
    EXPECT_OUTPUT "^memplan: no CUDA device available\n$"
    COMMAND verify ${F}/tiny_mlp.onnx --batch 4 --device cuda)
endif()
# A bf16 plan with sqrt recompute and the planner's per-node placement, printed by
# `memplan analyze transformer_opset17.onnx --gpu 24G --batch 2 --dim seq=8 --precision bf16
# --recompute sqrt --json`: node names in recompute/fp16_ops/fp32_ops resolve, the seq binding is
# read from "bindings".
memplan_cli_test("verify --plan bf16 with recompute passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"precision\": \"bf16\".*\"exact_match\": true.*\"passed\": true\n}"
  COMMAND verify ${F}/transformer_opset17.onnx --plan ${F}/plans/transformer_bf16_sqrt_verify_plan.json --json --steps 2)

# --gpus: the per-rank program runs as N simulated ranks in one process, each rank's measured
# peak against the prediction, gradients and weights against the single-GPU step of the same
# global batch (runtime/rank_verification.h).
memplan_cli_test("verify --gpus 2 --parallel fsdp runs two ranks" EXPECT_EXIT 0
  EXPECT_OUTPUT "exact match  PASS.*ranks +2 simulated fsdp ranks.*gradients +max rel error[^\n]*PASS.*weights +max rel error[^\n]*PASS.*result: PASS"
  COMMAND verify ${F}/tiny_mlp.onnx --batch 2 --global-batch 8 --gpus 2 --parallel fsdp --steps 2)
memplan_cli_test("verify --plan of a two-GPU plan runs its ranks" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"gpus\": 2.*\"measured_peak_bytes\".*\"weight_equivalence\""
  COMMAND verify ${F}/tiny_mlp.onnx --plan ${F}/plans/tiny_mlp_fsdp2_plan.json --json --steps 2)
memplan_cli_test("verify --gpus of sharded Adafactor state is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: verify --gpus: the runtime shards only elementwise optimizer state[^\n]*\n$"
  COMMAND verify ${F}/tiny_mlp.onnx --batch 2 --gpus 2 --parallel zero1 --optimizer adafactor)
memplan_cli_test("verify --global-batch not a multiple of m x GPUs is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --global-batch 6 is not a multiple of the micro-batch 2 x 2 GPUs\n$"
  COMMAND verify ${F}/tiny_mlp.onnx --batch 2 --gpus 2 --parallel ddp --global-batch 6)
foreach(stage zero2 zero3)
  memplan_cli_test("verify --gpus 3 --parallel ${stage} with a small reduce bucket runs" EXPECT_EXIT 0
    EXPECT_OUTPUT "ranks +3 simulated ${stage} ranks.*result: PASS"
    COMMAND verify ${F}/tiny_mlp.onnx --batch 2 --global-batch 12 --gpus 3 --parallel ${stage}
      --engine-options reduce_bucket_size=500,stage3_param_persistence_threshold=0 --steps 2)
endforeach()
memplan_cli_test("verify --gpus 2 fsdp with a unit per transformer block passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "ranks +2 simulated fsdp ranks.*result: PASS"
  COMMAND verify ${F}/gpt_opset17.onnx --batch 1 --dim seq=16 --global-batch 4 --gpus 2
    --parallel fsdp --engine-options auto_wrap_policy=transformer --steps 2)
