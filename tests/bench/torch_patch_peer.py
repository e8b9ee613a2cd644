#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
# PyTorch peer of tests/bench/patch_bench: activation patching sweeps done as TransformerLens does
# them (patching.py, get_act_patch_attn_head_out_all_pos, get_act_patch_resid_pre and
# get_act_patch_mlp_out): the clean run
# cached, then one full forward of the corrupted prompt per cell with a hook that writes the clean
# value in, scored by the normalised logit difference of two answer tokens after the last position.
# GPT-2 small's shape, random weights, float32, 2 threads, torch.inference_mode, denormals flushed,
# one warm-up forward; the logits of the last position only (a stronger peer than TransformerLens,
# which computes every position's). Prints one JSON object: per sweep the seconds (the two unpatched
# runs plus every cell), the CPU seconds of every thread, the milliseconds of one patched forward, and
# the BLAS library torch's products ran on.
# --cells N times the first N cells of each sweep only and extrapolates to the whole grid (the JSON
# says so: "timed_cells", "extrapolated").
# torch's float32 products go to the BLAS behind libblas.so.3. Debian's python3-torch is built against
# that generic interface, and where the alternative is netlib's reference BLAS (no blocking, no SIMD
# kernels, one thread) a forward is an order of magnitude slower than torch with its usual MKL or
# OpenBLAS: not a fair peer. --blas LIB (or ATTNVIZ_PEER_BLAS) runs the script again with LIB preloaded (say
# OpenBLAS' libopenblas.so.0, which exports the same sgemm_); the script refuses the reference BLAS
# unless --allow-reference-blas. OpenMP's threads wait passively (OMP_WAIT_POLICY, see below).
#   /usr/bin/python3 tests/bench/torch_patch_peer.py [--tokens 64] [--sweep heads|resid|mlp|both|all] [--cells N]
#       [--blas /path/to/libopenblas.so.0]
import argparse, json, math, os, sys, time

p = argparse.ArgumentParser()
p.add_argument('--tokens', type=int, default=64)
p.add_argument('--sweep', choices=['heads', 'resid', 'mlp', 'both', 'all'], default='both')
p.add_argument('--cells', type=int, default=0)
p.add_argument('--threads', type=int, default=2)
p.add_argument('--blas', default=os.environ.get('ATTNVIZ_PEER_BLAS', ''))
p.add_argument('--allow-reference-blas', action='store_true')
a = p.parse_args()
if a.blas and os.environ.get('LD_PRELOAD', '') != a.blas:
    os.environ['LD_PRELOAD'] = a.blas
    os.execv(sys.executable, [sys.executable] + sys.argv)
# libgomp's threads spin while they wait for work (OMP_WAIT_POLICY active): on two cores shared with
# anything else a spinning thread holds the core the other one needs, and every operator's barrier
# waits a scheduler slice: a forward many times slower than with passive threads. Passive unless the
# caller chose; read when torch loads libgomp, below.
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')

import torch
import torch.nn.functional as F


def blas_library():
    """The BLAS library mapped into this process that exports sgemm_ for torch: a preloaded one wins."""
    maps = open('/proc/self/maps').read()
    if a.blas and a.blas in maps:
        return a.blas
    libs = sorted({l.split()[-1] for l in maps.splitlines() if 'blas' in l.split()[-1]})
    return libs[0] if libs else 'unknown'


torch.zeros(2, 2) @ torch.zeros(2, 2)  # loads the BLAS
blas = os.path.realpath(blas_library())
if '/blas/libblas.so' in blas and not a.allow_reference_blas:
    sys.exit('torch_patch_peer: torch runs on the reference BLAS (%s): not a fair peer; --blas LIB preloads an '
             'optimised one (OpenBLAS: libopenblas.so.0), --allow-reference-blas times it anyway' % blas)

torch.set_num_threads(a.threads)
torch.set_flush_denormal(True)
torch.manual_seed(1)
L, H, D, FF, V, P = 12, 12, 768, 3072, 50257, 1024
DH = D // H


def w(*s):
    return torch.randn(*s) * 0.02


wte, wpe = w(V, D), w(P, D)
blocks = [dict(qkv=w(3 * D, D), bqkv=torch.zeros(3 * D), o=w(D, D), bo=torch.zeros(D), f1=w(FF, D), b1=torch.zeros(FF),
               f2=w(D, FF), b2=torch.zeros(D), g1=torch.ones(D), n1=torch.zeros(D), g2=torch.ones(D), n2=torch.zeros(D))
          for _ in range(L)]


@torch.inference_mode()
def forward(ids, hook=None, cache=None):
    """Last position's logits; hook(name, layer, value) may return a replacement (TransformerLens'
    hook points resid_pre and attn.hook_z); cache, a dict, keeps every hook's value."""
    def at(name, layer, value):
        if cache is not None:
            cache[(name, layer)] = value.clone()
        if hook is not None:
            r = hook(name, layer, value)
            if r is not None:
                return r
        return value

    t = len(ids)
    x = wte[ids] + wpe[:t]
    mask = torch.ones(t, t, dtype=torch.bool).triu(1)
    for i, b in enumerate(blocks):
        x = at('resid_pre', i, x)
        q, k, v = F.linear(F.layer_norm(x, (D,), b['g1'], b['n1'], 1e-5), b['qkv'], b['bqkv']).split(D, -1)
        q, k, v = (m.view(t, H, DH).transpose(0, 1) for m in (q, k, v))
        s = (q @ k.transpose(1, 2) / math.sqrt(DH)).masked_fill(mask, float('-inf'))
        z = (torch.softmax(s, -1) @ v).transpose(0, 1)  # t x H x DH: attn.hook_z
        z = at('z', i, z)
        x = x + F.linear(z.reshape(t, D), b['o'], b['bo'])
        m = F.layer_norm(x, (D,), b['g2'], b['n2'], 1e-5)
        x = x + at('mlp_out', i, F.linear(F.gelu(F.linear(m, b['f1'], b['b1']), approximate='tanh'), b['f2'], b['b2']))
    return F.layer_norm(x[-1], (D,), eps=1e-5) @ wte.T


# The prompts of patch_bench: seeded ids, the corrupted one differing in the middle.
clean = torch.tensor([(i * 7919 + 13) % V for i in range(a.tokens)])
corrupted = clean.clone()
corrupted[a.tokens // 2] = (clean[a.tokens // 2] + 1) % V
answer, wrong = 11, 12


def diff(logits):
    return float(logits[answer] - logits[wrong])


forward(corrupted)  # warm-up: first-call allocations and the BLAS's threads
rows = {}
sweeps = {'both': ['heads', 'resid'], 'all': ['heads', 'resid', 'mlp']}.get(a.sweep, [a.sweep])
for sweep in sweeps:
    t0, p0 = time.perf_counter(), time.process_time()
    cache = {}
    c, k = diff(forward(clean, cache=cache)), diff(forward(corrupted))
    t1, p1 = time.perf_counter(), time.process_time()
    grid = []
    total = L * (H if sweep == 'heads' else a.tokens)
    for layer in range(L):
        for cell in range(H if sweep == 'heads' else a.tokens):
            if a.cells and len(grid) >= a.cells:
                break
            if sweep == 'heads':
                def hook(name, l, value, layer=layer, head=cell):
                    if name == 'z' and l == layer:
                        value = value.clone()
                        value[:, head] = cache[('z', l)][:, head]
                        return value
            else:
                def hook(name, l, value, layer=layer, pos=cell, hook_name='resid_pre' if sweep == 'resid' else 'mlp_out'):
                    if name == hook_name and l == layer:
                        value = value.clone()
                        value[pos] = cache[(hook_name, l)][pos]
                        return value
            grid.append((diff(forward(corrupted, hook)) - k) / (c - k))
    t2, p2 = time.perf_counter(), time.process_time()
    cell = (t2 - t1) / len(grid)
    rows[sweep] = {'cells': total, 'timed_cells': len(grid), 'extrapolated': len(grid) < total,
                   'seconds': (t1 - t0) + cell * total, 'cpu_seconds': (p1 - p0) + (p2 - p1) / len(grid) * total,
                   'ms_per_forward': cell * 1e3, 'cells_per_second': 1 / cell,
                   'unpatched_runs_seconds': t1 - t0}
print(json.dumps({'torch': torch.__version__, 'threads': torch.get_num_threads(), 'blas': blas,
                  'omp_wait_policy': os.environ['OMP_WAIT_POLICY'], 'tokens': a.tokens,
                  'shape': 'gpt2-small', **rows}))
