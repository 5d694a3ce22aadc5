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
