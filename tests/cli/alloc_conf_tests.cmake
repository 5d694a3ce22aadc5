# --alloc-conf (issue 41 item 5): the PYTORCH_CUDA_ALLOC_CONF a run sets, modelled by analyze, named
# in the text and JSON reports, written into every script export and refused by the config-only
# targets. (That the setting changes the peak as PyTorch's rules say is pinned in
# tests/analyzer/planning/planner_capacity_test.cc against an independent simulation.)
set(F ${MEMPLAN_TEST_FIXTURES})

memplan_cli_test("--alloc-conf expandable_segments:True plans the expandable model, in the JSON"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"allocator\": \"expandable\",.*\"alloc_conf\": \"expandable_segments:True\","
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32
          --alloc-conf expandable_segments:True --json)
memplan_cli_test("--alloc-conf is named in the text report in PyTorch's canonical order"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128,roundup_power2_divisions:4 \\(modelled; the exports set it\\)"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32
          --alloc-conf roundup_power2_divisions:4,max_split_size_mb:128)
memplan_cli_test("without --alloc-conf the JSON has no alloc_conf" EXPECT_EXIT 0
  EXPECT_NO_OUTPUT "alloc_conf"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --json)

# Every script target sets it before torch is imported; one test per target.
memplan_cli_test("--alloc-conf: the PyTorch loop sets it before importing torch" EXPECT_EXIT 0
  EXPECT_OUTPUT "import os\n\n# The caching allocator as memplan planned it[^\n]*\n[^\n]*\nos.environ\\[\"PYTORCH_CUDA_ALLOC_CONF\"\\] = \"max_split_size_mb:64\"\n\nimport torch\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32
          --alloc-conf max_split_size_mb:64 --export pytorch)
memplan_cli_test("--alloc-conf: the torchrun script sets it before importing torch" EXPECT_EXIT 0
  EXPECT_OUTPUT "import os\n\n# The caching allocator[^\n]*\n[^\n]*\nos.environ\\[\"PYTORCH_CUDA_ALLOC_CONF\"\\] = \"expandable_segments:True\"\n\nimport torch\nimport torch.distributed as dist\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --gpus 2
          --parallel ddp --alloc-conf expandable_segments:True --export pytorch)
memplan_cli_test("--alloc-conf: the Lightning script sets it before importing lightning"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "os.environ\\[\"PYTORCH_CUDA_ALLOC_CONF\"\\] = \"expandable_segments:True\"\n\nimport lightning.pytorch as pl"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32
          --alloc-conf expandable_segments:True --export lightning)
memplan_cli_test("--alloc-conf: the HF Trainer script sets it before its imports" EXPECT_EXIT 0
  EXPECT_OUTPUT "os.environ\\[\"PYTORCH_CUDA_ALLOC_CONF\"\\] = \"roundup_power2_divisions:8\"\n\nfrom transformers import TrainingArguments"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32
          --alloc-conf roundup_power2_divisions:8 --export hf-trainer)
memplan_cli_test("--allocator expandable alone is exported as expandable_segments:True"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "os.environ\\[\"PYTORCH_CUDA_ALLOC_CONF\"\\] = \"expandable_segments:True\""
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32
          --allocator expandable --export pytorch)
foreach(target deepspeed accelerate hf-trainer-json torchtune)
  memplan_cli_test("--alloc-conf export to ${target} (a config file) is one line, exit 2"
    EXPECT_EXIT 2
    EXPECT_OUTPUT "^memplan: export: ${target} \\(a config file\\) cannot set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64, [^\n]*\n$"
    COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32
            --alloc-conf max_split_size_mb:64 --export ${target})
endforeach()

# Bad input: one line, exit 2.
memplan_cli_test("--alloc-conf with an unknown option is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --alloc-conf: [^\n]*\n$"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --alloc-conf backend:cudaMallocAsync)
memplan_cli_test("--alloc-conf expandable_segments:True with --allocator exact is one line, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --alloc-conf expandable_segments:True plans reserved bytes; --allocator exact plans live bytes: give one of them\n$"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --allocator exact
          --alloc-conf expandable_segments:True)

# The fits decision releases free cached segments as PyTorch does (planner.cc,
# ReservedUnderCapacity). Llama 3 8B (zoo), pure bf16, foreach AdamW, m = 1, seq 2048, H100: at the
# optimizer step the live bytes are 5 x 16,060,522,496 (bf16 parameters, gradients, exp_avg,
# exp_avg_sq and the foreach exp_avg_sq_sqrt list) = 80,302,612,480 B, under the budget
# 85,520,809,984 - 536,870,912 = 84,983,939,072 B; the activations' segments freed to the cache
# before the step put the unconstrained reserved peak over it.
memplan_cli_test("zoo llama3_8b fits by releasing cached segments at the optimizer step"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"budget_bytes\": 84983939072,.*\"exact_peak_bytes\": 80302612480,.*\"fits\": true,\n  \"reserved_without_limit_bytes\": [0-9]+,\n  \"fits_by_releasing_cache\": true,"
  COMMAND analyze ${MEMPLAN_ZOO_DIR}/llama3_8b.onnx --gpu H100 --micro-batch 1 --dim seq=2048
          --precision bf16 --amp-mode pure --optimizer adamw --optimizer-impl foreach
          --recompute none --headroom 0 --json)
