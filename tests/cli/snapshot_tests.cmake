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
