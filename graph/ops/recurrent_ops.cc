// LSTM, GRU and RNN (ai.onnx, opsets 7-22): one node per layer, as torch.onnx.export writes a
// multi-layer nn.LSTM/nn.GRU/nn.RNN (each layer's Y feeds the next layer's X).
//
// Inputs  X, W [D, G*H, I], R [D, G*H, H], B? [D, 2*G*H], sequence_lens? [batch],
//         initial_h? [D, batch, H], LSTM also initial_c? and P? [D, 3*H] (peepholes).
// Outputs Y?, Y_h?, LSTM also Y_c?. G = gates (LSTM 4, GRU 3, RNN 1), D = directions (2 for
// "bidirectional"), H = hidden_size (the attribute, else R's last dim). Layout 0 (default):
//   X [T, batch, I]   Y [T, D, batch, H]   Y_h/Y_c [D, batch, H]
// layout 1 (opset 14, batch first):
//   X [batch, T, I]   Y [batch, T, D, H]   Y_h/Y_c [batch, D, H]
// Parameters: W, R and B are the PyTorch module's weight_ih, weight_hh and bias_ih + bias_hh, so
// a layer counts G*H*(I + H) + 2*G*H per direction, exactly what nn.LSTM/GRU/RNN report.
//
// Saved for backward follows cuDNN, which PyTorch uses for these modules on a GPU
// (_cudnn_rnn in derivatives.yaml): the input X, the initial states hx/cx, the output sequence
// (result0) and the reserve space (result3); the weights are parameters. cuDNN's reserve size is
// opaque (cudnnGetRNNTrainingReserveSize), so it is estimated by what the same layer keeps per
// time step on PyTorch's non-cuDNN CUDA path, which derivatives.yaml states exactly:
//   * LSTM: _thnn_fused_lstm_cell keeps its workspace (the four activated gates, 4H), cy (H,
//     the next step's cx) and the mm of linear_hh keeps h_{t-1} (H): 6H per step;
//   * GRU: _thnn_fused_gru_cell keeps its workspace (r, z, n, the hidden n-gate and h_{t-1}:
//     5H) and linear_hh keeps h_{t-1} (H): 6H per step;
//   * RNN: tanh/relu keep their result h_t (H), linear_hh keeps h_{t-1} (the same tensors):
//     1H per step.
// So reserve = T * batch * D * k * H elements of X's dtype with k = 6, 6, 1. No GPU was lent
// when this was written; the estimate is not yet checked against cudnnGetRNNTrainingReserveSize.
//
// FLOPs per time step and direction: the input and recurrent projections,
// 2*batch*G*H*(I + H), plus kTranscendentalFlops per gate element for the activations.

#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"

namespace memplan {
namespace {

struct RecurrentKind {
  const char* op_type;
  int64_t gates;             // G
  int64_t reserve_per_step;  // k: hidden-sized tensors the backward keeps per step
  bool has_cell_state;       // LSTM's initial_c input and Y_c output
};

constexpr RecurrentKind kLstm{"LSTM", 4, 6, true};
constexpr RecurrentKind kGru{"GRU", 3, 6, false};
constexpr RecurrentKind kRnn{"RNN", 1, 1, false};

constexpr size_t kInputX = 0, kInputW = 1, kInputR = 2, kInitialH = 5, kInitialC = 6;

struct RecurrentDims {
  bool batch_first = false;
  Dim seq, batch, input, directions, hidden;
};

Expected<int64_t> Directions(const OpContext& ctx) {
  const std::string direction = ctx.attrs().GetString("direction", "forward");
  if (direction == "forward" || direction == "reverse") return int64_t{1};
  if (direction == "bidirectional") return int64_t{2};
  return MakeError(NodeError(
      ctx.node, "direction '" + direction + "' is not forward, reverse or bidirectional"));
}

// nullopt when X's shape or the hidden size is unknown; an error for attributes or ranks the
// spec rejects.
Expected<std::optional<RecurrentDims>> ReadRecurrentDims(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* x, RequiredInput(ctx, kInputX));
  MEMPLAN_TRY(const TensorInfo* w, RequiredInput(ctx, kInputW));
  MEMPLAN_TRY(const TensorInfo* r, RequiredInput(ctx, kInputR));
  MEMPLAN_TRY(int64_t directions, Directions(ctx));
  const int64_t layout = ctx.attrs().GetInt("layout", 0);
  if (layout != 0 && layout != 1)
    return MakeError(NodeError(ctx.node, "layout must be 0 or 1, not " + std::to_string(layout)));
  for (const TensorInfo* t : {w, r}) {
    if (t->shape.known && t->shape.rank() != 3)
      return MakeError(NodeError(ctx.node, "W and R must be 3D [directions, gates*hidden, *]"));
    if (t->shape.known && t->shape.dims[0].constant_value() &&
        *t->shape.dims[0].constant_value() != directions)
      return MakeError(NodeError(ctx.node, "W and R must have " + std::to_string(directions) +
                                               " direction(s) for direction '" +
                                               ctx.attrs().GetString("direction", "forward") +
                                               "'"));
  }
  std::optional<Dim> hidden;
  const int64_t hidden_attr = ctx.attrs().GetInt("hidden_size", 0);
  if (hidden_attr < 0) return MakeError(NodeError(ctx.node, "hidden_size must be positive"));
  if (hidden_attr > 0) hidden = Dim(hidden_attr);
  if (!hidden && r->shape.known) hidden = r->shape.dims[2];
  if (!x->shape.known || !hidden) return std::optional<RecurrentDims>{};
  if (x->shape.rank() != 3) return MakeError(NodeError(ctx.node, "X must be 3D"));
  RecurrentDims d;
  d.batch_first = layout == 1;
  d.seq = x->shape.dims[d.batch_first ? 1 : 0];
  d.batch = x->shape.dims[d.batch_first ? 0 : 1];
  d.input = x->shape.dims[2];
  d.directions = Dim(directions);
  d.hidden = *hidden;
  return std::optional<RecurrentDims>{d};
}

Expected<std::vector<TensorInfo>> RecurrentShapes(const OpContext& ctx, const RecurrentKind& kind) {
  MEMPLAN_TRY(auto dims, ReadRecurrentDims(ctx));
  auto outs = EmptyOutputs(ctx);
  for (auto& o : outs) o.dtype = ctx.inputs[kInputX].dtype;
  if (!dims) return outs;
  const RecurrentDims& d = *dims;
  if (!outs.empty()) {
    outs[0].shape = d.batch_first ? Shape{{d.batch, d.seq, d.directions, d.hidden}}
                                  : Shape{{d.seq, d.directions, d.batch, d.hidden}};
  }
  const Shape state = d.batch_first ? Shape{{d.batch, d.directions, d.hidden}}
                                    : Shape{{d.directions, d.batch, d.hidden}};
  for (size_t i = 1; i < outs.size() && i < (kind.has_cell_state ? 3u : 2u); ++i)
    outs[i].shape = state;
  return outs;
}

OpCost RecurrentCost(const OpContext& ctx, const RecurrentKind& kind) {
  auto dims = ReadRecurrentDims(ctx);
  if (!dims.ok() || !dims->has_value()) return IoCost(ctx, Dim(0));
  const RecurrentDims& d = **dims;
  const Dim gate_elements = d.seq * d.directions * d.batch * Dim(kind.gates) * d.hidden;
  return IoCost(ctx, Dim(2) * gate_elements * (d.input + d.hidden) +
                         Dim(kTranscendentalFlops) * gate_elements);
}

std::vector<SavedTensor> RecurrentSaved(const OpContext& ctx, const RecurrentKind& kind) {
  // The weights too (parameters: no bytes of their own), which the input and hidden-state
  // gradients are products with.
  std::vector<SavedTensor> saved{SaveInput(kInputX), SaveInput(kInputW), SaveInput(kInputR)};
  if (ctx.has_input(kInitialH)) saved.push_back(SaveInput(kInitialH));
  if (kind.has_cell_state && ctx.has_input(kInitialC)) saved.push_back(SaveInput(kInitialC));
  auto dims = ReadRecurrentDims(ctx);
  if (!dims.ok() || !dims->has_value()) return saved;
  const RecurrentDims& d = **dims;
  // cuDNN returns the output sequence and keeps it for backward whether or not the graph uses Y.
  const TensorInfo& x = ctx.inputs[kInputX];
  if (!ctx.outputs.empty() && ctx.outputs[0].present) {
    saved.push_back(SaveOutput(0));
  } else {
    saved.push_back(
        SaveExtra("output_sequence", x.dtype, Shape{{d.seq, d.batch, d.directions * d.hidden}}));
  }
  saved.push_back(
      SaveExtra("reserve_space", x.dtype,
                Shape{{d.seq, d.batch, d.directions, Dim(kind.reserve_per_step) * d.hidden}}));
  return saved;
}

OpSchema RecurrentSchema(const RecurrentKind& kind) {
  OpSchema s;
  s.op_type = kind.op_type;
  s.infer_shapes = [&kind](const OpContext& ctx) { return RecurrentShapes(ctx, kind); };
  s.cost = [&kind](const OpContext& ctx) { return RecurrentCost(ctx, kind); };
  s.SetSaved(
      DerivativesSource(
          "_cudnn_rnn backward reads input, hx, cx, result0 (output) and result3 (the reserve "
          "space); reserve estimated per step from _thnn_fused_lstm_cell (workspace 4H, cy, "
          "h_{t-1}: 6H), _thnn_fused_gru_cell (workspace 5H, h_{t-1}: 6H), rnn_tanh/relu (h_t: H)"),
      WhenDifferentiable([&kind](const OpContext& ctx) { return RecurrentSaved(ctx, kind); }));
  s.backward_flops_factor = kContractionBackwardFactor;
  s.SetAmp(AmpCategory::kFp16Safe,
           AutocastSource("_cudnn_rnn runs in fp16 under autocast (cast and re-flattened weights); "
                          "lstm_cell/gru_cell/rnn_*_cell are on the lower_precision_fp list"));
  return s;
}

}  // namespace

void RegisterRecurrentOps(OpRegistry& registry) {
  registry.Register(RecurrentSchema(kLstm));
  registry.Register(RecurrentSchema(kGru));
  registry.Register(RecurrentSchema(kRnn));
}

}  // namespace memplan
