# `memplan replay` (issue 41) on snapshots written by hand in PyTorch's schema
# (tests/fixtures/snapshots/make_snapshots.py: the allocator's rules worked out per event) and
# converted by tools/snapshot_to_json.py. None of them came from a GPU run (docs/snapshots.md).
set(S ${MEMPLAN_TEST_FIXTURES}/snapshots)
# 5 MiB -> 20 MiB segment, 5 MiB split off it, 12 MiB -> 12 MiB segment, 100 B -> 2 MiB small
# segment: PyTorch's trace and the model both reserve 20 + 12 + 2 = 34 MiB.
memplan_cli_test("replay of a trace that follows the allocator's rules finds no divergence"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "reserved peak +34\\.0 MiB +34\\.0 MiB\n.*segments made +3 +3\n.*no divergence"
  COMMAND replay ${S}/follows_rules.json)
# The second 5 MiB fits the first segment's 15 MiB remainder; the trace made a new 20 MiB one.
memplan_cli_test("replay names the first alloc where PyTorch made a segment the rules would not"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "first divergent event: #3 alloc of 5\\.0 MiB on stream 0: PyTorch reserved 20\\.0 MiB, the model 0 B\n  at train\\.py:42 training_step"
  COMMAND replay ${S}/diverges.json)
# release_cached_blocks before the failed retry frees the all-free 20 MiB segment; the model's
# empty_cache releases the same 20 MiB; the 80 GiB request is event #7.
memplan_cli_test("replay --json reports the OOM and the release before it"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"peak_reserved_bytes\": 33554432,.*\"end_reserved_bytes\": 12582912,.*\"first_divergence\": null,.*\"ooms\": .\n +.\n +\"event\": 7,\n +\"size\": 85899345920,\n +\"stream\": 0,\n +\"reserved_bytes\": 12582912,"
  COMMAND replay ${S}/oom.json --json)
# Bad snapshots: one line, exit 2.
memplan_cli_test("replay of a truncated snapshot is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*truncated\\.json is not valid JSON \\(truncated\\?\\)\n$"
  COMMAND replay ${S}/truncated.json)
memplan_cli_test("replay of another schema is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*wrong_schema\\.json: not a memplan snapshot: expected \"schema\": \"memplan-snapshot/1\"[^\n]*\n$"
  COMMAND replay ${S}/wrong_schema.json)
memplan_cli_test("replay of a 2^60-byte request is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*huge\\.json: events\\[1\\] size is above 2\\^50 bytes\n$"
  COMMAND replay ${S}/huge.json)
memplan_cli_test("replay of the pickle itself asks for the converter, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*oom\\.pickle is a pickle: convert it first \\(tools/snapshot_to_json\\.py[^\n]*\n$"
  COMMAND replay ${S}/oom.pickle)
memplan_cli_test("replay of a missing file is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot read [^\n]*no_such\\.json\n$"
  COMMAND replay ${S}/no_such.json)

# The converter (stdlib Python only): the fixtures' JSON is what it writes for their pickles, and
# a pickle that names a global (os.system) is refused with exit 2, never called.
add_test(NAME "cli: snapshot_to_json.py converts the fixture pickles to their JSON"
         COMMAND sh -c "out=$(mktemp -d); for n in follows_rules diverges oom oversize; do python3 \"$0\" \"$1/$n.pickle\" \"$out/$n.json\" >/dev/null && cmp \"$out/$n.json\" \"$1/$n.json\" || { rm -rf \"$out\"; exit 1; }; done; rm -rf \"$out\""
                 ${CMAKE_SOURCE_DIR}/tools/snapshot_to_json.py ${S})
add_test(NAME "cli: snapshot_to_json.py refuses a pickle that names a global, exit 2"
         COMMAND sh -c "out=$(mktemp -d); python3 \"$0\" \"$1/global.pickle\" \"$out/g.json\" 2>\"$out/err\"; status=$?; grep -q 'names os.system: not a plain snapshot' \"$out/err\" && [ ! -e \"$out/g.json\" ] && [ $status -eq 2 ]; ok=$?; rm -rf \"$out\"; exit $ok"
                 ${CMAKE_SOURCE_DIR}/tools/snapshot_to_json.py ${S})

# `memplan explain`: at oom.json's OOM (event #7) PyTorch holds 12 MiB reserved (32 MiB less the
# 20 MiB segment release_cached_blocks freed), all of it the live 12 MiB block (train.py frames:
# activations), so nothing is cached but free and the 80 GiB request needs smaller live blocks.
memplan_cli_test("explain names the OOM, what held memory and that no fragmentation was left"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "out of memory at event #7: a request of 80\\.0 GiB with 12\\.0 MiB reserved\n.*  activations +12\\.0 MiB\n  cached but free +0 B\n.*The request exceeds the 0 B PyTorch held cached but free"
  COMMAND explain ${S}/oom.json)
# No OOM: the focus is PyTorch's reserved peak, event #7 (the 2 MiB small segment: 34 MiB); live
# then: the 5 MiB and 12 MiB blocks (17 MiB), so 34 - 17 = 17 MiB cached but free.
memplan_cli_test("explain --json without an OOM describes the reserved peak"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"event\": 7,\n  \"at_oom\": false,\n  \"reserved_bytes\": 35651584,\n  \"live_bytes\": 17825792,\n  \"cached_free_bytes\": 17825792,"
  COMMAND explain ${S}/follows_rules.json --json)
memplan_cli_test("explain of a truncated snapshot is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*truncated\\.json is not valid JSON \\(truncated\\?\\)\n$"
  COMMAND explain ${S}/truncated.json)

# --alloc-conf: the same trace under other allocator settings. oversize.json splits 10 MiB off a
# freed 40 MiB block (PyTorch's default: no new segment); with max_split_size_mb:32 that block is
# oversize, so the model opens a 10 MiB segment for the request (event #4): 50 MiB reserved.
memplan_cli_test("replay --alloc-conf max_split_size_mb:32 shows the segment that setting costs"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:32\n.*reserved peak +40\\.0 MiB +50\\.0 MiB\n.*first divergent event: #4 alloc of 10\\.0 MiB on stream 0: PyTorch reserved 0 B, the model 10\\.0 MiB"
  COMMAND replay ${S}/oversize.json --alloc-conf max_split_size_mb:32)
memplan_cli_test("replay --alloc-conf with max_split_size_mb:20 is refused as PyTorch does, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --alloc-conf: PYTORCH_CUDA_ALLOC_CONF max_split_size_mb: PyTorch requires more than 20 \\(MiB\\), got 20\n$"
  COMMAND replay ${S}/oversize.json --alloc-conf max_split_size_mb:20)
memplan_cli_test("replay --alloc-conf garbage_collection_threshold says it is not modelled, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --alloc-conf: PYTORCH_CUDA_ALLOC_CONF garbage_collection_threshold is not modelled[^\n]*\n$"
  COMMAND replay ${S}/oversize.json --alloc-conf garbage_collection_threshold:0.6)

# `memplan explain SNAPSHOT MODEL.onnx`: mlp_oom.json is tiny_mlp.onnx trained at m = 65536 in
# fp32 (make_snapshots.py derives every request by aten's and the allocator's rules; `replay`
# finds no divergence). The OOM: 8 MiB for ReluBackward's grad with 44 MiB reserved and
# device_free 16 MiB: a 60 MiB device.
# Matching by size, phase and order (docs/snapshots.md): 20 allocations, all matched but the two
# cuBLAS workspaces (8519680 B; memplan counts them outside the budget, no buffer has that size),
# the unreduced MSE loss (1 MiB, forward: memplan's forward allocates no 1 MiB after y) and
# ones_like(loss) (4 B, backward: memplan's backward has no 4 B buffer): 16.
# Live at the OOM by the category of the matched buffer (analyzer/program/memory_category.h):
# parameters W1 2048 + b1 128 + W2 512 + b2 16 = 2704 B (2.6 KiB); gradients grad(W2)@fc2 512 +
# grad(b2)@fc2_bias 16 = 528 B; activations (held for backward) h2 8 MiB + y 1 MiB = 9437184;
# transients grad(h2) 8 MiB + the loss 4 B (memplan frees it at once; the script's `loss` keeps
# it) = 8388612; other (inputs) x 4 MiB + label 1 MiB = 5 MiB; unattributed the two workspaces,
# 17039360 (16.2 MiB).
# Fragmentation: the rounding to 512 B (b1 128, b2 16, loss 4, b2's grad 16: 384 + 496 + 508 +
# 496 = 1884 B) plus what was cached but free at the OOM: D's freed first MiB, C's 1043456 B
# tail and B's 3932160 B rest = 6024192 (44 MiB less the rounded live 40113152): 6026076.
memplan_cli_test("explain with the model attributes the live blocks to memplan's buffers"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "on 60\\.0 MiB \\(the OOM's reserved 44\\.0 MiB \\+ device_free 16\\.0 MiB\\):\n  16 of 20 allocations matched.*  parameters +2\\.6 KiB\n  gradients +528 B\n  activations +9\\.0 MiB\n  transients +8\\.0 MiB\n  other +5\\.0 MiB\n  unattributed +16\\.2 MiB\n.*  8\\.1 MiB  unattributed\n  8\\.1 MiB  unattributed\n  8\\.0 MiB  h2 \\(activations\\), allocated by forward relu\n  8\\.0 MiB  grad\\(h2\\) \\(transients\\), allocated by backward"
  COMMAND explain ${S}/mlp_oom.json ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --micro-batch 65536
          --optimizer sgd --loss mse)
# JSON: the same figures; the micro-batch change keeps the global batch (--micro-batch 32768
# with --global-batch 65536: 2 accumulation steps); the budget is 60 MiB less memplan's two
# 8519680 B cuBLAS workspaces, 45875200.
memplan_cli_test("explain --json with the model lists held bytes and the micro-batch change"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"capacity_bytes\": 62914560,.*\"budget_bytes\": 45875200,.*\"snapshot_allocations\": 20,\n    \"matched_allocations\": 16,.*\"parameters\": 2704,\n      \"gradients\": 528,\n      \"optimizer_state\": 0,\n      \"activations\": 9437184,\n      \"transients\": 8388612,\n      \"workspace\": 0,\n      \"other\": 5242880,\n      \"unattributed\": 17039360,\n      \"fragmentation\": 6026076,\n      \"cached_free\": 0\n.*\"kinds\": \\[\n +\"micro_batch\"\n +\\],\n +\"flags\": \"--global-batch 65536 --micro-batch 32768\""
  COMMAND explain ${S}/mlp_oom.json ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --micro-batch 65536
          --optimizer sgd --loss mse --json)
memplan_cli_test("explain with a model but no --micro-batch is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: explain: --micro-batch is required with a model \\(the run's micro-batch\\)\n$"
  COMMAND explain ${S}/mlp_oom.json ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --optimizer sgd)
memplan_cli_test("explain without an OOM and without --gpu is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: explain: [^\n]*follows_rules\\.json has no OOM, so the device's capacity is unknown: --gpu names it\n$"
  COMMAND explain ${S}/follows_rules.json ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --micro-batch 8)
memplan_cli_test("explain with a bad plan flag is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --recompute: [^\n]*\n$"
  COMMAND explain ${S}/mlp_oom.json ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --micro-batch 8
          --recompute some)
memplan_cli_test("explain with a model whose input does not bind is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*dimension 'seq' is not bound; pass --dim seq=N\n$"
  COMMAND explain ${S}/mlp_oom.json ${MEMPLAN_TEST_FIXTURES}/transformer_opset17.onnx --micro-batch 8)
# The model does not match the snapshot: follows_rules.json's 5 MiB, 5 MiB, 12 MiB and 100 B
# requests are sizes no buffer of tiny_mlp.onnx has at m = 8 (x 512 B, h0 1 KiB, W1 2 KiB, ...).
memplan_cli_test("explain with a model that does not match the snapshot is one line, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: explain: [^\n]*tiny_mlp\\.onnx does not match [^\n]*follows_rules\\.json: none of its 3 allocations has the size of a buffer memplan plans for it \\(another model, or other --micro-batch / --dim values\\?\\)\n$"
  COMMAND explain ${S}/follows_rules.json ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --micro-batch 8
          --gpu 24G)
# --html: the page has the timeline (both lines), the OOM's rule at event #36 and the 60 MiB
# capacity line, and the text report.
add_test(NAME "cli: explain --html writes the timeline page with the OOM and the capacity"
         COMMAND sh -c "out=$(mktemp -d); \"$0\" explain \"$1\" \"$2\" --micro-batch 65536 --optimizer sgd --loss mse --html \"$out/e.html\" >/dev/null && grep -c '<polyline' \"$out/e.html\" | grep -qx 2 && grep -q 'the OOM (event #36)' \"$out/e.html\" && grep -q 'capacity 60.0 MiB' \"$out/e.html\" && grep -q '16 of 20 allocations matched' \"$out/e.html\"; s=$?; rm -rf \"$out\"; exit $s"
                 $<TARGET_FILE:memplan> ${S}/mlp_oom.json ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx)
