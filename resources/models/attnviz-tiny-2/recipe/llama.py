# SPDX-License-Identifier: GPL-3.0-or-later
"""The Llama model attnviz-tiny 2 is: a PyTorch module for training, the Hugging Face folder's
config.json and safetensors, and a plain float64 forward of a saved folder (the reference that the
scores and the C++ loader's tests are checked on).

Architecture (Hugging Face LlamaForCausalLM, so attnviz's `llama` family reads it): RMSNorm before
attention and before the MLP and at the end, rotary positions on every head (HF's rotate-half
layout: the first and second halves of a head's dimensions are the rotated pairs), grouped-query
attention (n_kv_heads key/value heads, each shared by n_heads / n_kv_heads query heads), a SwiGLU
MLP (down(silu(gate(x)) * up(x))), no biases, the LM head tied to the token embeddings.
Parameters keep HF's names, so exporting is writing the state dict. Works with Debian's
python3-torch 1.13 and newer torch.
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "attnviz-tiny", "recipe"))
from gpt2 import load_safetensors  # noqa: E402  (F32, F16 and BF16)


def rope_tables(T, dh, theta, dtype=torch.float32, device="cpu"):
    inv = 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos().to(dtype=dtype, device=device), ang.sin().to(dtype=dtype, device=device)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Layer(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, dh = cfg["hidden_size"], cfg["head_dim"]
        self.h, self.kv, self.dh = cfg["num_attention_heads"], cfg["num_key_value_heads"], dh
        eps = cfg["rms_norm_eps"]
        self.input_layernorm = RMSNorm(d, eps)
        self.self_attn = torch.nn.Module()
        self.self_attn.q_proj = torch.nn.Linear(d, self.h * dh, bias=False)
        self.self_attn.k_proj = torch.nn.Linear(d, self.kv * dh, bias=False)
        self.self_attn.v_proj = torch.nn.Linear(d, self.kv * dh, bias=False)
        self.self_attn.o_proj = torch.nn.Linear(self.h * dh, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d, eps)
        self.mlp = torch.nn.Module()
        self.mlp.gate_proj = torch.nn.Linear(d, cfg["intermediate_size"], bias=False)
        self.mlp.up_proj = torch.nn.Linear(d, cfg["intermediate_size"], bias=False)
        self.mlp.down_proj = torch.nn.Linear(cfg["intermediate_size"], d, bias=False)
        # Training only: train.py's drill switches the MLP off so that attention alone learns to
        # copy; the exported model always runs it.
        self.use_mlp = True

    def forward(self, x, cos, sin, mask, want_weights=False):
        B, T, _ = x.shape
        a = self.input_layernorm(x)
        q = self.self_attn.q_proj(a).view(B, T, self.h, self.dh).transpose(1, 2)
        k = self.self_attn.k_proj(a).view(B, T, self.kv, self.dh).transpose(1, 2)
        v = self.self_attn.v_proj(a).view(B, T, self.kv, self.dh).transpose(1, 2)
        q = q * cos[:T] + rotate_half(q) * sin[:T]
        k = k * cos[:T] + rotate_half(k) * sin[:T]
        g = self.h // self.kv
        k = k.repeat_interleave(g, dim=1)  # query head i reads key/value head i // g, as HF's repeat_kv
        v = v.repeat_interleave(g, dim=1)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.dh))
        s = s.masked_fill(mask[:T, :T], float("-inf"))
        w = F.softmax(s, dim=-1)
        o = (w @ v).transpose(1, 2).reshape(B, T, self.h * self.dh)
        x = x + self.self_attn.o_proj(o)
        if self.use_mlp:
            m = self.post_attention_layernorm(x)
            x = x + self.mlp.down_proj(F.silu(self.mlp.gate_proj(m)) * self.mlp.up_proj(m))
        return x, (w if want_weights else None)


class Llama(torch.nn.Module):
    """cfg: the HF config.json dict (hidden_size, head_dim, num_*_heads, intermediate_size, ...)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = torch.nn.Module()
        self.model.embed_tokens = torch.nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.model.layers = torch.nn.ModuleList(Layer(cfg) for _ in range(cfg["num_hidden_layers"]))
        self.model.norm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        n = cfg["max_position_embeddings"]
        cos, sin = rope_tables(n, cfg["head_dim"], cfg["rope_theta"])
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.register_buffer("mask", torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1), persistent=False)
        std = 0.02
        for name, p in self.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                torch.nn.init.ones_(p)
            elif name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
                torch.nn.init.normal_(p, 0.0, std / math.sqrt(2 * cfg["num_hidden_layers"]))
            else:
                torch.nn.init.normal_(p, 0.0, std)

    def forward(self, ids, want_weights=False):
        x = self.model.embed_tokens(ids)
        ws = []
        for layer in self.model.layers:
            x, w = layer(x, self.cos.to(x.dtype), self.sin.to(x.dtype), self.mask, want_weights)
            ws.append(w)
        logits = self.model.norm(x) @ self.model.embed_tokens.weight.t()
        return (logits, ws) if want_weights else logits


def hf_config(arch, vocab, bos):
    """config.json as Hugging Face's LlamaConfig writes it (the keys a loader reads)."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": vocab,
        "hidden_size": arch["hidden_size"],
        "intermediate_size": arch["intermediate_size"],
        "num_hidden_layers": arch["num_hidden_layers"],
        "num_attention_heads": arch["num_attention_heads"],
        "num_key_value_heads": arch["num_key_value_heads"],
        "head_dim": arch["head_dim"],
        "hidden_act": "silu",
        "max_position_embeddings": arch["max_position_embeddings"],
        "rms_norm_eps": arch["rms_norm_eps"],
        "rope_theta": arch["rope_theta"],
        "rope_scaling": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "tie_word_embeddings": True,
        "bos_token_id": bos,
        "eos_token_id": bos,
        "initializer_range": 0.02,
        "torch_dtype": "bfloat16",
    }


# --- safetensors in BF16 -------------------------------------------------------------------------
# Written by hand (Debian 12 has no python3-safetensors; the format is gpt2.save_safetensors'):
# BF16 is float32's upper 16 bits after round-to-nearest-even, as torch's .to(torch.bfloat16).

def to_bf16_bits(a):
    t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(torch.bfloat16)
    return t.view(torch.int16).numpy().astype("<i2")


def save_safetensors_bf16(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        bits = to_bf16_bits(tensors[name].detach().cpu().float().numpy())
        data = bits.tobytes()
        header[name] = {"dtype": "BF16", "shape": list(bits.shape), "data_offsets": [offset, offset + len(data)]}
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


# --- the float64 reference forward of a saved folder ---------------------------------------------

class Reference:
    """Llama forward in float64 numpy from config.json + model.safetensors; no torch.
    run(ids) -> (logits [T, V], attention weights [layer][head] each [T, T])."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.cfg = json.load(f)
        self.w = load_safetensors(os.path.join(folder, "model.safetensors"))

    @staticmethod
    def _rms(x, g, eps):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g

    def run(self, ids):
        c, w = self.cfg, self.w
        eps, H, KV, dh = c["rms_norm_eps"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        T = len(ids)
        inv = 1.0 / (c["rope_theta"] ** (np.arange(0, dh, 2) / dh))
        ang = np.arange(T)[:, None] * inv[None, :]
        cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))

        def rope(x):
            h = dh // 2
            return x * cos + np.concatenate([-x[:, h:], x[:, :h]], 1) * sin

        x = w["model.embed_tokens.weight"][ids]
        causal = np.triu(np.ones((T, T), dtype=bool), 1)
        layers = []
        for l in range(c["num_hidden_layers"]):
            p = f"model.layers.{l}."
            a = self._rms(x, w[p + "input_layernorm.weight"], eps)
            q = a @ w[p + "self_attn.q_proj.weight"].T
            k = a @ w[p + "self_attn.k_proj.weight"].T
            v = a @ w[p + "self_attn.v_proj.weight"].T
            heads, outs = [], []
            for hh in range(H):
                kk = hh // (H // KV)
                qs = rope(q[:, hh * dh:(hh + 1) * dh])
                ks = rope(k[:, kk * dh:(kk + 1) * dh])
                sc = qs @ ks.T / math.sqrt(dh)
                sc[causal] = -np.inf
                sc = sc - sc.max(-1, keepdims=True)
                e = np.exp(sc)
                wt = e / e.sum(-1, keepdims=True)
                heads.append(wt)
                outs.append(wt @ v[:, kk * dh:(kk + 1) * dh])
            x = x + np.concatenate(outs, 1) @ w[p + "self_attn.o_proj.weight"].T
            m = self._rms(x, w[p + "post_attention_layernorm.weight"], eps)
            g = m @ w[p + "mlp.gate_proj.weight"].T
            u = m @ w[p + "mlp.up_proj.weight"].T
            x = x + (g / (1.0 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
            layers.append(heads)
        x = self._rms(x, w["model.norm.weight"], eps)
        return x @ w["model.embed_tokens.weight"].T, layers
