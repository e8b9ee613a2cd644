# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPT-2 model attnviz-tiny is: a PyTorch module for training, safetensors in and out, and a
plain float64 forward of a saved folder (the reference the scores and the C++ loader are checked on).

The module keeps its parameters under Hugging Face GPT-2's names and layouts (Conv1D: weight is
(in, out), y = x @ W + b; c_attn's columns are q | k | v; the LM head is wte, tied), so exporting
is writing the state dict as it is. Works with Debian's python3-torch 1.13 and newer torch.
"""
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F


def gelu_new(x):
    # GPT-2's "gelu_new": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Conv1D(torch.nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(n_in, n_out))
        self.bias = torch.nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).reshape(*x.shape[:-1], -1)


class Block(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, n_inner, eps = cfg["n_embd"], cfg["n_inner"], cfg["layer_norm_epsilon"]
        self.n_head = cfg["n_head"]
        self.ln_1 = torch.nn.LayerNorm(d, eps=eps)
        self.attn = torch.nn.Module()
        self.attn.c_attn = Conv1D(d, 3 * d)
        self.attn.c_proj = Conv1D(d, d)
        self.ln_2 = torch.nn.LayerNorm(d, eps=eps)
        self.mlp = torch.nn.Module()
        self.mlp.c_fc = Conv1D(d, n_inner)
        self.mlp.c_proj = Conv1D(n_inner, d)
        # Training only: the MLP can be switched off (train.py's drill phase trains the attention
        # alone); the exported model always runs it, as GPT-2 does.
        self.use_mlp = True

    def forward(self, x, mask, want_weights=False):
        B, T, d = x.shape
        h, dh = self.n_head, d // self.n_head
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(d, dim=2)
        q = q.view(B, T, h, dh).transpose(1, 2)
        k = k.view(B, T, h, dh).transpose(1, 2)
        v = v.view(B, T, h, dh).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        scores = scores.masked_fill(mask[:T, :T], float("-inf"))
        w = F.softmax(scores, dim=-1)
        a = (w @ v).transpose(1, 2).reshape(B, T, d)
        x = x + self.attn.c_proj(a)
        if self.use_mlp:
            x = x + self.mlp.c_proj(gelu_new(self.mlp.c_fc(self.ln_2(x))))
        return (x, w) if want_weights else (x, None)


class GPT2(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg["n_embd"]
        self.wte = torch.nn.Embedding(cfg["vocab_size"], d)
        self.wpe = torch.nn.Embedding(cfg["n_positions"], d)
        self.h = torch.nn.ModuleList(Block(cfg) for _ in range(cfg["n_layer"]))
        self.ln_f = torch.nn.LayerNorm(d, eps=cfg["layer_norm_epsilon"])
        n = cfg["n_positions"]
        self.register_buffer("mask", torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1), persistent=False)
        self.init_weights()

    def init_weights(self):
        # GPT-2's initialisation: N(0, 0.02), residual projections scaled by 1/sqrt(2 n_layer).
        std = 0.02
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                torch.nn.init.zeros_(p)
            elif ".ln_" in name or name.startswith("ln_"):
                torch.nn.init.ones_(p)
            else:
                s = std / math.sqrt(2 * self.cfg["n_layer"]) if name.endswith("c_proj.weight") else std
                torch.nn.init.normal_(p, mean=0.0, std=s)
        # Positions start as sinusoids (Vaswani et al.) of the same RMS as the token embeddings,
        # then are learned like GPT-2's. A relative offset ("the token before") is then one linear
        # map for every position, so a previous-token head can form early; from a random start a
        # small model on this budget kept uniform attention for 1,250 steps (measured, see MANIFEST).
        n, d = self.cfg["n_positions"], self.cfg["n_embd"]
        pos = torch.arange(n, dtype=torch.float64)[:, None]
        freq = torch.pow(10000.0, -torch.arange(0, d, 2, dtype=torch.float64) / d)[None, :]
        pe = torch.zeros(n, d, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(pos * freq)
        pe[:, 1::2] = torch.cos(pos * freq)
        with torch.no_grad():
            self.wpe.weight.copy_((pe * std * math.sqrt(2.0)).to(self.wpe.weight.dtype))

    def forward(self, ids, want_weights=False):
        T = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(T, device=ids.device))
        weights = []
        for block in self.h:
            x, w = block(x, self.mask, want_weights)
            weights.append(w)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return (logits, weights) if want_weights else logits


def hf_config(cfg):
    """config.json as Hugging Face's GPT2Config writes it (the keys a loader reads)."""
    return {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": cfg["vocab_size"],
        "n_positions": cfg["n_positions"],
        "n_ctx": cfg["n_positions"],
        "n_embd": cfg["n_embd"],
        "n_layer": cfg["n_layer"],
        "n_head": cfg["n_head"],
        "n_inner": cfg["n_inner"],
        "activation_function": "gelu_new",
        "layer_norm_epsilon": cfg["layer_norm_epsilon"],
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "initializer_range": 0.02,
        "scale_attn_weights": True,
        "tie_word_embeddings": True,
        "bos_token_id": cfg["vocab_size"] - 1,
        "eos_token_id": cfg["vocab_size"] - 1,
        "torch_dtype": "float32",
    }


# --- safetensors ---------------------------------------------------------------------------------
# Written by hand: Debian 12 has no python3-safetensors. Format: u64 LE header length, a JSON header
# {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}} padded with spaces to a
# multiple of 8, then the raw little-endian tensors back to back.

def save_safetensors(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name].detach().cpu().numpy().astype("<f4"))
        data = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_safetensors(path):
    """name -> float64 numpy array (F32, F16 and BF16 files; BF16 is float32's upper 16 bits)."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        buf = raw[base + b:base + e]
        if info["dtype"] == "BF16":
            a = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(buf, dtype={"F32": "<f4", "F16": "<f2", "F64": "<f8"}[info["dtype"]])
        out[name] = a.reshape(info["shape"]).astype(np.float64)
    return out


# --- the float64 reference forward of a saved folder ---------------------------------------------

class Reference:
    """GPT-2 forward in float64 numpy, read from config.json + model.safetensors; no torch.
    run(ids) -> (logits [T, V], attention weights [layer][head] each [T, T])."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.cfg = json.load(f)
        self.w = load_safetensors(os.path.join(folder, "model.safetensors"))

    @staticmethod
    def _ln(x, g, b, eps):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * g + b

    def run(self, ids):
        c, w = self.cfg, self.w
        eps, H, d = c["layer_norm_epsilon"], c["n_head"], c["n_embd"]
        dh = d // H
        T = len(ids)
        assert T <= c["n_positions"]
        x = w["wte.weight"][ids] + w["wpe.weight"][:T]
        causal = np.triu(np.ones((T, T), dtype=bool), 1)
        layers = []
        for l in range(c["n_layer"]):
            p = f"h.{l}."
            a = self._ln(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
            qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
            q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
            heads, outs = [], []
            for hh in range(H):
                s = slice(hh * dh, (hh + 1) * dh)
                sc = q[:, s] @ k[:, s].T / math.sqrt(dh)
                sc[causal] = -np.inf
                sc = sc - sc.max(-1, keepdims=True)
                e = np.exp(sc)
                wt = e / e.sum(-1, keepdims=True)
                heads.append(wt)
                outs.append(wt @ v[:, s])
            x = x + np.concatenate(outs, 1) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
            m = self._ln(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
            hdn = m @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
            hdn = 0.5 * hdn * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (hdn + 0.044715 * hdn ** 3)))
            x = x + hdn @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
            layers.append(heads)
        x = self._ln(x, w["ln_f.weight"], w["ln_f.bias"], eps)
        return x @ w["wte.weight"].T, layers
