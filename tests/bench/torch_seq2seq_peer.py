#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
# PyTorch peer of model_bench's encoder-decoder shapes (t5-small, opus-mt-en-de with seeded random
# weights): the arithmetic of Hugging Face's modeling_t5.py (T5LayerNorm, T5Attention with its
# relative position bias from block 0, no 1/sqrt(d) on q.k, T5DenseActDense with ReLU, the tied head
# scaled by d_model^-0.5) and modeling_marian.py (post-LN blocks, embeddings times sqrt(d_model),
# sinusoidal positions, q scaled by head_dim^-0.5, SiLU, final_logits_bias) written out here (no
# transformers package), float32 under torch.inference_mode, 2 threads. Times the same two things
# as runSeq2SeqBench: a full trace (encoder over the source, decoder over the start token and the
# target, every attention kept as output_attentions=True keeps them, the logits of every decoder
# position) and one generated step as generate() runs it (past_key_values: the decoder's self-
# attention keys and values appended, the cross-attention keys and values computed once per source;
# the logits of the new position and their log-softmax). Prints one JSON object.
#   /usr/bin/python3 tests/bench/torch_seq2seq_peer.py t5-small|opus-mt-en-de [--tokens 64] [--repeat 5]
import argparse, json, math
import torch
import torch.nn.functional as F
from torch_llama import timed  # the same timing loop as the other peers

p = argparse.ArgumentParser()
p.add_argument('shape', choices=['t5-small', 'opus-mt-en-de'])
p.add_argument('--tokens', default='64')
p.add_argument('--repeat', type=int, default=5)
p.add_argument('--threads', type=int, default=2)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(1)
t5 = a.shape == 't5-small'
L, H, D, DH, FF = 6, 8, 512, 64, 2048
V = 32128 if t5 else 58101
BUCKETS, MAXDIST = 32, 128


def w(*s):
    return torch.randn(*s) * 0.02


def attn_weights():
    return dict(q=w(H * DH, D), k=w(H * DH, D), v=w(H * DH, D), o=w(D, H * DH),
                bq=torch.zeros(H * DH), bk=torch.zeros(H * DH), bv=torch.zeros(H * DH), bo=torch.zeros(D))


def block(decoder):
    b = dict(self=attn_weights(), n1=torch.ones(D), nb1=torch.zeros(D), f1=w(FF, D), f2=w(D, FF),
             bf1=torch.zeros(FF), bf2=torch.zeros(D), n3=torch.ones(D), nb3=torch.zeros(D))
    if decoder:
        b.update(cross=attn_weights(), n2=torch.ones(D), nb2=torch.zeros(D))
    return b


shared = w(V, D)
enc = [block(False) for _ in range(L)]
dec = [block(True) for _ in range(L)]
enc_bias, dec_bias = w(BUCKETS, H), w(BUCKETS, H)
enc_final, dec_final = torch.ones(D), torch.ones(D)
logits_bias = torch.zeros(V)


def marian_positions(n):  # MarianSinusoidalPositionalEmbedding: sines in the first half, cosines in the second
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    j = torch.arange(D // 2, dtype=torch.float64)[None, :]
    ang = pos / torch.pow(10000.0, 2 * j / D)
    return torch.cat([torch.sin(ang), torch.cos(ang)], 1).float()


POS = None if t5 else marian_positions(512)


def t5_norm(x, g):
    return g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


def norm(x, g, b):
    return t5_norm(x, g) if t5 else F.layer_norm(x, (D,), g, b, 1e-5)


def bucket(rel, bidirectional):  # T5Attention._relative_position_bucket
    n, ret = BUCKETS, 0
    if bidirectional:
        n //= 2
        ret = (rel > 0).long() * n
        rel = rel.abs()
    else:
        rel = -torch.min(rel, torch.zeros_like(rel))
    exact = n // 2
    small = rel < exact
    large = exact + (torch.log(rel.float() / exact) / math.log(MAXDIST / exact) * (n - exact)).long()
    large = torch.min(large, torch.full_like(large, n - 1))
    return ret + torch.where(small, rel, large)


def position_bias(table, qlen, klen, bidirectional, first=0):
    ctx = torch.arange(first, first + qlen)[:, None]
    mem = torch.arange(klen)[None, :]
    return table[bucket(mem - ctx, bidirectional)].permute(2, 0, 1)  # (H, q, k)


def heads(x):
    return x.view(x.shape[0], H, DH).transpose(0, 1)


def attend(W, xq, k, v, bias=None, causal=False):
    q = heads(F.linear(xq, W['q'], None if t5 else W['bq']))
    if not t5:
        q = q * DH ** -0.5
    s = q @ k.transpose(1, 2)
    if bias is not None:
        s = s + bias
    if causal and q.shape[1] > 1:
        s = s.masked_fill(torch.ones(q.shape[1], k.shape[1], dtype=torch.bool).triu(k.shape[1] - q.shape[1] + 1), float('-inf'))
    wts = torch.softmax(s.float(), -1)
    ctx = (wts @ v).transpose(0, 1).reshape(xq.shape[0], H * DH)
    return wts, F.linear(ctx, W['o'], None if t5 else W['bo'])


def kv(W, x):
    return (heads(F.linear(x, W['k'], None if t5 else W['bk'])), heads(F.linear(x, W['v'], None if t5 else W['bv'])))


def ffn(b, x):
    h = F.linear(x, b['f1'], None if t5 else b['bf1'])
    h = F.relu(h) if t5 else F.silu(h)
    return F.linear(h, b['f2'], None if t5 else b['bf2'])


def sub(b, x, n, f):  # pre-norm x + f(N(x)) (T5) or post-norm N(x + f(x)) (Marian)
    if t5:
        return x + f(norm(x, b['n' + n], None))
    return norm(x + f(x), b['n' + n], b['nb' + n])


def embed(ids, first):
    x = shared[ids]
    if not t5:
        x = x * math.sqrt(D) + POS[first:first + len(ids)]
    return x


def encode(src, kept):
    x = embed(src, 0)
    bias = position_bias(enc_bias, len(src), len(src), True) if t5 else None
    for b in enc:
        def sa(h):
            k, v = kv(b['self'], h)
            wts, out = attend(b['self'], h, k, v, bias)
            kept.append(wts)
            return out
        x = sub(b, x, '1', sa)
        x = sub(b, x, '3', lambda h: ffn(b, h))
    return t5_norm(x, enc_final) if t5 else x


def decode(ids, memory, cache, kept):
    """The decoder over `ids` after the cache's positions; the cache (per layer: self k, v; cross k, v) grows."""
    first = cache[0][0].shape[1] if cache[0] is not None else 0
    t = first + len(ids)
    x = embed(ids, first)
    bias = None
    if t5:
        bias = position_bias(dec_bias, len(ids), t, False, first)
    for i, b in enumerate(dec):
        def sa(h):
            k, v = kv(b['self'], h)
            if cache[i] is not None:
                k, v = torch.cat([cache[i][0], k], 1), torch.cat([cache[i][1], v], 1)
                ck, cv = cache[i][2], cache[i][3]
            else:
                ck, cv = kv(b['cross'], memory)
            cache[i] = (k, v, ck, cv)
            wts, out = attend(b['self'], h, k, v, bias, causal=True)
            kept.append(wts)
            return out

        def ca(h):
            wts, out = attend(b['cross'], h, cache[i][2], cache[i][3])
            kept.append(wts)
            return out
        x = sub(b, x, '1', sa)
        x = sub(b, x, '2', ca)
        x = sub(b, x, '3', lambda h: ffn(b, h))
    if t5:
        x = t5_norm(x, dec_final) * D ** -0.5
    return F.linear(x, shared) + (0 if t5 else logits_bias)


def full_trace(src, tgt):
    kept = []
    memory = encode(src, kept)
    logits = decode(tgt, memory, [None] * L, kept)
    return logits, kept


rows = []
g = torch.Generator().manual_seed(5)
start = 0 if t5 else 58100
with torch.inference_mode():
    for n in [int(s) for s in a.tokens.split(',')]:
        src = torch.randint(1000, V - 2, (n,), generator=g)
        tgt = torch.cat([torch.tensor([start]), torch.randint(1000, V - 2, (n,), generator=g)])
        rows.append({'what': 'full trace (%d source, %d target)' % (n, n), 'tokens': 2 * n,
                     'ms': timed(lambda: full_trace(src, tgt), a.repeat)})
        memory = encode(src, [])
        primed = [None] * L
        decode(tgt[:-1], memory, primed, [])

        def step():
            cache = list(primed)
            logits = decode(tgt[-1:], memory, cache, [])
            return torch.log_softmax(logits[-1], -1)
        rows.append({'what': 'one generated step (cached keys and values)', 'tokens': n + 1, 'ms': timed(step, a.repeat)})
import resource
print(json.dumps({'torch': torch.__version__, 'threads': a.threads, 'shape': a.shape, 'rows': rows,
                  'peak_rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
