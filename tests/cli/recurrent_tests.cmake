# LSTM/GRU/RNN through the CLI (tests/fixtures/lstm_layer.textproto, lstm_bad_direction.textproto,
# encoded by make_textproto_fixtures.sh).
set(F ${MEMPLAN_TEST_FIXTURES})

# nn.LSTM(16, 32, bidirectional=True): per direction 4*32*(16 + 32) + 2*4*32 = 6144 + 256 = 6400;
# two directions = 12800 parameters.
memplan_parameter_count_test("inspect an LSTM layer counts nn.LSTM's parameters" ${F}/lstm_layer.onnx 12800)
# seq 64, batch 4, fp32: the layer keeps Y [64, 2, 4, 32] = 65536 bytes and the reserve space
# [64, 4, 2, 6*32] = 98304 floats = 393216 bytes (X is a graph input): 458752 bytes.
memplan_cli_test("analyze an LSTM layer: Y and the reserve space are saved" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"lstm\": 458752"
  COMMAND analyze ${F}/lstm_layer.onnx --gpu 24G --micro-batch 4 --batch-dim batch --dim seq=64
          --precision fp32 --recompute none --json)
memplan_cli_test("inspect an LSTM with an unknown direction: one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: node 'lstm' \\(LSTM\\): direction 'sideways' is not forward, reverse or bidirectional\n$"
  COMMAND inspect ${F}/lstm_bad_direction.onnx)
# verify runs the layer on the CPU kernel (runtime/cpu/kernels/recurrent.cc, checked against
# torch.lstm in tests/runtime/kernel_reference_test.cc). tests/fixtures/lstm_batch_first.textproto,
# nn.LSTM(8, 4) with layout 1, at batch 2 and seq 5: the layer keeps Y [2, 5, 1, 4] = 40 floats
# and the reserve [5, 2, 1, 6*4] = 240 floats: 1120 bytes of activations, measured as predicted.
memplan_cli_test("verify runs an LSTM layer on the CPU: memory exact, checks pass" EXPECT_EXIT 0
  EXPECT_OUTPUT "activations +predicted +1120 +measured +1120.*result: PASS"
  COMMAND verify ${F}/lstm_batch_first.onnx --micro-batch 2 --dim seq=5 --loss mse)
