#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
# PyTorch peer of `attnviz bench --seeded gpt2-small|bert-base`: the same shapes and the same work
# (every layer's attention weights kept, GPT-2's LM head at the last position with its top 10 as
# attnviz's trace computes it, --lm-head all for every position; one token appended through a
# key/value cache), float32, 2 threads. Prints one JSON object. For a strong peer run it with
# GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (models_peer.py does).
#   /usr/bin/python3 tests/bench/torch_models.py gpt2-small|bert-base [--tokens 128,1024] [--repeat 5]
import argparse, json, math
import torch
import torch.nn.functional as F
from torch_llama import timed  # the same timing loop as the rotary peer

p = argparse.ArgumentParser()
p.add_argument('shape', choices=['gpt2-small', 'bert-base'])
p.add_argument('--tokens', default='128,1024')
p.add_argument('--repeat', type=int, default=5)
p.add_argument('--threads', type=int, default=2)
p.add_argument('--lm-head', choices=['last', 'all'], default='last')
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(1)
L, H, D, FF = 12, 12, 768, 3072
gpt = a.shape == 'gpt2-small'
V, P = (50257, 1024) if gpt else (30522, 512)


def w(*s):
    return torch.randn(*s) * 0.02


wte, wpe = w(V, D), w(P, D)
blocks = [dict(qkv=w(3 * D, D), bqkv=torch.zeros(3 * D), o=w(D, D), bo=torch.zeros(D), f1=w(FF, D), b1=torch.zeros(FF),
               f2=w(D, FF), b2=torch.zeros(D), g1=torch.ones(D), n1=torch.zeros(D), g2=torch.ones(D), n2=torch.zeros(D))
          for _ in range(L)]
act = (lambda x: F.gelu(x, approximate='tanh')) if gpt else F.gelu
eps = 1e-5 if gpt else 1e-12


def attend(q, k, v, causal):
    t, tk = q.shape[0], k.shape[0]
    q, k, v = (m.view(m.shape[0], H, D // H).transpose(0, 1) for m in (q, k, v))
    s = q @ k.transpose(1, 2) / math.sqrt(D // H)
    if causal:
        s = s.masked_fill(torch.ones(t, tk, dtype=torch.bool).triu(tk - t + 1), float('-inf'))
    wts = torch.softmax(s, -1)
    return wts, (wts @ v).transpose(0, 1).reshape(t, D)


@torch.no_grad()
def forward(ids, cache=None):
    start = 0 if cache is None else cache[0][0].shape[0]
    x = wte[ids] + wpe[start:start + len(ids)]
    if not gpt:
        x = F.layer_norm(x, (D,), eps=eps)
    kept, newcache = [], []
    for i, b in enumerate(blocks):
        a_in = F.layer_norm(x, (D,), b['g1'], b['n1'], eps) if gpt else x
        q, k, v = F.linear(a_in, b['qkv'], b['bqkv']).split(D, -1)
        if cache is not None:
            k, v = torch.cat([cache[i][0], k]), torch.cat([cache[i][1], v])
        newcache.append((k, v))
        wts, ctx = attend(q, k, v, gpt)
        kept.append(wts)  # need_weights: every layer's attention kept
        h = x + F.linear(ctx, b['o'], b['bo'])
        if not gpt:
            h = F.layer_norm(h, (D,), b['g1'], b['n1'], eps)
        m = F.layer_norm(h, (D,), b['g2'], b['n2'], eps) if gpt else h
        x = h + F.linear(act(F.linear(m, b['f1'], b['b1'])), b['f2'], b['b2'])
        if not gpt:
            x = F.layer_norm(x, (D,), b['g2'], b['n2'], eps)
    if gpt:
        last = x if a.lm_head == 'all' else x[-1:]
        logits = F.layer_norm(last, (D,), eps=eps) @ wte.T
        probs = torch.softmax(logits, -1)
        probs.topk(10, -1)
    return kept, newcache


rows = []
g = torch.Generator().manual_seed(5)
for n in [int(s) for s in a.tokens.split(',')]:
    ids = torch.randint(1000, V - 2, (n,), generator=g)
    rows.append({'what': 'full trace', 'tokens': n, 'ms': timed(lambda: forward(ids), a.repeat)})
    if gpt and n < P:
        _, cache = forward(ids)
        nxt = torch.randint(1000, V - 2, (1,), generator=g)
        rows.append({'what': 'one token appended (incremental)', 'tokens': n + 1, 'ms': timed(lambda: forward(nxt, cache), a.repeat)})
import resource
print(json.dumps({'torch': torch.__version__, 'threads': a.threads, 'lm_head': a.lm_head, 'rows': rows,
                  'peak_rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
