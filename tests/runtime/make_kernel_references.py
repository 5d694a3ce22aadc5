#!/usr/bin/python3
"""Writes kernel_references.h: forward values, input gradients and optimizer trajectories computed
by PyTorch (an independent implementation) for the runtime's CPU kernels to be checked against.

Run with Debian's python (torch 1.13, CPU):  /usr/bin/python3 tests/runtime/make_kernel_references.py
CI never runs this; the generated header is checked in. The Range section (torch.arange, whose
values are the same in every version) and conv3d were appended with torch 2.15 from the venv, as Debian's
torch is gone: regenerating the rest with 2.15 moves other values by an ulp.
"""
import os
import torch
import torch.nn.functional as F

torch.manual_seed(20240501)
torch.set_default_dtype(torch.float32)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_references.h")
lines = []


def literal(v):
    # %.9g round-trips a float32; C++ needs a '.' or exponent before the f suffix.
    text = "%.9g" % v
    if "." not in text and "e" not in text:
        text += ".0"
    return text + "f"


def emit(name, tensor):
    values = tensor.detach().reshape(-1).tolist()
    body = ", ".join(literal(v) for v in values)
    lines.append("inline const std::vector<float> %s = {%s};" % (name, body))


def shape(name, tensor):
    lines.append("inline const std::vector<int64_t> %s = {%s};"
                 % (name, ", ".join(str(d) for d in tensor.shape)))


def rand(*dims, lo=-1.0, hi=1.0):
    # Values rounded to 1/1024 so they are exact in every format the tests print.
    return (torch.rand(*dims) * (hi - lo) + lo).mul(1024).round().div(1024)


def with_grads(name, fn, inputs, cotangent_shape=None):
    """Forward fn(*inputs), then backward of sum(out * cotangent); emits inputs, out, grads."""
    leaves = [t.clone().requires_grad_(True) for t in inputs]
    out = fn(*leaves)
    cot = rand(*out.shape)
    (out * cot).sum().backward()
    for i, t in enumerate(inputs):
        emit("%s_in%d" % (name, i), t)
        shape("%s_in%d_shape" % (name, i), t)
        emit("%s_grad%d" % (name, i), leaves[i].grad)
    emit("%s_out" % name, out)
    shape("%s_out_shape" % name, out)
    emit("%s_cotangent" % name, cot)
    grad_case(name, len(inputs))


def grad_case(name, n):
    """The GradCase (tests/runtime/grad_case.h) gathering with_grads' arrays for `name`."""
    operands = ", ".join("{%s_in%d_shape, %s_in%d}" % (name, i, name, i) for i in range(n))
    grads = ", ".join("%s_grad%d" % (name, i) for i in range(n))
    lines.append("inline const GradCase %s = {{%s}, {%s}, %s_out_shape, %s_out, %s_cotangent};"
                 % (name, operands, grads, name, name, name))


# Conv: 2 groups, stride (2,1), pads top=1 left=1 (symmetric, as torch pads), dilation (1,2).
with_grads("conv", lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 1),
                                             dilation=(1, 2), groups=2),
           [rand(2, 4, 5, 6), rand(4, 2, 3, 2), rand(4)])

# BatchNorm in training mode; running stats updated with torch momentum 0.1 (ONNX 0.9).
bn_x, bn_scale, bn_bias = rand(3, 2, 2, 3, lo=-2, hi=2), rand(2, lo=0.5, hi=1.5), rand(2)
bn_mean, bn_var = rand(2), rand(2, lo=0.5, hi=1.5)
emit("bn_running_mean_in", bn_mean)
emit("bn_running_var_in", bn_var)
running_mean, running_var = bn_mean.clone(), bn_var.clone()


def bn(x, s, b):
    return F.batch_norm(x, running_mean, running_var, s, b, training=True, momentum=0.1, eps=1e-5)


with_grads("bn", bn, [bn_x, bn_scale, bn_bias])
emit("bn_running_mean_out", running_mean)
emit("bn_running_var_out", running_var)

# LayerNorm over the last dim.
with_grads("ln", lambda x, s, b: F.layer_norm(x, (4,), s, b, eps=1e-5),
           [rand(2, 3, 4, lo=-2, hi=2), rand(4, lo=0.5, hi=1.5), rand(4)])

# MaxPool 3x3 stride 2 pad 1 ceil_mode; AveragePool 3x3 stride 2 pad 1 count_include_pad=False.
with_grads("maxpool", lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [rand(1, 2, 6, 5)])
with_grads("avgpool", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                              count_include_pad=False), [rand(1, 2, 6, 5)])

# Elementwise / activation forwards and grads.
with_grads("gelu", lambda x: F.gelu(x), [rand(7, lo=-3, hi=3)])
with_grads("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), [rand(7, lo=-3, hi=3)])
with_grads("softmax", lambda x: torch.softmax(x, dim=1), [rand(2, 4, 3, lo=-2, hi=2)])
with_grads("logsoftmax", lambda x: torch.log_softmax(x, dim=-1), [rand(2, 5, lo=-2, hi=2)])
with_grads("matmul", torch.matmul, [rand(2, 1, 3, 4), rand(3, 4, 2)])
with_grads("gemm", lambda a, b, c: 0.5 * a.t() @ b.t() + 2.0 * c, [rand(4, 3), rand(2, 4), rand(2)])
with_grads("pow", torch.pow, [rand(2, 3, lo=0.5, hi=2), rand(3, lo=-1.5, hi=2.5)])

def loss_with_grad(name, loss_fn, prediction, target):
    """Emits NAME_loss, loss_fn(prediction, target), and NAME_grad, its gradient by prediction."""
    leaf = prediction.clone().requires_grad_(True)
    loss = loss_fn(leaf, target)
    loss.backward()
    emit("%s_loss" % name, loss.reshape(1))
    emit("%s_grad" % name, leaf.grad)


# Losses (mean reduction).
ce_logits = rand(4, 5, lo=-2, hi=2)
ce_labels = torch.tensor([3, 0, 4, 1])
emit("ce_logits", ce_logits)
emit("ce_labels", ce_labels.float())
loss_with_grad("ce", F.cross_entropy, ce_logits, ce_labels)

mse_pred, mse_target = rand(2, 3), rand(2, 3)
emit("mse_pred", mse_pred)
emit("mse_target", mse_target)
loss_with_grad("mse", F.mse_loss, mse_pred, mse_target)

# Optimizers: three steps from the same start with fixed gradients; parameters after each step.
opt_start = torch.tensor([0.5, -1.0, 2.0])
opt_grads = [torch.tensor([0.1, -0.2, 0.3]), torch.tensor([-0.4, 0.5, 0.05]),
             torch.tensor([0.2, 0.2, -0.6])]
emit("opt_start", opt_start)
for i, g in enumerate(opt_grads):
    emit("opt_grad%d" % i, g)


def trajectory(name, make):
    p = opt_start.clone().requires_grad_(True)
    opt = make([p])
    steps = []
    for g in opt_grads:
        p.grad = g.clone()
        opt.step()
        steps.append(p.detach().clone())
    emit("opt_%s" % name, torch.stack(steps))


trajectory("adam", lambda ps: torch.optim.Adam(ps, lr=0.1, weight_decay=0.1))
trajectory("adamw", lambda ps: torch.optim.AdamW(ps, lr=0.1, weight_decay=0.1))
trajectory("momentum", lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1,
                                                   weight_decay=0.01))
trajectory("nesterov", lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True))
trajectory("sgd", lambda ps: torch.optim.SGD(ps, lr=0.1, weight_decay=0.01))

# Per-pixel cross entropy (segmentation): logits [N, C, H, W], classes at dimension 1, one label
# per pixel, -100 ignored (made last so the values above keep their random stream).
seg_logits = rand(2, 3, 2, 2, lo=-2, hi=2)
seg_labels = torch.tensor([[[2, 0], [1, -100]], [[0, 0], [2, 1]]])
emit("seg_logits", seg_logits)
emit("seg_labels", seg_labels.float())
loss_with_grad("seg", F.cross_entropy, seg_logits, seg_labels)
emit("seg_log_prob", F.log_softmax(seg_logits, dim=1))

# Liger's fused linear cross entropy (memplan:FusedLinearCrossEntropy): the mean cross entropy of
# x @ W^T + b over the rows whose target is not -100 (torch's ignore_index), x [2, 5, 4] read as
# 10 rows, W [V=6, H=4]; gradients of cotangent * loss (the kernel's backward scales what its
# forward saved by the cotangent).
flce_x, flce_w, flce_b = rand(2, 5, 4, lo=-2, hi=2), rand(6, 4), rand(6)
flce_target = torch.tensor([[1, 5, -100, 0, 3], [2, -100, 4, 4, 1]])
flce_cot = rand(1)
flce_leaves = [t.clone().requires_grad_(True) for t in (flce_x, flce_w, flce_b)]
loss = F.cross_entropy((flce_leaves[0] @ flce_leaves[1].t() + flce_leaves[2]).reshape(-1, 6),
                       flce_target.reshape(-1), ignore_index=-100)
(loss * flce_cot[0]).backward()
for i, name in enumerate(("x", "w", "b")):
    emit("flce_%s" % name, [flce_x, flce_w, flce_b][i])
    emit("flce_grad_%s" % name, flce_leaves[i].grad)
emit("flce_target", flce_target.float())
emit("flce_cotangent", flce_cot)
emit("flce_loss", loss.reshape(1))

# Session 18 (appended, so every earlier reference keeps its random values): the activations with
# attributes and torch.rsqrt. Inputs avoid the kinks by more than 1/1024.
with_grads("hardswish", lambda x: F.hardswish(x), [rand(9, lo=-4, hi=4)])
with_grads("hardsigmoid", lambda x: F.hardsigmoid(x), [rand(9, lo=-4, hi=4)])
with_grads("leaky_relu", lambda x: F.leaky_relu(x, 0.2), [rand(9, lo=-2, hi=2)])
with_grads("rsqrt", lambda x: torch.rsqrt(x), [rand(2, 3, lo=0.5, hi=3)])
with_grads("triu1", lambda x: torch.triu(x, 1), [rand(2, 3, 4)])
with_grads("tril_neg1", lambda x: torch.tril(x, -1), [rand(2, 4, 3)])

# Session 19: two-operand einsums (attention scores, a permuted output, MaxViT's spaced capitals).
with_grads("einsum_scores", lambda q, k: torch.einsum("bhid,bhjd->bhij", q, k),
           [rand(2, 3, 4, 5), rand(2, 3, 6, 5)])
with_grads("einsum_permuted", lambda a, b: torch.einsum("ikj,jl->lik", a, b),
           [rand(3, 2, 4), rand(4, 5)])
with_grads("einsum_maxvit", lambda p, v: torch.einsum("B G H I J, B G H J D -> B G H I D", p, v),
           [rand(1, 2, 2, 3, 4), rand(1, 2, 2, 4, 5)])
# Clip (torch.clamp; ReLU6 exports as Clip(0, 6)) and Pad in the four ONNX modes. torch's pad
# list runs from the last axis: (w_begin, w_end, h_begin, h_end); ONNX's is all begins, then ends.
with_grads("clip", lambda x: torch.clamp(x, -0.5, 0.75), [rand(9, lo=-2, hi=2)])
with_grads("pad_constant", lambda x: F.pad(x, (2, -1, 1, 2), value=0.5), [rand(1, 2, 3, 4)])
with_grads("pad_reflect", lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), [rand(1, 2, 3, 4)])
with_grads("pad_edge", lambda x: F.pad(x, (2, 1, 1, 2), mode="replicate"), [rand(1, 2, 3, 4)])
with_grads("pad_wrap", lambda x: F.pad(x, (2, 1, 1, 2), mode="circular"), [rand(1, 2, 3, 4)])
# ScatterND as torch's index_put (ONNX indices [[1, 0], [3, 2]]: rows 1 and 3, columns 0 and 2).
with_grads("scatternd",
           lambda d, u: d.index_put((torch.tensor([1, 3]), torch.tensor([0, 2])), u),
           [rand(4, 3, 2), rand(2, 2)])
# Resize as F.interpolate exports it: bilinear (pytorch_half_pixel), bilinear with align_corners,
# nearest (asymmetric, floor) by a scale of 2, and a bilinear downsample to a given size.
with_grads("resize_bilinear", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
           [rand(1, 2, 3, 4)])
with_grads("resize_corners",
           lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
           [rand(1, 2, 3, 4)])
with_grads("resize_nearest", lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
           [rand(1, 2, 3, 4)])
with_grads("resize_down", lambda x: F.interpolate(x, size=(3, 5), mode="bilinear"),
           [rand(1, 2, 4, 7)])
# InstanceNormalization (torch's instance_norm with affine weight and bias).
with_grads("instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b, eps=1e-5),
           [rand(2, 3, 2, 3, lo=-2, hi=2), rand(3, lo=0.5, hi=1.5), rand(3)])
# GroupNormalization with per-channel weight and bias (torch's group_norm; 2 groups of 2).
with_grads("group_norm", lambda x, w, b: F.group_norm(x, 2, weight=w, bias=b, eps=1e-5),
           [rand(2, 4, 2, 3, lo=-2, hi=2), rand(4, lo=0.5, hi=1.5), rand(4)])
# ConvTranspose: 2-D with bias, stride 2, pads 1, output_padding 1; 2-D grouped with stride (2, 1),
# pads (0, 1), dilation (1, 2), output_padding (1, 0); 1-D with stride 2, pads 1, output_padding 1.
with_grads("convt", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                       output_padding=1),
           [rand(2, 4, 3, 3), rand(4, 3, 3, 3), rand(3)])
with_grads("convt_grouped", lambda x, w: F.conv_transpose2d(x, w, stride=(2, 1), padding=(0, 1),
                                                            output_padding=(1, 0), groups=2,
                                                            dilation=(1, 2)),
           [rand(2, 4, 3, 3), rand(4, 2, 2, 2)])
with_grads("convt_1d", lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1),
           [rand(2, 2, 5), rand(2, 3, 3)])
# ReduceMax as torch.amax over axes (1, 3), keepdims, with a tie (grad split evenly) in one slice.
amax_x = rand(2, 3, 2, 4)
amax_x[0, :, 1, :] = 0.5  # 12 equal elements: one output's maximum is a 12-way tie
with_grads("amax", lambda x: torch.amax(x, dim=(1, 3), keepdim=True), [amax_x])
# Tile as torch's repeat (ONNX repeats [2, 1, 3]).
with_grads("tile", lambda x: x.repeat(2, 1, 3), [rand(2, 3, 2)])

# LSTM, GRU and RNN over a whole sequence in ONNX's layout (X [T, batch, I], W [D, G*H, I],
# R [D, G*H, H], B [D, 2*G*H], states [D, batch, H]) and gate orders (LSTM i, o, f, c; GRU z, r,
# h), against torch's own recurrent implementations with the gates re-ordered into torch's
# (i, f, g, o; r, z, n). The output is Y [T, D, batch, H], then Y_h (and Y_c) flattened into one
# vector, so one cotangent covers every output.
def onnx_gates_to_torch(t, order, hidden):
    chunks = t.split(hidden, dim=0)
    return torch.cat([chunks[k] for k in order], dim=0)


def recurrent(kind, x, w, r, b, h0, c0=None):
    directions, hidden, (steps, batch, _) = w.shape[0], r.shape[2], x.shape
    order = {"lstm": [0, 2, 3, 1], "gru": [1, 0, 2], "rnn": [0]}[kind]
    gates = len(order) * hidden
    params = []
    for d in range(directions):
        params += [onnx_gates_to_torch(w[d], order, hidden),
                   onnx_gates_to_torch(r[d], order, hidden),
                   onnx_gates_to_torch(b[d][:gates], order, hidden),
                   onnx_gates_to_torch(b[d][gates:], order, hidden)]
    both = directions == 2
    if kind == "lstm":
        y, h, c = torch.lstm(x, (h0, c0), params, True, 1, 0.0, True, both, False)
        finals = [h, c]
    elif kind == "gru":
        y, h = torch.gru(x, h0, params, True, 1, 0.0, True, both, False)
        finals = [h]
    else:
        y, h = torch.rnn_tanh(x, h0, params, True, 1, 0.0, True, both, False)
        finals = [h]
    y = y.reshape(steps, batch, directions, hidden).permute(0, 2, 1, 3)
    return torch.cat([y.reshape(-1)] + [f.reshape(-1) for f in finals])


with_grads("lstm_bidi", lambda x, w, r, b, h0, c0: recurrent("lstm", x, w, r, b, h0, c0),
           [rand(3, 2, 3), rand(2, 8, 3), rand(2, 8, 2), rand(2, 16), rand(2, 2, 2),
            rand(2, 2, 2)])
with_grads("gru", lambda x, w, r, b, h0: recurrent("gru", x, w, r, b, h0),
           [rand(4, 2, 3), rand(1, 6, 3), rand(1, 6, 2), rand(1, 12), rand(1, 2, 2)])
with_grads("rnn_bidi", lambda x, w, r, b, h0: recurrent("rnn", x, w, r, b, h0),
           [rand(3, 2, 3), rand(2, 2, 3), rand(2, 2, 2), rand(2, 4), rand(2, 2, 2)])
# direction "reverse": the forward recurrence over the sequence read backwards, Y put back in
# time order.
with_grads("gru_reverse",
           lambda x, w, r, b, h0: torch.cat([
               recurrent("gru", x.flip(0), w, r, b, h0)[:3 * 1 * 2 * 2].reshape(3, 1, 2, 2)
               .flip(0).reshape(-1),
               recurrent("gru", x.flip(0), w, r, b, h0)[3 * 1 * 2 * 2:]]),
           [rand(3, 2, 3), rand(1, 6, 3), rand(1, 6, 2), rand(1, 12), rand(1, 2, 2)])

# RMS normalisation (torch 1.13 has no rms_norm: written out, autograd is the reference) over
# the last axis with a per-element scale, and over the last two axes (ONNX axis -2).
def rms_norm(x, w, dims):
    return x * torch.rsqrt(x.pow(2).mean(dim=dims, keepdim=True) + 1e-5) * w


with_grads("rms_norm", lambda x, w: rms_norm(x, w, (-1,)),
           [rand(2, 3, 4, lo=-2, hi=2), rand(4, lo=0.5, hi=1.5)])
with_grads("rms_norm_2d", lambda x, w: rms_norm(x, w, (-2, -1)),
           [rand(2, 3, 4, lo=-2, hi=2), rand(3, 4, lo=0.5, hi=1.5)])
# GatherElements as torch.gather on axis 1, indices smaller than data on axis 2, with repeats
# (their gradients accumulate).
gather_elements_index = torch.tensor([[[0, 2], [2, 2], [1, 0]], [[1, 1], [0, 0], [2, 1]]])
emit("gather_elements_index", gather_elements_index.float())
with_grads("gather_elements", lambda x: torch.gather(x, 1, gather_elements_index),
           [rand(2, 3, 4)])

# Mod: fmod 0 is torch.remainder (the divisor's sign), fmod 1 torch.fmod (the dividend's), both
# operands broadcast and differentiable; divisors kept away from zero.
mod_a, mod_b = rand(2, 3, lo=-4, hi=4), rand(3, lo=0.5, hi=2) * torch.tensor([1.0, -1.0, 1.0])
with_grads("remainder", torch.remainder, [mod_a, mod_b])
with_grads("fmod", torch.fmod, [mod_a, mod_b])

# RotaryEmbedding (opset 23; torch 1.13 has no rotary op): the ONNX reference's steps in plain
# torch, dX by autograd. X goes to [B, S, heads, head] (4D transposed, 3D split by num_heads); the
# caches are gathered by position_ids when given, cut to rot/2 columns and broadcast over heads;
# pairs are (x[2i], x[2i+1]) interleaved or (x[i], x[i + rot/2]) split; the dims past rot pass.
def rotary(x, cos, sin, position_ids=None, interleaved=0, rotary_dim=0, num_heads=0):
    shape = x.shape
    x = x.transpose(1, 2) if x.dim() == 4 else x.reshape(shape[0], shape[1], num_heads, -1)
    rot = rotary_dim or x.shape[3]
    if position_ids is not None:
        cos, sin = cos[position_ids], sin[position_ids]
    cos = cos[:, :, :rot // 2].unsqueeze(2)
    sin = sin[:, :, :rot // 2].unsqueeze(2)
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    if interleaved:
        x1, x2 = x_rot[..., 0::2], x_rot[..., 1::2]
    else:
        x1, x2 = x_rot[..., :rot // 2], x_rot[..., rot // 2:]
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    if interleaved:
        rotated = torch.stack((real, imag), dim=-1).reshape(x_rot.shape)
    else:
        rotated = torch.cat((real, imag), dim=-1)
    y = torch.cat((rotated, x_pass), dim=-1)
    return y.transpose(1, 2) if len(shape) == 4 else y.reshape(shape)


def rotary_cache(rows, half):
    # Llama's angles: row r, column i turns by r * 10000^(-i / half).
    angle = torch.arange(rows).float()[:, None] * 10000.0 ** (-torch.arange(half).float() / half)
    return angle.cos(), angle.sin()


# Position ids repeat and skip (a left-padded batch); 4D X [2, 2 heads, 3, 8] split halves over
# the whole head, caches [6, 4].
rotary_positions = torch.tensor([[0, 1, 2], [4, 4, 1]])
emit("rotary_positions", rotary_positions.float())
rotary_cos, rotary_sin = rotary_cache(6, 4)
emit("rotary_cos", rotary_cos)
emit("rotary_sin", rotary_sin)
with_grads("rotary_4d", lambda x: rotary(x, rotary_cos, rotary_sin, rotary_positions),
           [rand(2, 2, 3, 8)])
# 3D X [2, 3, 2 heads * 8] interleaved over the whole head, the same gathered caches.
with_grads("rotary_3d_interleaved",
           lambda x: rotary(x, rotary_cos, rotary_sin, rotary_positions, interleaved=1,
                            num_heads=2), [rand(2, 3, 16)])
# Per-token caches [2, 3, 2] without position ids, rotary_embedding_dim 4 of the head's 8: 4D
# interleaved and 3D split halves.
rotary_cos_direct, rotary_sin_direct = (rotary_cos[rotary_positions.flip(1), :2],
                                        rotary_sin[rotary_positions.flip(1), :2])
emit("rotary_cos_direct", rotary_cos_direct)
emit("rotary_sin_direct", rotary_sin_direct)
with_grads("rotary_4d_partial_interleaved",
           lambda x: rotary(x, rotary_cos_direct, rotary_sin_direct, interleaved=1, rotary_dim=4),
           [rand(2, 2, 3, 8)])
with_grads("rotary_3d_partial",
           lambda x: rotary(x, rotary_cos_direct, rotary_sin_direct, rotary_dim=4, num_heads=2),
           [rand(2, 3, 16)])


# com.microsoft RotaryEmbedding (ONNX Runtime's contrib op) as ORT's CPU kernel computes it
# (contrib_ops/cpu/bert/rotary_embedding.cc), written here the rotate-half way: over the first rot
# dims y = x * cos + partner * sin, the partner of x[i] being -x[i + rot/2] / x[i - rot/2] (split)
# or -x[i + 1] / x[i - 1] (interleaved), cos and sin repeated to rot columns. Position ids are
# [B, S] or one offset (token s at offset + s); without rotary_embedding_dim the head size is
# twice the caches' width, else hidden / num_heads. dX by autograd.
def ms_rotary(x, position_ids, cos_cache, sin_cache, interleaved=0, num_heads=0, rotary_dim=0):
    shape = x.shape
    if x.dim() == 4:
        x = x.permute(0, 2, 1, 3)
    else:
        head = shape[2] // num_heads if rotary_dim else 2 * cos_cache.shape[1]
        x = x.reshape(shape[0], shape[1], shape[2] // head, head)
    seq, rot = x.shape[1], rotary_dim or x.shape[3]
    if position_ids.numel() == 1:
        position_ids = position_ids.reshape(1, 1) + torch.arange(seq)[None, :]
    cos = cos_cache[position_ids][:, :, None, :]
    sin = sin_cache[position_ids][:, :, None, :]
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    if interleaved:
        cos, sin = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
        partner = torch.stack((-x_rot[..., 1::2], x_rot[..., 0::2]), dim=-1).flatten(-2)
    else:
        cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
        partner = torch.cat((-x_rot[..., rot // 2:], x_rot[..., :rot // 2]), dim=-1)
    y = torch.cat((x_rot * cos + partner * sin, x_pass), dim=-1)
    return y.permute(0, 2, 1, 3) if len(shape) == 4 else y.reshape(shape)


# Caches [6, 4] (rotary_cos above) for whole heads of 8, [6, 2] for 4 of 8 dims.
ms_rotary_positions = torch.tensor([[5, 0, 3], [1, 2, 2]])
emit("ms_rotary_positions", ms_rotary_positions.float())
ms_rotary_cos_partial, ms_rotary_sin_partial = rotary_cache(6, 2)
emit("ms_rotary_cos_partial", ms_rotary_cos_partial)
emit("ms_rotary_sin_partial", ms_rotary_sin_partial)
# 4D X [2, 2 heads, 3, 8], position ids [B, S], split halves.
with_grads("ms_rotary_4d",
           lambda x: ms_rotary(x, ms_rotary_positions, rotary_cos, rotary_sin), [rand(2, 2, 3, 8)])
# 3D X [2, 3, 2 heads * 8] with num_heads, offset 2 as a 1-element vector, interleaved.
with_grads("ms_rotary_3d_offset",
           lambda x: ms_rotary(x, torch.tensor([2]), rotary_cos, rotary_sin, interleaved=1,
                               num_heads=2), [rand(2, 3, 16)])
# 3D X [2, 3, 16] without num_heads (heads of twice the caches' width, 8), scalar offset 3.
with_grads("ms_rotary_3d_derived",
           lambda x: ms_rotary(x, torch.tensor(3), rotary_cos, rotary_sin), [rand(2, 3, 16)])
# rotary_embedding_dim 4 of the head's 8 (num_heads required): 4D interleaved with position ids
# [B, S], 3D split halves with offset 1.
with_grads("ms_rotary_4d_partial_interleaved",
           lambda x: ms_rotary(x, ms_rotary_positions, ms_rotary_cos_partial, ms_rotary_sin_partial,
                               interleaved=1, num_heads=2, rotary_dim=4), [rand(2, 2, 3, 8)])
with_grads("ms_rotary_3d_partial_offset",
           lambda x: ms_rotary(x, torch.tensor([1]), ms_rotary_cos_partial, ms_rotary_sin_partial,
                               num_heads=2, rotary_dim=4), [rand(2, 3, 16)])

# ONNX Runtime's com.microsoft BiasGelu(A, B): the exact gelu of A + B, B over A's last dim.
with_grads("bias_gelu", lambda x, b: F.gelu(x + b), [rand(2, 3, 5, lo=-3, hi=3), rand(5)])

# FastGelu(X, bias?): the tanh form of gelu of X (+ bias over X's last dim).
with_grads("fast_gelu", lambda x: F.gelu(x, approximate="tanh"), [rand(2, 5, lo=-3, hi=3)])
with_grads("fast_gelu_bias", lambda x, b: F.gelu(x + b, approximate="tanh"),
           [rand(2, 3, 5, lo=-3, hi=3), rand(5)])


# SkipLayerNormalization(input, skip, gamma, beta, bias): layer_norm(input + skip + bias) over the
# last axis; SkipSimplifiedLayerNormalization(input, skip, gamma, bias): the RMS norm (rms_norm
# above) of the sum. epsilon 1e-5 (the tests set it). skip [S, H] repeats over the batch.
def skip_ln(x, skip, gamma, beta, bias):
    return F.layer_norm(x + skip + bias, (x.shape[-1],), gamma, beta, eps=1e-5)


with_grads("skip_layer_norm", skip_ln,
           [rand(2, 3, 8, lo=-2, hi=2), rand(2, 3, 8), rand(8, lo=0.5, hi=1.5), rand(8), rand(8)])
with_grads("skip_layer_norm_repeated", lambda x, skip, gamma: F.layer_norm(
    x + skip, (x.shape[-1],), gamma, None, eps=1e-5),
    [rand(2, 3, 8, lo=-2, hi=2), rand(3, 8), rand(8, lo=0.5, hi=1.5)])
with_grads("skip_rms_norm", lambda x, skip, gamma, bias: rms_norm(x + skip + bias, gamma, (-1,)),
           [rand(2, 3, 8, lo=-2, hi=2), rand(1, 3, 8), rand(8, lo=0.5, hi=1.5), rand(8)])
# GatherND as torch's x[i, j] (ONNX indices [[1, 0], [3, 2], [1, 0]]: rows 1, 3, 1 and columns
# 0, 2, 0; the repeated slice's gradient is the sum of both).
with_grads("gathernd",
           lambda d: d[torch.tensor([1, 3, 1]), torch.tensor([0, 2, 0])],
           [rand(4, 3, 2)])

# Range(start, limit, delta) as torch.arange: integer positions (Llama's cache_position), a
# stride that overshoots the limit, a negative delta, float bounds, and an empty range. (A limit
# on the wrong side of start is an error in torch and empty in ONNX: the C++ test checks it.)
RANGE_CASES = [(0, 16, 1), (2, 11, 3), (10, 1, -3), (0.5, 2.0, 0.4), (-1.5, 1.25, 0.75), (5, 5, 1)]
for i, (start, limit, delta) in enumerate(RANGE_CASES):
    lines.append("inline const std::vector<float> range%d_bounds = {%s};"
                 % (i, ", ".join(literal(float(v)) for v in (start, limit, delta))))
    emit("range%d_out" % i, torch.arange(start, limit, delta, dtype=torch.float32))
lines.append("inline const std::vector<std::vector<float>> range_bounds = {%s};"
             % ", ".join("range%d_bounds" % i for i in range(len(RANGE_CASES))))
lines.append("inline const std::vector<std::vector<float>> range_out = {%s};"
             % ", ".join("range%d_out" % i for i in range(len(RANGE_CASES))))

# Conv3d (torchvision's video models): 2 groups, stride (1, 2, 1), pads (1, 0, 1) each side,
# dilation (1, 1, 2); every axis pads, strides or dilates differently.
with_grads("conv3d", lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 1),
                                               dilation=(1, 1, 2), groups=2),
           [rand(2, 4, 3, 5, 6), rand(4, 2, 3, 2, 3), rand(4)])

with open(OUT, "w") as f:
    f.write("#pragma once\n")
    f.write("// Generated by make_kernel_references.py with torch %s. Do not edit.\n\n"
            % torch.__version__)
    f.write("#include <cstdint>\n#include <vector>\n\n")
    f.write("#include \"tests/runtime/grad_case.h\"\n\n// clang-format off\n")
    f.write("namespace memplan::testing::ref {\n\n")
    f.write("\n".join(lines))
    f.write("\n\n}  // namespace memplan::testing::ref\n// clang-format on\n")
print("wrote", OUT)
