#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
# PyTorch peer of `attnviz bench --seeded smollm2-135m|qwen3-0.6b|llama3.2-1b`: the same rotary decoder
# shapes (architecture.cpp: seededShape) and the same work, float32 eager, 2 threads, written from
# Hugging Face transformers' modeling_llama.py / modeling_qwen3.py / modeling_rope_utils.py (no
# `transformers` package here: the arithmetic is spelled out below, layer by layer as HF runs it):
# RMSNorm, q/k/v projections, Qwen3's per-head q/k RMSNorm before the rotation, rotate_half RoPE
# (llama3 frequency scaling for Llama 3.2), repeat_kv for grouped-query attention, softmax attention
# weights of every layer and head kept (output_attentions, as attnviz's trace keeps them), SwiGLU MLP,
# the final norm, the tied LM head at the last position with its top 10. One token appended through
# a key/value cache (k after rotation, v; before repeat_kv, as HF's DynamicCache holds them).
# Prints one JSON object (torch_models.py's fields, plus each full trace's FLOPs and the parameter
# count). For a strong peer run it with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (models_peer.py does).
#   /usr/bin/python3 tests/bench/torch_llama.py SHAPE [--tokens 128,1024] [--repeat 5] [--threads 2]
#   /usr/bin/python3 tests/bench/torch_llama.py --sgemm     the machine's torch.mm 2048^3 rate, GFLOP/s
#   /usr/bin/python3 tests/bench/torch_llama.py --check     validates this forward on tiny shapes
import argparse, json, math, os, resource, statistics, sys, time
import torch
import torch.nn.functional as F

# The real checkpoints' config.json values (all three tie the LM head to the embedding).
SHAPES = {
    'smollm2-135m': dict(L=30, H=9, KV=3, D=576, dh=64, FF=1536, V=49152, theta=1e5, eps=1e-5, qk_norm=False, llama3=None),
    'qwen3-0.6b': dict(L=28, H=16, KV=8, D=1024, dh=128, FF=3072, V=151936, theta=1e6, eps=1e-6, qk_norm=True, llama3=None),
    'llama3.2-1b': dict(L=16, H=32, KV=8, D=2048, dh=64, FF=8192, V=128256, theta=5e5, eps=1e-5, qk_norm=False,
                        llama3=dict(factor=32.0, low=1.0, high=4.0, original=8192)),
}


def params(S):
    """Parameter count (tied embedding counted once)."""
    L, H, KV, D, dh, FF, V = (S[k] for k in ('L', 'H', 'KV', 'D', 'dh', 'FF', 'V'))
    per_layer = D * H * dh * 2 + D * KV * dh * 2 + 3 * D * FF + 2 * D + (2 * dh if S['qk_norm'] else 0)
    return V * D + L * per_layer + D


def full_trace_flops(S, n):
    """FLOPs of a full trace of n tokens, 2 per multiply-add of the matrix products as a dense forward
    computes them: q/k/v/o and the three MLP projections on every token, the n x n scores and the
    weighted values of every head (the masked half included), the LM head at the last position.
    Norms, rotation, softmax and SiLU (O(n d)) are left out."""
    L, H, KV, D, dh, FF, V = (S[k] for k in ('L', 'H', 'KV', 'D', 'dh', 'FF', 'V'))
    proj = 2 * n * D * (2 * H * dh + 2 * KV * dh + 3 * FF)
    attn = 2 * 2 * H * n * n * dh
    return L * (proj + attn) + 2 * D * V


def inv_freq(S):
    """modeling_rope_utils: _compute_default_rope_parameters and _compute_llama3_parameters, in float32
    tensors as transformers evaluates them."""
    dh = S['dh']
    inv = 1.0 / (S['theta'] ** (torch.arange(0, dh, 2, dtype=torch.int64).float() / dh))
    r = S['llama3']
    if r is None:
        return inv
    low_wavelen, high_wavelen = r['original'] / r['low'], r['original'] / r['high']
    wavelen = 2 * math.pi / inv
    inv_l = torch.where(wavelen > low_wavelen, inv / r['factor'], inv)
    smooth = (r['original'] / wavelen - r['low']) / (r['high'] - r['low'])
    smoothed = (1 - smooth) * inv_l / r['factor'] + smooth * inv_l
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, inv_l)


def seeded_weights(S, seed=1, sd=0.02):
    """Random float32 weights under Hugging Face's tensor names (without the `model.` prefix): N(0, sd)
    matrices (0.02: initializer_range), norms at 1 (their initial value)."""
    g = torch.Generator().manual_seed(seed)
    L, H, KV, D, dh, FF, V = (S[k] for k in ('L', 'H', 'KV', 'D', 'dh', 'FF', 'V'))

    def w(*s):
        return torch.randn(*s, generator=g).mul_(sd)

    W = {'embed_tokens.weight': w(V, D), 'norm.weight': torch.ones(D)}
    for l in range(L):
        b = f'layers.{l}.'
        W.update({b + 'input_layernorm.weight': torch.ones(D), b + 'post_attention_layernorm.weight': torch.ones(D),
                  b + 'self_attn.q_proj.weight': w(H * dh, D), b + 'self_attn.k_proj.weight': w(KV * dh, D),
                  b + 'self_attn.v_proj.weight': w(KV * dh, D), b + 'self_attn.o_proj.weight': w(D, H * dh),
                  b + 'mlp.gate_proj.weight': w(FF, D), b + 'mlp.up_proj.weight': w(FF, D),
                  b + 'mlp.down_proj.weight': w(D, FF)})
        if S['qk_norm']:
            W.update({b + 'self_attn.q_norm.weight': torch.ones(dh), b + 'self_attn.k_norm.weight': torch.ones(dh)})
    return W


def rms_norm(x, w, eps):
    # LlamaRMSNorm / Qwen3RMSNorm: weight * (x * rsqrt(mean(x^2) + eps))
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def repeat_kv(x, rep):
    # [kv heads, t, dh] -> [kv heads * rep, t, dh]: query head h reads key/value head h // rep
    if rep == 1:
        return x
    kv, t, dh = x.shape
    return x[:, None].expand(kv, rep, t, dh).reshape(kv * rep, t, dh)


@torch.no_grad()
def forward(S, W, inv, ids, cache=None):
    """ids [t] after the cache's tokens. Returns every layer's attention weights [H, t, keys], the new
    cache, the final-normed hidden states [t, D] and the next-token probabilities at the last position."""
    t = len(ids)
    H, KV, dh, eps = S['H'], S['KV'], S['dh'], S['eps']
    start = 0 if cache is None else cache[0][0].shape[1]
    x = W['embed_tokens.weight'][ids]
    freqs = torch.arange(start, start + t, dtype=torch.float32)[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    kept, newcache = [], []
    for l in range(S['L']):
        b = f'layers.{l}.'
        h = rms_norm(x, W[b + 'input_layernorm.weight'], eps)
        q = F.linear(h, W[b + 'self_attn.q_proj.weight']).view(t, H, dh)
        k = F.linear(h, W[b + 'self_attn.k_proj.weight']).view(t, KV, dh)
        v = F.linear(h, W[b + 'self_attn.v_proj.weight']).view(t, KV, dh)
        if S['qk_norm']:  # Qwen3: per head, over head_dim, before the rotation
            q = rms_norm(q, W[b + 'self_attn.q_norm.weight'], eps)
            k = rms_norm(k, W[b + 'self_attn.k_norm.weight'], eps)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if cache is not None:
            k, v = torch.cat([cache[l][0], k], 1), torch.cat([cache[l][1], v], 1)
        newcache.append((k, v))
        kr, vr = repeat_kv(k, H // KV), repeat_kv(v, H // KV)
        s = (q @ kr.transpose(1, 2)) * dh ** -0.5
        tk = kr.shape[1]
        if t > 1:
            s = s.masked_fill(torch.ones(t, tk, dtype=torch.bool).triu(tk - t + 1), float('-inf'))
        wts = torch.softmax(s, -1)
        kept.append(wts)  # output_attentions: every layer's attention kept
        ctx = (wts @ vr).transpose(0, 1).reshape(t, H * dh)
        x = x + F.linear(ctx, W[b + 'self_attn.o_proj.weight'])
        h = rms_norm(x, W[b + 'post_attention_layernorm.weight'], eps)
        x = x + F.linear(F.silu(F.linear(h, W[b + 'mlp.gate_proj.weight'])) * F.linear(h, W[b + 'mlp.up_proj.weight']),
                         W[b + 'mlp.down_proj.weight'])
    final = rms_norm(x, W['norm.weight'], eps)
    probs = torch.softmax(F.linear(final[-1:], W['embed_tokens.weight']), -1)[0]  # tied LM head, last position
    probs.topk(10)
    return kept, newcache, final, probs


def timed(f, repeat):
    """Median wall time of repeat calls, ms (torch_models.py uses it too)."""
    ms = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms)


def sgemm_gflops(threads, repeat=7):
    torch.set_num_threads(threads)
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    torch.mm(a, b)
    ms = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        torch.mm(a, b)
        ms.append(time.perf_counter() - t0)
    return 2 * 2048 ** 3 / statistics.median(ms) / 1e9


# ------------------------------------------------------------------------------ --check
def check_fixture(folder):
    """This forward in float32 against the float64 reference of a tiny Hugging Face folder
    (tests/fixtures/models/*/expected.json, make_families.py): every layer's attention, the final
    hidden states, the last position's top 10."""
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'models')
    sys.path.insert(0, fixtures)
    import make_families  # its safetensors reader; it sets float64 as the default dtype
    torch.set_default_dtype(torch.float32)
    cfg = json.load(open(os.path.join(fixtures, folder, 'config.json')))
    rs = cfg.get('rope_scaling') or cfg.get('rope_parameters') or {}
    S = dict(L=cfg['num_hidden_layers'], H=cfg['num_attention_heads'], KV=cfg['num_key_value_heads'],
             D=cfg['hidden_size'], dh=cfg['head_dim'], FF=cfg['intermediate_size'], V=cfg['vocab_size'],
             theta=float(cfg.get('rope_theta', rs.get('rope_theta', 10000.0))), eps=cfg['rms_norm_eps'],
             qk_norm=cfg['model_type'] == 'qwen3',
             llama3=dict(factor=rs['factor'], low=rs['low_freq_factor'], high=rs['high_freq_factor'],
                         original=rs['original_max_position_embeddings']) if rs.get('rope_type') == 'llama3' else None)
    W = {k[len('model.'):] if k.startswith('model.') else k: v.float()
         for k, v in make_families.load_safetensors(os.path.join(fixtures, folder, 'model.safetensors')).items()}
    exp = json.load(open(os.path.join(fixtures, folder, 'expected.json')))
    worst = 0.0
    for case in exp['cases']:
        kept, _, final, probs = forward(S, W, inv_freq(S), torch.tensor(case['ids']))
        for l, a in enumerate(kept):
            worst = max(worst, (a.double() - torch.tensor(case['attentions'][l])).abs().max().item())
        scale = torch.tensor(case['final']).abs().max().item()
        worst = max(worst, (final.double() - torch.tensor(case['final'])).abs().max().item() / scale)
        top = probs.topk(10)
        for (p, i), e in zip(zip(top.values.tolist(), top.indices.tolist()), case['next'][-1]):
            assert i == e['id'] or abs(p - e['p']) < 1e-6, (folder, i, e)
            worst = max(worst, abs(p - e['p']))
    print(f'{folder}: {len(exp["cases"])} texts, every attention weight, final hidden state (relative) and '
          f'top-10 probability within {worst:.1e} of the float64 reference')
    assert worst < 1e-5, folder


def check_shape(name, S):
    """Rows sum to 1, causal zeros, and one token appended through the cache equals the last row of a
    full forward of N + 1 tokens. Weights of sd 0.3 give peaked attention (at 0.02 the rows are nearly
    uniform, which would hide a wrong position or mask)."""
    W, inv = seeded_weights(S, 3, 0.3), inv_freq(S)
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(0, S['V'], (25,), generator=g)
    full, _, final, probs = forward(S, W, inv, ids)
    _, cache, _, _ = forward(S, W, inv, ids[:-1])
    step, _, final1, probs1 = forward(S, W, inv, ids[-1:], cache)
    worst = 0.0
    for a, b in zip(full, step):
        assert a.shape == (S['H'], 25, 25) and b.shape == (S['H'], 1, 25)
        assert (a.sum(-1) - 1).abs().max() < 1e-6 and a.triu(1).abs().max() == 0
        worst = max(worst, (a[:, -1] - b[:, 0]).abs().max().item())
    worst = max(worst, ((final[-1] - final1[0]).abs().max() / final.abs().max()).item(), (probs - probs1).abs().max().item())
    peak = max(a[:, -1].max().item() for a in full)
    print(f'{name}: attention rows sum to 1; appended token = last row of the full forward of 25 tokens '
          f'(every layer and head, final hidden state, probabilities) within {worst:.1e}; largest weight in '
          f'the last row {peak:.2f}')
    assert worst < 1e-5, name


def check():
    torch.set_num_threads(2)
    for folder in ('llama-tiny', 'qwen3-tiny'):
        check_fixture(folder)
    tiny = dict(L=3, D=64, FF=96, V=300)
    for name, S in SHAPES.items():  # each real shape's variant (GQA ratio, head_dim, q/k norm, rope) at a tiny size
        check_shape(name + ' (tiny: 3 layers, d 64, vocab 300)', dict(S, **tiny))
    known = {'smollm2-135m': 134515008, 'qwen3-0.6b': 596049920, 'llama3.2-1b': 1235814400}
    for name, S in SHAPES.items():
        assert params(S) == known[name], (name, params(S))
    print('parameter counts equal the Hub checkpoints\': ' + ', '.join(f'{k} {v:,}' for k, v in known.items()))
    print('full trace of 128 tokens: ' + ', '.join(f'{k} {full_trace_flops(S, 128) / 1e9:.1f} GFLOP' for k, S in SHAPES.items()))


def main():
    p = argparse.ArgumentParser()
    p.add_argument('shape', nargs='?', choices=list(SHAPES))
    p.add_argument('--tokens', default='128,1024')
    p.add_argument('--repeat', type=int, default=5)
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--sgemm', action='store_true')
    p.add_argument('--check', action='store_true')
    a = p.parse_args()
    if a.check:
        return check()
    if a.sgemm:
        print(json.dumps({'torch': torch.__version__, 'threads': a.threads, 'sgemm_gflops': sgemm_gflops(a.threads)}))
        return
    if a.shape is None:
        p.error('a shape, --sgemm or --check')
    torch.set_num_threads(a.threads)
    S = SHAPES[a.shape]
    W, inv = seeded_weights(S), inv_freq(S)

    rows = []
    g = torch.Generator().manual_seed(5)
    for n in [int(s) for s in a.tokens.split(',')]:
        ids = torch.randint(1000, S['V'] - 2, (n,), generator=g)
        rows.append({'what': 'full trace', 'tokens': n, 'ms': timed(lambda: forward(S, W, inv, ids), a.repeat),
                     'flops': full_trace_flops(S, n)})
        _, cache, _, _ = forward(S, W, inv, ids)
        nxt = torch.randint(1000, S['V'] - 2, (1,), generator=g)
        rows.append({'what': 'one token appended (incremental)', 'tokens': n + 1,
                     'ms': timed(lambda: forward(S, W, inv, nxt, cache), a.repeat)})
        cache = None  # freed before the next size
    print(json.dumps({'torch': torch.__version__, 'threads': a.threads, 'shape': a.shape, 'params': params(S),
                      'rows': rows, 'peak_rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == '__main__':
    main()
