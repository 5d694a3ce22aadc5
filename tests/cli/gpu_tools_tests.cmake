# tools/gpu/compare_with_torch.py stays runnable where no GPU is: on the CPU (Debian's torch 1.13
# and torchvision) it exports a model in training mode in a child process, runs memplan analyze
# with the row's flags and one PyTorch step, and writes a row; --strict fails on any error.
# Skipped (77) without /usr/bin/python3, torch and torchvision. On a GPU it also measures
# (docs/measurements.md, "memplan against PyTorch on an H100").
add_test(NAME "cli: compare_with_torch.py writes a row on the CPU"
         COMMAND sh -c "/usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null || exit 77; out=$(mktemp -d); /usr/bin/python3 \"$0\" --memplan \"$1\" --only mobilenet_v3_large --configs fp32 --batch 1 --device cpu --strict --out \"$out/rows.jsonl\" && grep -q '\"predicted_allocated_bytes\": [1-9]' \"$out/rows.jsonl\"; status=$?; rm -rf \"$out\"; exit $status"
                 ${CMAKE_SOURCE_DIR}/tools/gpu/compare_with_torch.py $<TARGET_FILE:memplan>)
set_tests_properties("cli: compare_with_torch.py writes a row on the CPU"
                     PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)

# The H100 and H200 rows of docs/gpu_validation.jsonl, re-predicted on their stored exports
# (tests/fixtures/gpu_rows, weights stripped, xz): memplan's saved bytes equal PyTorch's measured
# ones (1 MiB or 0.1%) and its allocated peak is within 3% of max_memory_allocated on every row
# but the listed open ones: EfficientNet-B0 in bf16 (-3.8%) and R3D-18 (-4.1%, -4.4%), cuDNN
# workspaces, not modelled; T5-small bf16/sdpa/checkpoint (+22%, saved -9.5 MiB: the recompute of
# a checkpointed T5 block under SDPA, not investigated; the other four T5 sdpa rows, predicted
# since issue 41 item 6, are within 0.5%). (Issue 41's Python-reference holds closed the frozen backbone, -10.9%
# -> 0.0%, and brought the other bf16 CNNs and torchvision ViT within 3%.)
# A change to the memory model that moves a real measured row out of tolerance fails here.
add_test(NAME "cli: the recorded GPU rows are re-predicted within tolerance"
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tools/gpu/repredict_rows.py
                 --memplan $<TARGET_FILE:memplan>
                 --graphs ${CMAKE_SOURCE_DIR}/tests/fixtures/gpu_rows
                 --rows ${CMAKE_SOURCE_DIR}/docs/gpu_validation.jsonl --check
                 --open "efficientnet_b0:bf16,r3d_18:fp32,r3d_18:bf16,t5-small:bf16/sdpa/checkpoint")
set_tests_properties("cli: the recorded GPU rows are re-predicted within tolerance"
                     PROPERTIES TIMEOUT 900)

# Issue 41: memplan's caching-allocator peak against max_memory_reserved on every recorded row
# whose reserved figure is clean. Target: never under by more than 1%, median over-prediction at
# most 5%. The rows that do not reach it yet are listed in reserved_bounds.json, each held to its
# achieved error (less 0.5 points) with the rule memplan lacks; a listed row that reaches the
# target fails too, so the list only shrinks.
add_test(NAME "cli: the recorded GPU rows' reserved predictions hold their bounds"
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tools/gpu/repredict_rows.py
                 --memplan $<TARGET_FILE:memplan>
                 --graphs ${CMAKE_SOURCE_DIR}/tests/fixtures/gpu_rows
                 --rows ${CMAKE_SOURCE_DIR}/docs/gpu_validation.jsonl
                 --check-reserved ${CMAKE_SOURCE_DIR}/tests/fixtures/gpu_rows/reserved_bounds.json)
set_tests_properties("cli: the recorded GPU rows' reserved predictions hold their bounds"
                     PROPERTIES TIMEOUT 900)
