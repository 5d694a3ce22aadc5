// LSTM, GRU and RNN (ai.onnx): the whole sequence of one layer, forward and backward through
// time. Shapes, gate orders and the saved tensors are the registry's (graph/ops/recurrent_ops.cc):
//   X [T, batch, I] (layout 1: [batch, T, I]), W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H],
//   initial_h / initial_c and Y_h / Y_c [D, batch, H] (layout 1: [batch, D, H]),
//   Y [T, D, batch, H] (layout 1: [batch, T, D, H]).
// ONNX gate orders: LSTM i, o, f, c; GRU z, r, h (linear_before_reset = 1, as torch exports
// nn.GRU); RNN one gate. Direction "reverse" runs t = T-1 .. 0; "bidirectional" is direction 0
// forward and direction 1 reverse.
//
// The backward reads what forward keeps in the registry's "reserve_space" extra, [T, batch, D,
// k*H] with k per step:
//   LSTM k = 6: the activated gates i, o, f, c~ (4H), c_t (H), h_{t-1} (H)
//   GRU  k = 6: the activated gates z, r, n (3H), R_h h_{t-1} + Rb_h (H), h_{t-1} (H), unused (H)
//   RNN  k = 1: h_t (H)
// (the registry sizes the reserve this way after what PyTorch's non-cuDNN cells keep). Not
// supported, each an error naming it: sequence_lens, peepholes P, clip, input_forget, GRU with
// linear_before_reset = 0, activations other than the defaults (RNN: Tanh or Relu).

#include <cmath>
#include <string>
#include <variant>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6,
                 kPeepholes = 7;

enum class Cell : uint8_t { kLstm, kGru, kRnn };

struct CellTraits {
  const char* op;
  int64_t gates;    // G
  int64_t reserve;  // k: hidden-sized slots per step in the reserve space
};

CellTraits TraitsOf(Cell cell) {
  switch (cell) {
    case Cell::kLstm:
      return {"LSTM", 4, 6};
    case Cell::kGru:
      return {"GRU", 3, 6};
    case Cell::kRnn:
      return {"RNN", 1, 1};
  }
  return {"RNN", 1, 1};
}

double Sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// Sizes and index maps of one recurrent node.
struct Geometry {
  Cell cell = Cell::kLstm;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, directions = 1, gates = 1, reserve = 1;
  bool batch_first = false;
  bool reverse_only = false;  // direction "reverse": the single direction runs backwards
  bool relu = false;          // RNN with activations ["Relu"]

  bool Backwards(int64_t d) const { return reverse_only || d == 1; }
  // The time index of processing step s of direction d.
  int64_t TimeAt(int64_t d, int64_t s) const { return Backwards(d) ? seq - 1 - s : s; }
  int64_t XAt(int64_t t, int64_t b) const {
    return (batch_first ? b * seq + t : t * batch + b) * input;
  }
  int64_t YAt(int64_t t, int64_t d, int64_t b) const {
    return (batch_first ? (b * seq + t) * directions + d : (t * directions + d) * batch + b) *
           hidden;
  }
  int64_t StateAt(int64_t d, int64_t b) const {
    return (batch_first ? b * directions + d : d * batch + b) * hidden;
  }
  int64_t ReserveAt(int64_t t, int64_t b, int64_t d) const {
    return ((t * batch + b) * directions + d) * reserve * hidden;
  }
  int64_t GateRows() const { return gates * hidden; }
  TensorShape YShape() const {
    return batch_first ? TensorShape{batch, seq, directions, hidden}
                       : TensorShape{seq, directions, batch, hidden};
  }
  TensorShape StateShape() const {
    return batch_first ? TensorShape{batch, directions, hidden}
                       : TensorShape{directions, batch, hidden};
  }
  TensorShape ReserveShape() const { return {seq, batch, directions, reserve * hidden}; }
};

Error Unsupported(const CellTraits& traits, const std::string& what) {
  return MakeError(std::string(traits.op) + ": " + what + " is not supported by the CPU kernel");
}

Expected<Geometry> GeometryOf(Cell cell, const Attributes& attrs, const TensorShape& x,
                              const TensorShape& w, const TensorShape& r) {
  const CellTraits traits = TraitsOf(cell);
  Geometry g;
  g.cell = cell;
  g.gates = traits.gates;
  g.reserve = traits.reserve;
  const std::string direction = attrs.GetString("direction", "forward");
  if (direction == "bidirectional") {
    g.directions = 2;
  } else if (direction == "reverse") {
    g.reverse_only = true;
  } else if (direction != "forward") {
    return MakeError(std::string(traits.op) + ": unknown direction '" + direction + "'");
  }
  const int64_t layout = attrs.GetInt("layout", 0);
  if (layout != 0 && layout != 1)
    return MakeError(std::string(traits.op) + ": layout must be 0 or 1");
  g.batch_first = layout == 1;
  if (x.size() != 3 || w.size() != 3 || r.size() != 3)
    return MakeError(std::string(traits.op) + ": X, W and R must be 3-D");
  g.seq = x[g.batch_first ? 1 : 0];
  g.batch = x[g.batch_first ? 0 : 1];
  g.input = x[2];
  g.hidden = attrs.GetInt("hidden_size", r[2]);
  if (g.hidden <= 0 || w[0] != g.directions || r[0] != g.directions || w[1] != g.GateRows() ||
      r[1] != g.GateRows() || w[2] != g.input || r[2] != g.hidden)
    return MakeError(std::string(traits.op) + ": W " + ShapeToString(w) + " and R " +
                     ShapeToString(r) + " do not match X " + ShapeToString(x) +
                     " and hidden_size " + std::to_string(g.hidden));
  if (attrs.Has("clip")) return Unsupported(traits, "clip");
  if (attrs.GetInt("input_forget", 0) != 0) return Unsupported(traits, "input_forget");
  if (cell == Cell::kGru && attrs.GetInt("linear_before_reset", 0) != 1)
    return Unsupported(traits, "linear_before_reset = 0");
  std::vector<std::string> activations;
  if (auto it = attrs.all().find("activations"); it != attrs.all().end())
    if (const auto* names = std::get_if<std::vector<std::string>>(&it->second))
      activations = *names;
  std::vector<std::string> defaults;
  if (cell == Cell::kLstm) defaults = {"Sigmoid", "Tanh", "Tanh"};
  if (cell == Cell::kGru) defaults = {"Sigmoid", "Tanh"};
  if (cell == Cell::kRnn) {
    g.relu = !activations.empty() && activations[0] == "Relu";
    defaults = {g.relu ? "Relu" : "Tanh"};
  }
  for (size_t i = 0; i < activations.size(); ++i)
    if (activations[i] != defaults[i % defaults.size()])
      return Unsupported(traits, "activation '" + activations[i] + "'");
  return g;
}

// The pre-activations of one step: W x_t + R h + biases, G*H values, into `out` (and GRU's
// recurrent part of the n gate, R_h h + Rb_h, into `recurrent_n`).
void Preactivations(const Geometry& g, int64_t d, const float* x, const float* h, const float* w,
                    const float* r, const float* bias, double* out, double* recurrent_n) {
  const int64_t rows = g.GateRows();
  const float* wd = w + d * rows * g.input;
  const float* rd = r + d * rows * g.hidden;
  const float* wb = bias != nullptr ? bias + d * 2 * rows : nullptr;
  for (int64_t row = 0; row < rows; ++row) {
    double from_x = wb != nullptr ? wb[row] : 0.0;
    for (int64_t i = 0; i < g.input; ++i) from_x += double{wd[row * g.input + i]} * x[i];
    double from_h = wb != nullptr ? wb[rows + row] : 0.0;
    for (int64_t j = 0; j < g.hidden; ++j) from_h += double{rd[row * g.hidden + j]} * h[j];
    const bool n_gate = g.cell == Cell::kGru && row >= 2 * g.hidden;
    if (n_gate) {
      recurrent_n[row - 2 * g.hidden] = from_h;
      out[row] = from_x;  // r (R_h h + Rb_h) is added once r is known
    } else {
      out[row] = from_x + from_h;
    }
  }
}

struct ForwardState {
  std::vector<float> h, c;  // [batch, H] of the current direction
};

// One time step of one batch row: the cell's gates from the preactivations `pre` (and GRU's
// recurrent candidate part `rec_n`), the previous hidden state h and (LSTM) the cell state c,
// which is updated in place; what backward needs is kept in `keep` (the reserve space) and the
// new hidden state written to `out`.
void CellOutputs(Cell cell, const Geometry& g, const double* pre, const double* rec_n,
                 const float* h, float* c_state, float* keep, float* out) {
  const int64_t H = g.hidden;
  for (int64_t j = 0; j < H; ++j) {
    if (cell == Cell::kLstm) {
      const double i = Sigmoid(pre[j]), o = Sigmoid(pre[H + j]);
      const double f = Sigmoid(pre[2 * H + j]), cand = std::tanh(pre[3 * H + j]);
      const double c = f * c_state[j] + i * cand;
      keep[j] = static_cast<float>(i);
      keep[H + j] = static_cast<float>(o);
      keep[2 * H + j] = static_cast<float>(f);
      keep[3 * H + j] = static_cast<float>(cand);
      keep[4 * H + j] = static_cast<float>(c);
      keep[5 * H + j] = h[j];
      c_state[j] = static_cast<float>(c);
      out[j] = static_cast<float>(o * std::tanh(c));
    } else if (cell == Cell::kGru) {
      const double z = Sigmoid(pre[j]), reset = Sigmoid(pre[H + j]);
      const double n = std::tanh(pre[2 * H + j] + reset * rec_n[j]);
      keep[j] = static_cast<float>(z);
      keep[H + j] = static_cast<float>(reset);
      keep[2 * H + j] = static_cast<float>(n);
      keep[3 * H + j] = static_cast<float>(rec_n[j]);
      keep[4 * H + j] = h[j];
      out[j] = static_cast<float>((1.0 - z) * n + z * h[j]);
    } else {
      const double v = g.relu ? std::max(pre[j], 0.0) : std::tanh(pre[j]);
      keep[j] = static_cast<float>(v);
      out[j] = static_cast<float>(v);
    }
  }
}

// Y in the registry's output_sequence layout [seq, batch, directions * H], for a node whose graph
// does not use Y.
Tensor OutputSequence(const KernelContext& ctx, const Geometry& g, const Tensor& y) {
  const int64_t H = g.hidden;
  Tensor sequence = NewOverwrittenOutput(ctx, {g.seq, g.batch, g.directions * H}, y.dtype());
  for (int64_t t = 0; t < g.seq; ++t)
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t d = 0; d < g.directions; ++d)
        for (int64_t j = 0; j < H; ++j)
          sequence.mutable_data()[((t * g.batch + b) * g.directions + d) * H + j] =
              y.data()[g.YAt(t, d, b) + j];
  return sequence;
}

Expected<ForwardResult> RecurrentForward(Cell cell, const KernelContext& ctx,
                                         const ForwardArgs& args) {
  const CellTraits traits = TraitsOf(cell);
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, kX, traits.op, "input"));
  MEMPLAN_TRY(Tensor w, RequireTensor(args.inputs, kW, traits.op, "input"));
  MEMPLAN_TRY(Tensor r, RequireTensor(args.inputs, kR, traits.op, "input"));
  if (OptionalTensor(args.inputs, kSequenceLens).defined())
    return Unsupported(traits, "sequence_lens");
  if (cell == Cell::kLstm && OptionalTensor(args.inputs, kPeepholes).defined())
    return Unsupported(traits, "peepholes (input P)");
  MEMPLAN_TRY(Geometry g,
              GeometryOf(cell, AttributesOf(args.attributes), x.shape(), w.shape(), r.shape()));
  const Tensor bias = OptionalTensor(args.inputs, kB);
  const Tensor h0 = OptionalTensor(args.inputs, kInitialH);
  const Tensor c0 = cell == Cell::kLstm ? OptionalTensor(args.inputs, kInitialC) : Tensor();
  const int64_t H = g.hidden;
  Tensor y = NewOutput(ctx, g.YShape(), x.dtype());
  Tensor y_h = NewOutput(ctx, g.StateShape(), x.dtype());
  Tensor y_c = cell == Cell::kLstm ? NewOutput(ctx, g.StateShape(), x.dtype()) : Tensor();
  Tensor reserve = NewExtra(ctx, g.ReserveShape(), x.dtype());
  std::vector<double> pre(static_cast<size_t>(g.GateRows())), rec_n(static_cast<size_t>(H));
  for (int64_t d = 0; d < g.directions; ++d) {
    ForwardState state;
    state.h.assign(static_cast<size_t>(g.batch * H), 0.0f);
    state.c.assign(state.h.size(), 0.0f);
    for (int64_t b = 0; b < g.batch; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        if (h0.defined()) state.h[b * H + j] = h0.data()[g.StateAt(d, b) + j];
        if (c0.defined()) state.c[b * H + j] = c0.data()[g.StateAt(d, b) + j];
      }
    }
    for (int64_t s = 0; s < g.seq; ++s) {
      const int64_t t = g.TimeAt(d, s);
      for (int64_t b = 0; b < g.batch; ++b) {
        float* h = &state.h[b * H];
        float* keep = reserve.mutable_data() + g.ReserveAt(t, b, d);
        Preactivations(g, d, x.data() + g.XAt(t, b), h, w.data(), r.data(),
                       bias.defined() ? bias.data() : nullptr, pre.data(), rec_n.data());
        float* out = y.mutable_data() + g.YAt(t, d, b);
        CellOutputs(cell, g, pre.data(), rec_n.data(), h, &state.c[b * H], keep, out);
        for (int64_t j = 0; j < H; ++j) h[j] = out[j];
      }
    }
    for (int64_t b = 0; b < g.batch; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        y_h.mutable_data()[g.StateAt(d, b) + j] = state.h[b * H + j];
        if (y_c.defined()) y_c.mutable_data()[g.StateAt(d, b) + j] = state.c[b * H + j];
      }
    }
  }
  ForwardResult result;
  for (Tensor* t : {&y, &y_h, &y_c, &reserve})
    if (t->defined()) RoundToOwnDType(*t);
  result.outputs = {y, y_h};
  if (cell == Cell::kLstm) result.outputs.push_back(y_c);
  result.outputs.resize(static_cast<size_t>(std::max(args.num_outputs, 0)));
  result.extras["reserve_space"] = reserve;
  result.extras["output_sequence"] = OutputSequence(ctx, g, y);
  return result;
}

// Gradient accumulators of one node, in double.
struct Grads {
  // Zeros of the sizes of x, W, R, B (both biases per direction), initial_h and initial_c.
  Grads(const Geometry& g, int64_t x_elements, int64_t w_elements, int64_t r_elements)
      : x(static_cast<size_t>(x_elements), 0.0),
        w(static_cast<size_t>(w_elements), 0.0),
        r(static_cast<size_t>(r_elements), 0.0),
        bias(static_cast<size_t>(g.directions * 2 * g.GateRows()), 0.0),
        h0(static_cast<size_t>(g.directions * g.batch * g.hidden), 0.0),
        c0(h0.size(), 0.0) {}
  std::vector<double> x, w, r, bias, h0, c0;
};

// The gates' pre-activation gradients dgx of one step and batch row from what forward kept, the
// hidden state's gradient dh (and LSTM's cell state's dc, updated in place to dc_{t-1}); GRU's
// direct path to h_{t-1} is written to dh_prev.
void GateGradients(Cell cell, const Geometry& g, const float* keep, const double* h_prev,
                   const double* c_prev, const double* dhb, double* dcb, double* dgx,
                   double* dh_prev) {
  const int64_t H = g.hidden;
  for (int64_t j = 0; j < H; ++j) {
    if (cell == Cell::kLstm) {
      const double i = keep[j], o = keep[H + j], f = keep[2 * H + j], cand = keep[3 * H + j];
      const double tanh_c = std::tanh(double{keep[4 * H + j]});
      const double d_o = dhb[j] * tanh_c;
      const double d_c = dcb[j] + dhb[j] * o * (1.0 - tanh_c * tanh_c);
      dgx[j] = d_c * cand * i * (1.0 - i);
      dgx[H + j] = d_o * o * (1.0 - o);
      dgx[2 * H + j] = d_c * c_prev[j] * f * (1.0 - f);
      dgx[3 * H + j] = d_c * i * (1.0 - cand * cand);
      dcb[j] = d_c * f;
    } else if (cell == Cell::kGru) {
      const double z = keep[j], reset = keep[H + j], n = keep[2 * H + j];
      const double hn = keep[3 * H + j];
      const double d_gn = dhb[j] * (1.0 - z) * (1.0 - n * n);
      dgx[j] = dhb[j] * (h_prev[j] - n) * z * (1.0 - z);
      dgx[H + j] = d_gn * hn * reset * (1.0 - reset);
      dgx[2 * H + j] = d_gn;
      dh_prev[j] = dhb[j] * z;
    } else {
      const double v = keep[j];
      dgx[j] = dhb[j] * (g.relu ? (v > 0.0 ? 1.0 : 0.0) : 1.0 - v * v);
    }
  }
}

// The input path's (dgx) and recurrent path's (dgh) gate gradients of one step and batch row of
// direction d, carried into the bias, W, R and x gradients and the gradient of h_{t-1}.
void AccumulateWeightGradients(const Geometry& g, int64_t d, const float* xt, const float* wd,
                               const float* rd, const double* dgx, const double* dgh,
                               const double* h_prev, double* dxt, double* dh_prev, Grads& acc) {
  const int64_t H = g.hidden, rows = g.GateRows();
  double* dbias = acc.bias.data() + d * 2 * rows;
  for (int64_t row = 0; row < rows; ++row) {
    const double gx = dgx[row], gh = dgh[row];
    dbias[row] += gx;
    dbias[rows + row] += gh;
    double* dw_row = acc.w.data() + (d * rows + row) * g.input;
    const float* w_row = wd + row * g.input;
    for (int64_t i = 0; i < g.input; ++i) {
      dw_row[i] += gx * xt[i];
      dxt[i] += gx * w_row[i];
    }
    double* dr_row = acc.r.data() + (d * rows + row) * H;
    const float* r_row = rd + row * H;
    for (int64_t j = 0; j < H; ++j) {
      dr_row[j] += gh * h_prev[j];
      dh_prev[j] += gh * r_row[j];
    }
  }
}

// The accumulated gradients written, in the inputs' dtypes, to the slots of the inputs present
// that need one.
void WriteInputGradients(Cell cell, const KernelContext& ctx, const BackwardArgs& args,
                         const Grads& acc, InputGradients& slots) {
  auto fill = [&](size_t input, const std::vector<double>& values) {
    if (!args.InputPresent(input) || !args.NeedsGrad(input)) return;
    Tensor grad = NewOverwrittenInputGradient(ctx, args, input);
    if (grad.numel() != static_cast<int64_t>(values.size())) return;
    for (int64_t e = 0; e < grad.numel(); ++e)
      grad.mutable_data()[e] = static_cast<float>(values[static_cast<size_t>(e)]);
    RoundToOwnDType(grad);
    slots[input] = std::move(grad);
  };
  fill(kX, acc.x);
  fill(kW, acc.w);
  fill(kR, acc.r);
  fill(kB, acc.bias);
  fill(kInitialH, acc.h0);
  if (cell == Cell::kLstm) fill(kInitialC, acc.c0);
}

Expected<InputGradients> RecurrentBackward(Cell cell, const KernelContext& ctx,
                                           const BackwardArgs& args) {
  const CellTraits traits = TraitsOf(cell);
  MEMPLAN_TRY(InputGradients slots, MakeGradientSlots(args, 3, traits.op));
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, kX, traits.op, "saved input"));
  MEMPLAN_TRY(Tensor w, RequireTensor(args.inputs, kW, traits.op, "saved input"));
  MEMPLAN_TRY(Tensor r, RequireTensor(args.inputs, kR, traits.op, "saved input"));
  MEMPLAN_TRY(const Tensor reserve, RequireExtra(args, "reserve_space", traits.op));
  MEMPLAN_TRY(Geometry g,
              GeometryOf(cell, AttributesOf(args.attributes), x.shape(), w.shape(), r.shape()));
  if (reserve.numel() != NumElements(g.ReserveShape()))
    return MakeError(std::string(traits.op) + " backward: reserve space " +
                     ShapeToString(reserve.shape()) + ", expected " +
                     ShapeToString(g.ReserveShape()));
  const Tensor h0 = OptionalTensor(args.inputs, kInitialH);
  const Tensor c0 = cell == Cell::kLstm ? OptionalTensor(args.inputs, kInitialC) : Tensor();
  const Tensor dy = OptionalTensor(args.grad_outputs, 0);
  const Tensor dy_h = OptionalTensor(args.grad_outputs, 1);
  const Tensor dy_c = cell == Cell::kLstm ? OptionalTensor(args.grad_outputs, 2) : Tensor();
  const int64_t H = g.hidden, rows = g.GateRows();
  Grads acc(g, x.numel(), w.numel(), r.numel());
  std::vector<double> dgx(static_cast<size_t>(rows)), dgh(dgx.size());
  std::vector<double> dh(static_cast<size_t>(g.batch * H)), dc(dh.size());
  std::vector<double> dh_prev(static_cast<size_t>(H));
  std::vector<double> h_prev(static_cast<size_t>(H)), c_prev(static_cast<size_t>(H));
  for (int64_t d = 0; d < g.directions; ++d) {
    for (int64_t b = 0; b < g.batch; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        dh[b * H + j] = dy_h.defined() ? dy_h.data()[g.StateAt(d, b) + j] : 0.0;
        dc[b * H + j] = dy_c.defined() ? dy_c.data()[g.StateAt(d, b) + j] : 0.0;
      }
    }
    const float* wd = w.data() + d * rows * g.input;
    const float* rd = r.data() + d * rows * H;
    for (int64_t s = g.seq - 1; s >= 0; --s) {
      const int64_t t = g.TimeAt(d, s);
      for (int64_t b = 0; b < g.batch; ++b) {
        const float* keep = reserve.data() + g.ReserveAt(t, b, d);
        // A state the previous step kept in its reserve slot, or the initial state.
        auto previous = [&](int64_t slot, const Tensor& initial, int64_t j) -> double {
          if (s > 0) return reserve.data()[g.ReserveAt(g.TimeAt(d, s - 1), b, d) + slot * H + j];
          return initial.defined() ? initial.data()[g.StateAt(d, b) + j] : 0.0;
        };
        for (int64_t j = 0; j < H; ++j) {
          // h_{t-1}: RNN keeps only h_t; LSTM and GRU keep h_{t-1} in their own slot.
          h_prev[j] =
              cell == Cell::kRnn ? previous(0, h0, j) : keep[(cell == Cell::kLstm ? 5 : 4) * H + j];
          if (cell == Cell::kLstm) c_prev[j] = previous(4, c0, j);  // c_{t-1}
        }
        double* dhb = &dh[b * H];
        double* dcb = &dc[b * H];
        if (dy.defined())
          for (int64_t j = 0; j < H; ++j) dhb[j] += dy.data()[g.YAt(t, d, b) + j];
        std::fill(dh_prev.begin(), dh_prev.end(), 0.0);
        GateGradients(cell, g, keep, h_prev.data(), c_prev.data(), dhb, dcb, dgx.data(),
                      dh_prev.data());
        // The recurrent path's pre-activation gradients: the same but GRU's n gate, whose
        // recurrent part enters scaled by r.
        dgh = dgx;
        if (cell == Cell::kGru)
          for (int64_t j = 0; j < H; ++j) dgh[2 * H + j] = dgx[2 * H + j] * keep[H + j];
        AccumulateWeightGradients(g, d, x.data() + g.XAt(t, b), wd, rd, dgx.data(), dgh.data(),
                                  h_prev.data(), acc.x.data() + g.XAt(t, b), dh_prev.data(), acc);
        for (int64_t j = 0; j < H; ++j) dhb[j] = dh_prev[j];
      }
    }
    for (int64_t b = 0; b < g.batch; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        acc.h0[g.StateAt(d, b) + j] = dh[b * H + j];
        acc.c0[g.StateAt(d, b) + j] = dc[b * H + j];
      }
    }
  }
  WriteInputGradients(cell, ctx, args, acc, slots);
  return slots;
}

template <Cell kCell>
Expected<ForwardResult> Forward(const KernelContext& ctx, const ForwardArgs& args) {
  return RecurrentForward(kCell, ctx, args);
}

template <Cell kCell>
Expected<InputGradients> Backward(const KernelContext& ctx, const BackwardArgs& args) {
  return RecurrentBackward(kCell, ctx, args);
}

}  // namespace

void RegisterRecurrentKernels(KernelRegistry& registry) {
  registry.Register("LSTM", &Forward<Cell::kLstm>, &Backward<Cell::kLstm>);
  registry.Register("GRU", &Forward<Cell::kGru>, &Backward<Cell::kGru>);
  registry.Register("RNN", &Forward<Cell::kRnn>, &Backward<Cell::kRnn>);
}

}  // namespace memplan
