# A Hugging Face config as the model (issue 43, item 3): analyzer/pipeline/hugging_face_config.h.
set(HF_CONFIGS ${MEMPLAN_TEST_FIXTURES}/hf_configs)

# Ten families converted, planned and verified on the CPU runtime, where a Python with torch and
# transformers exists (skipped in CI, which has no torch venv).
add_test(NAME "cli: Hugging Face configs of ten families convert, plan and verify"
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hf_config_test.sh $<TARGET_FILE:memplan>
                 ${HF_CONFIGS} ${CMAKE_CURRENT_BINARY_DIR}/hf_configs)
set_tests_properties("cli: Hugging Face configs of ten families convert, plan and verify" PROPERTIES
                     SKIP_RETURN_CODE 77 TIMEOUT 900)

# Without torch and transformers: one line naming the Python and how to install them, exit 2.
memplan_cli_test("a Hugging Face config without transformers is one line naming the fix"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: '[^']*/llama' is a Hugging Face config; converting it needs torch, transformers and onnx \\(No module named '[a-z_]+'\\) in [^ ]*python_without_site.sh: tools/setup_torch_env.sh installs them, MEMPLAN_PYTHON names the Python to use\n$"
  COMMAND analyze ${HF_CONFIGS}/llama --gpu 24G)
set_tests_properties("cli: a Hugging Face config without transformers is one line naming the fix"
  PROPERTIES ENVIRONMENT
  "MEMPLAN_PYTHON=${CMAKE_CURRENT_SOURCE_DIR}/python_without_site.sh;MEMPLAN_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/hf_no_python")

memplan_cli_test("a Hugging Face config with no Python to run is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot run /nonexistent/python3: No such file or directory\n$"
  COMMAND analyze ${HF_CONFIGS}/gpt2/config.json --gpu 24G)
set_tests_properties("cli: a Hugging Face config with no Python to run is one line"
  PROPERTIES ENVIRONMENT
  "MEMPLAN_PYTHON=/nonexistent/python3;MEMPLAN_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/hf_no_python")

memplan_cli_test("a directory without config.json is not a model, one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot open model '[^']*hf_configs': it is a directory without a Hugging Face config.json\n$"
  COMMAND analyze ${HF_CONFIGS} --gpu 24G)

# Hub ids (`memplan analyze owner/name`): resolved offline from a fake huggingface_hub cache, and
# the refusals (offline, no network, unknown, gated) against a local stand-in hub, where a Python
# with torch, transformers and huggingface_hub exists (skipped in CI).
add_test(NAME "cli: a Hugging Face hub id resolves from the hub cache offline, refusals one line"
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hf_hub_test.sh $<TARGET_FILE:memplan>
                 ${HF_CONFIGS} ${CMAKE_CURRENT_BINARY_DIR}/hf_hub)
set_tests_properties("cli: a Hugging Face hub id resolves from the hub cache offline, refusals one line"
                     PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)

# Without huggingface_hub (nor torch, transformers): a hub id is one line naming the fix.
memplan_cli_test("a Hugging Face hub id without the libraries is one line naming the fix"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: 'acme/tiny-llama' is no local path, so it names a Hugging Face repository; resolving it needs torch, transformers and onnx \\(No module named '[a-z_]+'\\) in [^ ]*python_without_site.sh: tools/setup_torch_env.sh installs them, MEMPLAN_PYTHON names the Python to use\n$"
  COMMAND analyze acme/tiny-llama --gpu 24G)
set_tests_properties("cli: a Hugging Face hub id without the libraries is one line naming the fix"
  PROPERTIES ENVIRONMENT
  "MEMPLAN_PYTHON=${CMAKE_CURRENT_SOURCE_DIR}/python_without_site.sh;MEMPLAN_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/hf_no_python")

# A local path that looks like owner/name is the local path (here the folder hf_configs/llama,
# relative to the fixtures): the config's message, not the hub's.
memplan_cli_test("a local path that looks like owner/name is the local path" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: 'hf_configs/llama' is a Hugging Face config; converting it needs"
  COMMAND analyze hf_configs/llama --gpu 24G)
set_tests_properties("cli: a local path that looks like owner/name is the local path"
  PROPERTIES WORKING_DIRECTORY ${MEMPLAN_TEST_FIXTURES} ENVIRONMENT
  "MEMPLAN_PYTHON=${CMAKE_CURRENT_SOURCE_DIR}/python_without_site.sh;MEMPLAN_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/hf_no_python")

# A missing file with an ONNX or JSON extension is a missing file, not a hub id.
memplan_cli_test("a missing owner/name.onnx is a missing file, not a hub id" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot open model 'acme/model.onnx': no such file\n$"
  COMMAND analyze acme/model.onnx --gpu 24G)

# SDPA in converted configs (weight-free graphs kept in tests/fixtures/hf_converted, made by its
# make_fixtures.py from hf_configs with tools/hf_config_to_onnx.py): the dynamo exporter
# decomposes transformers' SDPA into Reshape/Transpose/Reshape of the key, Sqrt(scale) on q and
# k^T, MatMul, Add(mask), Softmax, Where(IsNaN(P), 0, P), MatMul. Each config has 2 layers, so 2
# attentions; Llama's config has 4 query heads and 2 key/value heads (grouped-query).
set(HFC ${MEMPLAN_TEST_FIXTURES}/hf_converted)
memplan_cli_test("converted Llama: --attention sdpa fuses its 2 grouped-query attentions"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"requested\": \"sdpa\",\n      \"fused\": 2,.*\"node\": \"/model/layers.0/self_attn/ScaledDotProductAttention\",\n          \"mask\": \"add\",\n          \"grouped_query\": true,"
  COMMAND analyze ${HFC}/llama.onnx --gpu 24G --dim seq=128 --precision bf16 --attention sdpa --json)
memplan_cli_test("converted BERT: --attention sdpa fuses its 2 attentions" EXPECT_EXIT 0
  EXPECT_OUTPUT "Attn +sdpa: 2 attentions fused into scaled_dot_product_attention"
  COMMAND analyze ${HFC}/bert.onnx --gpu 24G --dim seq=128 --attention sdpa)
memplan_cli_test("converted GPT-2: the default auto fuses its 2 attentions" EXPECT_EXIT 0
  EXPECT_OUTPUT "Attn +sdpa: 2 attentions fused into scaled_dot_product_attention"
  COMMAND analyze ${HFC}/gpt2.onnx --gpu 24G --dim seq=128)
memplan_cli_test("converted Llama with the fused attention verifies on the CPU runtime"
  EXPECT_EXIT 0 EXPECT_OUTPUT "exact match  PASS.*result: PASS"
  COMMAND verify ${HFC}/llama.onnx --batch 2 --dim seq=16 --precision bf16 --attention sdpa --steps 2)
# The dynamo exporter lifts F.dropout's p into a one-element initializer; under bf16 autocast it
# is read as stored (graph/ops: Dropout's ratio is a scalar argument), so the Dropout's backward
# finds it. Before, verify stopped with "Dropout: backward needs the ratio input (a constant)".
memplan_cli_test("converted BERT verifies under bf16 (its Dropout ratio is not cast)"
  EXPECT_EXIT 0 EXPECT_OUTPUT "exact match  PASS.*result: PASS"
  COMMAND verify ${HFC}/bert.onnx --batch 2 --dim seq=16 --precision bf16 --steps 2)
memplan_cli_test("converted GPT-2 verifies under bf16 eager attention (its Dropout ratios)"
  EXPECT_EXIT 0 EXPECT_OUTPUT "exact match  PASS.*result: PASS"
  COMMAND verify ${HFC}/gpt2.onnx --batch 2 --dim seq=16 --precision bf16 --attention eager
  --steps 2)
