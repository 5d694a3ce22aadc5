#!/usr/bin/python3
"""An independent restatement of --fused-loss in PyTorch (Debian's torch 1.13, CPU), compared
with memplan's plan of tests/fixtures/lm_head.onnx.

The model: x [b, 16, 32] @ W1 [32, 32] -> h @ W [32, 100] -> logits [b, 16, 100], cross entropy.

* Unfused: F.cross_entropy on the logits, the bytes autograd keeps counted with
  saved_tensors_hooks once per storage (parameters excluded), as program_saved_reference.py does.
  nll_loss also keeps total_weight, a 4-byte scalar memplan does not count (loss_ops.cc); it is
  left out here too.
* Fused: Liger Kernel's algorithm restated (liger_kernel/ops/fused_linear_cross_entropy.py,
  fused_linear_cross_entropy_forward): inc_factor = cdiv(V, H), chunk_size =
  next_power_of_2(cdiv(BT, inc_factor)); per chunk, logits = x_chunk @ W^T, the softmax gradient
  in place, grad_input[rows] = grad_logits @ W, grad_weight += grad_logits^T @ x_chunk; forward
  saves grad_input and grad_weight, backward returns them. Its gradients must equal the unfused
  ones (checked), and what it saves is counted with the same hooks.

Usage: fused_loss_reference.py MEMPLAN_BINARY FIXTURES_DIR. Exit 0 when memplan's
saved_activation_bytes and fused_loss_chunk_rows equal the reference at b = 2, 3, 4; 1 otherwise;
77 (skipped) without torch.
"""
import json
import subprocess
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(77)

SEQ, HIDDEN, VOCAB = 16, 32, 100


def next_power_of_2(n):
    p = 1
    while p < n:
        p *= 2
    return p


def cdiv(a, b):
    return (a + b - 1) // b


class LigerStyleFusedLinearCrossEntropy(torch.autograd.Function):
    """Liger's fused linear cross entropy, mean reduction, no ignore_index in the labels."""

    @staticmethod
    def forward(ctx, inp, weight, target):
        bt, hidden = inp.shape
        vocab = weight.shape[0]
        inc_factor = cdiv(vocab, hidden)
        chunk_size = next_power_of_2(cdiv(bt, inc_factor))
        grad_input = torch.zeros_like(inp)
        grad_weight = torch.zeros_like(weight)
        loss_1d = torch.zeros(bt, dtype=torch.float32)
        n = bt
        for start in range(0, bt, chunk_size):
            end = min(start + chunk_size, bt)
            x_chunk = inp[start:end]
            logits = x_chunk @ weight.t()
            lse = torch.logsumexp(logits, dim=-1)
            y = target[start:end]
            loss_1d[start:end] = (lse - logits.gather(1, y[:, None])[:, 0]) / n
            # The gradient of the mean loss w.r.t. the logits, written in place as Liger's kernel
            # does: softmax - one_hot, over n rows.
            logits.sub_(lse[:, None]).exp_()
            logits[torch.arange(end - start), y] -= 1
            logits.div_(n)
            grad_input[start:end] = logits @ weight
            grad_weight += logits.t() @ x_chunk
        ctx.save_for_backward(grad_input, grad_weight)
        ctx.chunk_size = min(chunk_size, bt)
        return loss_1d.sum()

    @staticmethod
    def backward(ctx, grad_output):
        grad_input, grad_weight = ctx.saved_tensors
        if not torch.equal(grad_output, torch.tensor(1.0)):
            grad_input = grad_input * grad_output
            grad_weight = grad_weight * grad_output
        return grad_input, grad_weight, None


def saved_bytes(params, run):
    skip = {p.data_ptr() for p in params}
    seen = {}

    def pack(t):
        # nll_loss's total_weight: a 0-d scalar memplan does not count.
        if t.data_ptr() not in skip and t.dim() > 0:
            seen[t.data_ptr()] = max(seen.get(t.data_ptr(), 0), t.storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run()
    return sum(seen.values()), out


def reference(b):
    torch.manual_seed(b)
    x = torch.randn(b, SEQ, HIDDEN)
    w1 = torch.randn(HIDDEN, HIDDEN, requires_grad=True)
    w = torch.randn(HIDDEN, VOCAB, requires_grad=True)  # the fixture's MatMul(h, W [H, V])
    labels = torch.randint(0, VOCAB, (b, SEQ))

    def unfused():
        h = x @ w1
        return F.cross_entropy((h @ w).reshape(-1, VOCAB), labels.reshape(-1))

    def fused():
        h = x @ w1
        # Liger reads the weight as [V, H]; the [H, V] parameter transposed is a view.
        return LigerStyleFusedLinearCrossEntropy.apply(h.reshape(-1, HIDDEN), w.t(),
                                                       labels.reshape(-1))

    unfused_saved, loss = saved_bytes([w1, w], unfused)
    loss.backward()
    grads = (w1.grad.clone(), w.grad.clone())
    w1.grad = None
    w.grad = None
    fused_saved, fused_loss = saved_bytes([w1, w], fused)
    fused_loss.backward()
    assert torch.allclose(loss, fused_loss, atol=1e-5), (loss, fused_loss)
    assert torch.allclose(grads[0], w1.grad, atol=1e-4, rtol=1e-4)
    assert torch.allclose(grads[1], w.grad, atol=1e-4, rtol=1e-4)
    bt = b * SEQ
    chunk = min(bt, next_power_of_2(cdiv(bt, cdiv(VOCAB, HIDDEN))))
    return unfused_saved, fused_saved, chunk


def memplan(binary, model, b, fused):
    args = [binary, "analyze", model, "--gpu", "24G", "--batch", str(b), "--precision", "fp32",
            "--recompute", "none", "--json"]
    if fused:
        args.append("--fused-loss")
    out = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    return out["saved_activation_bytes"], out["plan"].get("fused_loss_chunk_rows")


def main():
    binary, fixtures = sys.argv[1], sys.argv[2]
    model = fixtures + "/lm_head.onnx"
    failures = 0
    for b in (2, 3, 4):
        unfused, fused, chunk = reference(b)
        m_unfused, _ = memplan(binary, model, b, False)
        m_fused, m_chunk = memplan(binary, model, b, True)
        ok = (unfused, fused, chunk) == (m_unfused, m_fused, m_chunk)
        failures += not ok
        print(f"b={b}: torch saved unfused {unfused} fused {fused} chunk {chunk}; memplan "
              f"{m_unfused} {m_fused} {m_chunk}: {'ok' if ok else 'MISMATCH'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
