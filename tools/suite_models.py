"""Language models for the saved-activation suite (tools/compare_saved_activations.py), written in
plain torch ops the way their reference implementations write them: a LLaMA-style decoder
(RMSNorm, rotary embeddings, SwiGLU, grouped-query attention), a BERT-style encoder that takes a
padding mask, an encoder-decoder (nn.Transformer) and LSTM / GRU language models."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    """LLaMA's RMSNorm as the reference code writes it: x * rsqrt(mean(x^2) + eps) * weight."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep):
    """HF transformers' repeat_kv: [b, kv, s, d] -> [b, kv * n_rep, s, d] by expand + reshape
    (repeat_interleave would export as a Loop)."""
    b, kv, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


class LlamaAttention(nn.Module):
    def __init__(self, dim, heads, kv_heads, max_seq):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        freqs = torch.outer(torch.arange(max_seq).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos()[None, None], persistent=False)
        self.register_buffer("sin", emb.sin()[None, None], persistent=False)
        self.register_buffer("mask", torch.full((max_seq, max_seq), float("-inf")).triu(1),
                             persistent=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.cos[:, :, :t], self.sin[:, :, :t]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = repeat_kv(k, self.heads // self.kv_heads), repeat_kv(v, self.heads // self.kv_heads)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim) + self.mask[:t, :t]
        y = F.softmax(scores, dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(b, t, -1))


class LlamaBlock(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden, max_seq):
        super().__init__()
        self.attn_norm = RMSNorm(dim)
        self.attn = LlamaAttention(dim, heads, kv_heads, max_seq)
        self.mlp_norm = RMSNorm(dim)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class LlamaStyle(nn.Module):
    """vocab 256, dim 64, 2 blocks, 4 query heads sharing 2 key/value heads, SwiGLU hidden 172."""

    def __init__(self, vocab=256, dim=64, layers=2, heads=4, kv_heads=2, hidden=172, max_seq=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(
            [LlamaBlock(dim, heads, kv_heads, hidden, max_seq) for _ in range(layers)])
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class PaddedEncoder(nn.Module):
    """A BERT-style encoder over token ids with a key padding mask (True = padding), 2 layers,
    d 64, 4 heads, GELU, dropout 0.1, post-norm; a per-token classifier of 8 classes."""

    def __init__(self, vocab=200, dim=64, max_seq=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_seq, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, 128, dropout=0.1, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(dim, 8)

    def forward(self, ids, padding):
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(t).unsqueeze(0))
        return self.head(self.encoder(x, src_key_padding_mask=padding))


class Seq2Seq(nn.Module):
    """nn.Transformer (2 encoder + 2 decoder layers, d 64, 4 heads, dropout 0.1) over feature
    sequences, with the causal target mask built inside forward; a 10-class head."""

    def __init__(self, dim=64):
        super().__init__()
        self.transformer = nn.Transformer(dim, 4, 2, 2, 128, dropout=0.1, batch_first=True)
        self.head = nn.Linear(dim, 10)

    def forward(self, src, tgt):
        t = tgt.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        return self.head(self.transformer(src, tgt, tgt_mask=mask))


class RecurrentLM(nn.Module):
    """Embedding 200 x 64 -> 2-layer LSTM or GRU (hidden 128) -> Linear to the vocabulary."""

    def __init__(self, cell, vocab=200, dim=64, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = {"lstm": nn.LSTM, "gru": nn.GRU}[cell](dim, hidden, num_layers=2,
                                                          batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        return self.head(self.rnn(self.embed(ids))[0])


class SmallUNet(nn.Module):
    """A diffusion-style UNet in miniature: GroupNorm + SiLU blocks, a strided-conv downsample,
    F.interpolate(scale_factor=2) upsampling (torch.onnx writes its scales as a Concat of two
    Constants), a skip concat and per-pixel logits for `classes` classes."""

    def __init__(self, classes=10, width=32):
        super().__init__()

        def block(cin, cout, stride=1):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1),
                                 nn.GroupNorm(8, cout), nn.SiLU())
        self.down1 = block(3, width)
        self.down2 = block(width, 2 * width, stride=2)
        self.mid = block(2 * width, 2 * width)
        self.up = block(3 * width, width)
        self.head = nn.Conv2d(width, classes, 1)

    def forward(self, x):
        a = self.down1(x)
        b = self.mid(self.down2(a))
        u = nn.functional.interpolate(b, scale_factor=2, mode="nearest")
        h = self.up(torch.cat([a, u], dim=1))
        return self.head(h).mean(dim=(2, 3))
