# --compile (issue 40, item 6; analyzer/derivation/compiled_partition.h, docs/finetuning.md
# "torch.compile"): the saved set of AOTAutograd's min-cut partitioner, named in the JSON and the
# text report, carried by every export target with a switch for it, refused in one line by the
# one without (DeepSpeed's JSON) and with --offload activations. The bytes are tested in
# tests/analyzer/derivation/compiled_partition_test.cc (hand-derived) and against torch's own
# partitioner below (docs/compile_rows.jsonl).
set(F ${MEMPLAN_TEST_FIXTURES})

# tiny_resnet: the last ReLU (out.relu, [b, 8, 16, 16]) is read in backward only by its own
# threshold_backward (GlobalAveragePool's backward reads no activation), so the partitioner keeps
# a bool mask of it instead: 2 * 8 * 16 * 16 = 4096 elements x (4 - 1) bytes = 12288 fewer saved
# bytes at batch 2. The JSON names the flag either way.
memplan_cli_test("--compile is named in the JSON" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"optimizer_in_backward\": false,\n    \"compile\": true"
  COMMAND analyze ${F}/tiny_resnet.onnx --gpu 24G --batch 2 --precision fp32 --recompute none
          --compile --json)
memplan_cli_test("without --compile the JSON says compile false" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"compile\": false"
  COMMAND analyze ${F}/tiny_resnet.onnx --gpu 24G --batch 2 --precision fp32 --recompute none
          --json)
memplan_cli_test("--compile is named in the text report" EXPECT_EXIT 0
  EXPECT_OUTPUT "\nCompile  torch.compile \\(Inductor\\): saved set of AOTAutograd's min-cut partitioner \\(pointwise chains re-run in backward, 0 nodes re-run\\)\n"
  COMMAND analyze ${F}/tiny_resnet.onnx --gpu 24G --batch 2 --precision fp32 --recompute none
          --compile)
memplan_cli_test("--compile saves the last ReLU's bool mask: 12288 bytes fewer at batch 2"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"out_relu\": 4096,"
  COMMAND analyze ${F}/tiny_resnet.onnx --gpu 24G --batch 2 --precision fp32 --recompute none
          --compile --json)
memplan_cli_test("eager keeps the last ReLU's fp32 output: 16384 bytes at batch 2" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"out_relu\": 16384,"
  COMMAND analyze ${F}/tiny_resnet.onnx --gpu 24G --batch 2 --precision fp32 --recompute none
          --json)
memplan_cli_test("--compile with --offload activations is refused in one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --compile and --offload activations: [^\n]*\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 2 --recompute none --compile
          --offload activations)

# Exports: one test per target with a switch.
memplan_cli_test("--compile: torchtune's compile: True" EXPECT_EXIT 0
  EXPECT_OUTPUT "\ncompile: True\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --compile
          --export torchtune)
memplan_cli_test("--compile: the Trainer's torch_compile=True" EXPECT_EXIT 0
  EXPECT_OUTPUT "\n    torch_compile=True,\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --compile
          --export hf-trainer)
memplan_cli_test("--compile: TrainingArguments JSON torch_compile true" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"torch_compile\": true"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --compile
          --export hf-trainer-json)
memplan_cli_test("--compile: Accelerate's dynamo_backend INDUCTOR" EXPECT_EXIT 0
  EXPECT_OUTPUT "\ndistributed_type: 'NO'\ndynamo_config:\n  dynamo_backend: INDUCTOR\nmachine_rank: 0\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --compile
          --export accelerate)
memplan_cli_test("--compile: the PyTorch loop compiles the model" EXPECT_EXIT 0
  EXPECT_OUTPUT "\n    model = torch.compile\\(model\\)  # planned with --compile\n    optimizer = make_optimizer"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --compile
          --export pytorch)
memplan_cli_test("--compile: the torchrun script compiles the sharded model" EXPECT_EXIT 0
  EXPECT_OUTPUT "\n    model = torch.compile\\(model\\)  # planned with --compile\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --gpus 2
          --parallel ddp --compile --export pytorch)
memplan_cli_test("--compile: Lightning fits the compiled module" EXPECT_EXIT 0
  EXPECT_OUTPUT "\n# Planned with --compile: fit the compiled module, trainer.fit\\(torch.compile\\(module\\), ...\\).\ntrainer = pl.Trainer\\(\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --compile
          --export lightning)
memplan_cli_test("--compile: DeepSpeed's JSON has no switch and refuses in one line"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*export: deepspeed cannot express --compile [^\n]*\n$"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --compile
          --export deepspeed)

# The torch.compile rows of docs/compile_rows.jsonl (tools/recipes/measure_compile.py, torch's
# own min-cut partitioner and Inductor on the CPU): each stored block planned with --compile
# saves torch's compiled bytes within 2%.
add_test(NAME "cli: the compile rows' compiled saved bytes are re-predicted within 2%"
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tools/recipes/repredict_compile_rows.py
                 --memplan $<TARGET_FILE:memplan>
                 --rows ${CMAKE_SOURCE_DIR}/docs/compile_rows.jsonl
                 --graphs ${CMAKE_SOURCE_DIR}/tests/fixtures/recipe_rows --check --compiled)
set_tests_properties("cli: the compile rows' compiled saved bytes are re-predicted within 2%"
                     PROPERTIES TIMEOUT 300)
