# Regexes keep [ and ] balanced: CMake's list splitting counts brackets even when escaped.
# `memplan inspect` on the checked-in fixtures (tests/fixtures, made by make_fixtures.py and
# make_torch_fixtures.py). Expected numbers are derived from the fixture scripts, not from
# memplan's output.
set(F ${MEMPLAN_TEST_FIXTURES})

memplan_cli_test("inspect missing file is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot open model '${F}/no_such_model.onnx': no such file\n$"
  COMMAND inspect ${F}/no_such_model.onnx)
memplan_cli_test("inspect a directory is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot open model[^\n]+directory[^\n]*\n$" COMMAND inspect ${F})
memplan_cli_test("inspect a truncated file is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]+\n$" COMMAND inspect ${F}/truncated.onnx)

# tiny_mlp: x[batch,16] -> MatMul W1[16,32] -> Add b1 -> Relu -> MatMul W2[32,4] -> Add b2.
# Parameters 16*32 + 32 + 32*4 + 4 = 676 float32 = 2704 bytes; 5 nodes.
memplan_cli_test("inspect json: schema and node count" EXPECT_EXIT 0
  EXPECT_OUTPUT "^{\n  \"schema\": \"memplan/1\",\n  \"command\": \"inspect\",.*\"node_count\": 5,"
  COMMAND inspect ${F}/tiny_mlp.onnx --json)
memplan_cli_test("inspect json: parameters" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"parameter_count\": 676,\n  \"parameter_bytes\": 2704,"
  COMMAND inspect ${F}/tiny_mlp.onnx --json)
memplan_cli_test("inspect json: op histogram" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"ops\": {\n    \"Add\": 2,\n    \"MatMul\": 2,\n    \"Relu\": 1\n  },"
  COMMAND inspect ${F}/tiny_mlp.onnx --format json)
memplan_cli_test("inspect json: symbolic input dims, bound by --batch" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"name\": \"x\",.*\"dims\": \\[\n *\"batch\",\n *\"16\"\n *\\],\n *\"bound_dims\": \\[\n *32,\n *16\n *\\]"
  COMMAND inspect ${F}/tiny_mlp.onnx --json --batch 32)
memplan_cli_test("inspect text: bound shape" EXPECT_EXIT 0
  EXPECT_OUTPUT "x +float32 +\\[batch, 16\\] = \\[32, 16\\]"
  COMMAND inspect ${F}/tiny_mlp.onnx --batch 32)
memplan_cli_test("inspect text: parameters" EXPECT_EXIT 0
  EXPECT_OUTPUT "parameters  676 \\(2.6 KiB\\)" COMMAND inspect ${F}/tiny_mlp.onnx)
memplan_cli_test("inspect markdown" EXPECT_EXIT 0 EXPECT_OUTPUT "^# memplan inspect: .*\\| MatMul \\| 2 \\|"
  COMMAND inspect ${F}/tiny_mlp.onnx --format markdown)
memplan_cli_test("inspect --dim naming a missing symbol lists the model's" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --dim seq=4: the model has no dimension named 'seq'. its symbolic dimensions are: batch[^\n]*\n$"
  COMMAND inspect ${F}/tiny_mlp.onnx --dim seq=4)
memplan_cli_test("inspect --batch and --dim batch bind twice" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: dimension 'batch' is bound twice \\(--batch 2 and --dim batch=3\\)\n$"
  COMMAND inspect ${F}/tiny_mlp.onnx --batch 2 --dim batch=3)

# unknown_op: Relu -> com.example:MysteryOp -> Relu.
memplan_cli_test("inspect lists unknown ops" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"unknown_ops\": \\[\n    \"com.example:MysteryOp\"\n  \\]"
  COMMAND inspect ${F}/unknown_op.onnx --json)

# fixed_batch: x[8,4] -> Relu: no batch symbol to bind.
memplan_cli_test("inspect passes on the importer's fixed-batch warning" EXPECT_EXIT 0
  EXPECT_OUTPUT "warnings\n  - input 'x' has [^\n]*batch" COMMAND inspect ${F}/fixed_batch.onnx)
memplan_cli_test("inspect --batch on a fixed-batch model is exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --batch: the model has no symbolic batch dimension[^\n]+\n$"
  COMMAND inspect ${F}/fixed_batch.onnx --batch 4)

# torchvision resnet18 exported in training mode: 20 Conv, 20 BatchNormalization
# (training_mode=1), 69 nodes; no inference-export warning.
memplan_cli_test("inspect resnet18 op histogram" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"node_count\": 69,.*\"BatchNormalization\": 20,\n    \"Conv\": 20,"
  COMMAND inspect ${F}/resnet18_opset17.onnx --json)
memplan_cli_test("inspect resnet18 training export has no export warning" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"warnings\": \\[\\]\n}\n$" COMMAND inspect ${F}/resnet18_opset17.onnx --json)
# nn.TransformerEncoder exported in training mode keeps its 8 Dropout nodes.
memplan_cli_test("inspect transformer keeps Dropout" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"Dropout\": 8,.*\"symbols\": \\[\n    {\n      \"name\": \"batch\",\n      \"is_batch\": true,\n      \"value\": 4\n    },\n    {\n      \"name\": \"seq\",\n      \"is_batch\": false,\n      \"value\": 128\n    }\n  \\],"
  COMMAND inspect ${F}/transformer_opset17.onnx --json --batch 4 --dim seq=128)

# Byte-identical JSON for identical input (CI diffs it).
add_test(NAME "cli: inspect json is byte-identical across runs"
  COMMAND sh -c "\"$1\" inspect \"$2\" --json > \"$3.a\" && \"$1\" inspect \"$2\" --json > \"$3.b\" && cmp \"$3.a\" \"$3.b\""
          sh $<TARGET_FILE:memplan> ${F}/transformer_opset17.onnx ${CMAKE_CURRENT_BINARY_DIR}/inspect_determinism)
# Human output fits 80 columns.
add_test(NAME "cli: inspect text fits 80 columns"
  COMMAND sh -c "\"$1\" inspect \"$2\" --batch 8 --dim seq=64 > \"$3\" && ! awk 'length > 80' \"$3\" | grep -q ."
          sh $<TARGET_FILE:memplan> ${F}/transformer_opset17.onnx ${CMAKE_CURRENT_BINARY_DIR}/inspect_width.txt)

# Zoo models (written into ${MEMPLAN_ZOO_DIR} at build time). Parameter counts are the published
# ones of the reference implementations: GPT-2 small 124,439,808 (Hugging Face GPT2Model);
# BERT-base 109,482,240 (BertModel with pooler); ViT-B/16 86,567,656 (torchvision vit_b_16).
memplan_parameter_count_test("inspect zoo gpt2_small parameters" ${MEMPLAN_ZOO_DIR}/gpt2_small.onnx 124439808)
memplan_parameter_count_test("inspect zoo bert_base parameters" ${MEMPLAN_ZOO_DIR}/bert_base.onnx 109482240)
memplan_parameter_count_test("inspect zoo vit_b16 parameters" ${MEMPLAN_ZOO_DIR}/vit_b16.onnx 86567656)
# BERT's outputs have 63-character names: they get a line of their own.
add_test(NAME "cli: inspect text of bert_base fits 80 columns"
  COMMAND sh -c "\"$1\" inspect \"$2\" --batch 8 --dim seq=64 > \"$3\" && ! awk 'length > 80' \"$3\" | grep -q ."
          sh $<TARGET_FILE:memplan> ${MEMPLAN_ZOO_DIR}/bert_base.onnx ${CMAKE_CURRENT_BINARY_DIR}/inspect_width_bert.txt)

# resnet18_functions_opset17.onnx writes each BasicBlock as a model-local function
# (make_torch_fixtures.py, export_modules_as_functions): 8 blocks, two variants (with and without
# a downsample). inspect counts the bodies' ops: resnet18's 20 Conv and 20 BatchNormalization.
memplan_cli_test("inspect expands model-local functions into their ops" EXPECT_EXIT 0
  EXPECT_OUTPUT "BatchNormalization +20 +GlobalAveragePool.*8 calls of 2 model-local functions \\(torchvision\\.models\\.resnet\\.BasicBlock,"
  COMMAND inspect ${F}/resnet18_functions_opset17.onnx)
