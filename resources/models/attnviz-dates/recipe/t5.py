# SPDX-License-Identifier: GPL-3.0-or-later
"""T5 v1.0 in torch, written to compute what Hugging Face's T5ForConditionalGeneration computes
(modeling_t5.py, transcribed in float64 by tests/fixtures/models/make_t5.py): T5LayerNorm (no mean
subtracted, no bias), attention without 1/sqrt(d_kv) on q k^T, a bucketed relative position bias
held by block 0 of each stack and added in every layer of that stack (bidirectional in the encoder,
causal buckets in the decoder), none in cross-attention, a ReLU feed-forward, the LM head tied to
`shared` with the final states scaled by d_model^-0.5, and decoding that starts from pad (id 0).
Parameters carry HF's tensor names (model.named_parameters() gives them), so export writes them as is.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance):
    # T5Attention._relative_position_bucket
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    large = max_exact + (torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return relative_buckets + torch.where(is_small, relative_position, large)


class LayerNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


class Attention(nn.Module):
    def __init__(self, c, has_bias, bidirectional):
        super().__init__()
        d, inner = c["d_model"], c["d_kv"] * c["num_heads"]
        self.H, self.dk = c["num_heads"], c["d_kv"]
        self.q = nn.Linear(d, inner, bias=False)
        self.k = nn.Linear(d, inner, bias=False)
        self.v = nn.Linear(d, inner, bias=False)
        self.o = nn.Linear(inner, d, bias=False)
        self.bidirectional = bidirectional
        self.nb, self.md = c["relative_attention_num_buckets"], c["relative_attention_max_distance"]
        if has_bias:
            self.relative_attention_bias = nn.Embedding(self.nb, self.H)

    def compute_bias(self, q_len, k_len):
        ctx = torch.arange(q_len)[:, None]
        mem = torch.arange(k_len)[None, :]
        b = relative_position_bucket(mem - ctx, self.bidirectional, self.nb, self.md)
        return self.relative_attention_bias(b).permute(2, 0, 1).unsqueeze(0)  # (1, H, q, k)

    def forward(self, x, kv, bias):
        B, T, _ = x.shape
        S = kv.shape[1]
        q = self.q(x).view(B, T, self.H, self.dk).transpose(1, 2)
        k = self.k(kv).view(B, S, self.H, self.dk).transpose(1, 2)
        v = self.v(kv).view(B, S, self.H, self.dk).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) + bias  # no 1/sqrt(d_kv)
        w = F.softmax(scores.float(), dim=-1).type_as(scores)
        out = (w @ v).transpose(1, 2).reshape(B, T, self.H * self.dk)
        return self.o(out), w


class DenseReluDense(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wi = nn.Linear(c["d_model"], c["d_ff"], bias=False)
        self.wo = nn.Linear(c["d_ff"], c["d_model"], bias=False)

    def forward(self, x):
        return self.wo(F.relu(self.wi(x)))


class SelfLayer(nn.Module):
    def __init__(self, c, has_bias, bidirectional):
        super().__init__()
        self.SelfAttention = Attention(c, has_bias, bidirectional)
        self.layer_norm = LayerNorm(c["d_model"], c["layer_norm_epsilon"])


class CrossLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.EncDecAttention = Attention(c, False, True)
        self.layer_norm = LayerNorm(c["d_model"], c["layer_norm_epsilon"])


class FFLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.DenseReluDense = DenseReluDense(c)
        self.layer_norm = LayerNorm(c["d_model"], c["layer_norm_epsilon"])


class Block(nn.Module):
    def __init__(self, c, first, decoder):
        super().__init__()
        layers = [SelfLayer(c, first, not decoder)]
        if decoder:
            layers.append(CrossLayer(c))
        layers.append(FFLayer(c))
        self.layer = nn.ModuleList(layers)


class Stack(nn.Module):
    def __init__(self, c, n, decoder):
        super().__init__()
        self.block = nn.ModuleList([Block(c, i == 0, decoder) for i in range(n)])
        self.final_layer_norm = LayerNorm(c["d_model"], c["layer_norm_epsilon"])


class T5(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.shared = nn.Embedding(c["vocab_size"], c["d_model"])
        self.encoder = Stack(c, c["num_layers"], False)
        self.decoder = Stack(c, c["num_decoder_layers"], True)
        self.init_weights()

    def init_weights(self):
        # T5PreTrainedModel._init_weights with initializer_factor 1.0
        c = self.c
        d, dk, inner, ff = c["d_model"], c["d_kv"], c["d_kv"] * c["num_heads"], c["d_ff"]
        for name, p in self.named_parameters():
            if name.endswith("layer_norm.weight"):
                nn.init.ones_(p)
            elif name == "shared.weight":
                nn.init.normal_(p, 0.0, 1.0)
            elif name.endswith(".q.weight"):
                nn.init.normal_(p, 0.0, (d * dk) ** -0.5)
            elif name.endswith((".k.weight", ".v.weight")):
                nn.init.normal_(p, 0.0, d ** -0.5)
            elif name.endswith(".o.weight"):
                nn.init.normal_(p, 0.0, inner ** -0.5)
            elif name.endswith("wi.weight"):
                nn.init.normal_(p, 0.0, d ** -0.5)
            elif name.endswith("wo.weight"):
                nn.init.normal_(p, 0.0, ff ** -0.5)
            elif name.endswith("relative_attention_bias.weight"):
                nn.init.normal_(p, 0.0, d ** -0.5)
            else:
                raise ValueError(name)

    def encode(self, src, src_mask=None, attentions=None):
        """src (B, S) ids; src_mask (B, S) True where a token is real (None: all are)."""
        B, S = src.shape
        x = self.shared(src)
        blocks = self.encoder.block
        bias = blocks[0].layer[0].SelfAttention.compute_bias(S, S)
        if src_mask is not None:  # HF's extended attention mask: the dtype's minimum on padded keys
            bias = bias + (~src_mask)[:, None, None, :].to(x.dtype) * torch.finfo(x.dtype).min
        for b in blocks:
            sa, ff = b.layer[0], b.layer[1]
            a, w = sa.SelfAttention(sa.layer_norm(x), sa.layer_norm(x), bias)
            x = x + a
            x = x + ff.DenseReluDense(ff.layer_norm(x))
            if attentions is not None:
                attentions.append(w)
        return self.encoder.final_layer_norm(x)

    def decode(self, enc, dec_in, src_mask=None, cross=None):
        """Logits (B, T, vocab) of every decoder position; cross, when a list, gets each layer's
        cross-attention weights (B, H, T, S)."""
        B, T = dec_in.shape
        S = enc.shape[1]
        y = self.shared(dec_in)
        blocks = self.decoder.block
        bias = blocks[0].layer[0].SelfAttention.compute_bias(T, T)
        bias = bias + torch.triu(torch.ones(T, T, dtype=torch.bool), 1).to(y.dtype) * torch.finfo(y.dtype).min
        cbias = torch.zeros(1, 1, 1, S, dtype=y.dtype)
        if src_mask is not None:
            cbias = cbias + (~src_mask)[:, None, None, :].to(y.dtype) * torch.finfo(y.dtype).min
        for b in blocks:
            sa, ca, ff = b.layer[0], b.layer[1], b.layer[2]
            h = sa.layer_norm(y)
            a, _ = sa.SelfAttention(h, h, bias)
            y = y + a
            a, w = ca.EncDecAttention(ca.layer_norm(y), enc, cbias)
            y = y + a
            y = y + ff.DenseReluDense(ff.layer_norm(y))
            if cross is not None:
                cross.append(w)
        y = self.decoder.final_layer_norm(y) * (self.c["d_model"] ** -0.5)
        return y @ self.shared.weight.t()

    @torch.no_grad()
    def greedy(self, src, src_mask=None, max_new=12):
        """Greedy decoding from decoder_start (pad 0) until </s> (1) or max_new tokens; (B, n) ids
        without the start token (rows that ended early are padded with 0 after their </s>)."""
        enc = self.encode(src, src_mask)
        B = src.shape[0]
        ids = torch.full((B, 1), self.c["decoder_start_token_id"], dtype=torch.long)
        done = torch.zeros(B, dtype=torch.bool)
        for _ in range(max_new):
            nxt = self.decode(enc, ids, src_mask)[:, -1].argmax(-1)
            nxt = torch.where(done, torch.zeros_like(nxt), nxt)
            ids = torch.cat([ids, nxt[:, None]], 1)
            done |= nxt == self.c["eos_token_id"]
            if bool(done.all()):
                break
        return ids[:, 1:]
