"""Ground truth for tests/analyzer/derivation/torch_composite_saved_test.cc: the activation bytes
autograd keeps (saved_tensors_hooks, one count per storage, parameters excluded) for torch ops that
ONNX exporters write as several nodes: torch.max(x, dim), torch.var, F.glu, and the same formulas
written by hand. Run with torch 2.x (tools/setup_torch_env.sh): /work/memplan-venv/bin/python
tests/analyzer/derivation/torch_composite_reference.py. Printed on torch 2.15 CPU:

  max.dim of h: 320
  max.dim of h, keepdim, indices used: 320
  amax of h, keepdim: 544
  var of relu: 512
  written var of relu (Pow): 768
  glu of relu: 512
  chunk gate of relu: 640
  var_mean of W (weight standardisation): 544
  embedding of indices computed from arange (T5's relative buckets): 384
  embedding of a slice of a position buffer: 256
"""
import torch, torch.nn.functional as F
def saved_activation_bytes(fn, params):
    pids = {p.untyped_storage().data_ptr() for p in params}
    seen = {}
    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in pids: seen[st.data_ptr()] = st.nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(seen.values())
x = torch.randn(2, 4, 8); W = torch.randn(8, 8, requires_grad=True)
E = torch.randn(7, 8, requires_grad=True)
E8 = torch.randn(8, 8, requires_grad=True)
position_ids = torch.arange(8)  # a module buffer: model state, excluded like the parameters
cases = {
 "max.dim of h": lambda: torch.max(x @ W, 2)[0],
 "max.dim of h, keepdim, indices used": lambda: (lambda v: v[0] + v[1])(torch.max(x @ W, 2, keepdim=True)),
 "amax of h, keepdim": lambda: (x @ W).amax(2, keepdim=True),
 "var of relu": lambda: torch.relu(x @ W).var(2),
 "written var of relu (Pow)": lambda: (lambda r: ((r - r.mean(2, keepdim=True))**2).mean(2))(torch.relu(x @ W)),
 "glu of relu": lambda: F.glu(torch.relu(x @ W), -1),
 "chunk gate of relu": lambda: (lambda a, b: a * torch.sigmoid(b))(*torch.relu(x @ W).chunk(2, -1)),
 "embedding of indices computed from arange (T5's relative buckets)": lambda: x @ W + F.embedding((lambda r: r[None, :] - r[:, None] + 3)(torch.arange(4)), E).sum(0),
 "embedding of a slice of a position buffer": lambda: x @ W + F.embedding(position_ids[:4], E8),
 "var_mean of W (weight standardisation)": lambda: x @ (lambda v, m: (W - m) / torch.sqrt(v + 1e-5))(*torch.var_mean(W, dim=1, keepdim=True, unbiased=False)),
}
for k, f in cases.items(): print(f"{k}: {saved_activation_bytes(f, [W, E, E8, position_ids])}")
