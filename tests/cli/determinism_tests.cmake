# Determinism (issue 14): identical input gives byte-identical output, so CI can diff plans.
# analyze walks the whole search (micro-batch, precision, recompute), whose ties must break the
# same way every run; the export and the SVG are written from that plan.
set(F ${MEMPLAN_TEST_FIXTURES})
add_test(NAME "cli: analyze json is byte-identical across runs"
  COMMAND sh -c "for i in a b; do \"$1\" analyze \"$2\" --gpu 24G --dim seq=128 --json > \"$3.$i\" || exit 1; done; cmp \"$3.a\" \"$3.b\""
          sh $<TARGET_FILE:memplan> ${F}/transformer_opset17.onnx ${CMAKE_CURRENT_BINARY_DIR}/analyze_determinism)
add_test(NAME "cli: analyze text and the PyTorch export are byte-identical across runs"
  COMMAND sh -c "\"$1\" analyze \"$2\" --gpu 8G --global-batch 64 --json > \"$3.plan.json\" || exit 1; for i in a b; do \"$1\" analyze \"$2\" --gpu 8G --global-batch 64 > \"$3.$i.txt\" && \"$1\" export \"$3.plan.json\" --to pytorch > \"$3.$i.py\" || exit 1; done; cmp \"$3.a.txt\" \"$3.b.txt\" && cmp \"$3.a.py\" \"$3.b.py\""
          sh $<TARGET_FILE:memplan> ${F}/tiny_mlp.onnx ${CMAKE_CURRENT_BINARY_DIR}/analyze_text_determinism)
