#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
# Seeded GGUF files of a real checkpoint's shape for the GGUF speed and memory table (tests/bench/README.md):
# the Qwen3-0.6B shape (28 layers, 16 query / 8 key-value heads of 128, d 1024, MLP 3072, the full
# 151,936-row vocabulary with tied embeddings) as BF16 (the baseline), Q8_0, and llama.cpp's Q4_K_M
# mixture (llama-quant.cpp's choice per tensor: Q4_K, with Q6_K for the tied embedding and for attn_v
# and ffn_down in the layers its use_more_bits picks). The GGUF writer, the metadata and the
# quantizers are tests/fixtures/gguf/make_gguf.py's, imported; the vocabulary is the Qwen3 tokenizer
# fixture's, whole (llama.cpp checks that it matches the embedding's rows). The BF16 file's values are
# all distinct; a quantized file's layers repeat POOL distinct ones and its embedding EMBED_POOL
# distinct rows (encoded() says why).
#   /usr/bin/python3 tests/bench/make_bench_gguf.py [OUT_DIR (/tmp/attnviz-gguf-bench)] [bf16,q8_0,q4_k_m]
# About 1.2 GB (BF16), 0.64 GB (Q8_0) and 0.40 GB (Q4_K_M); several minutes of numpy for the
# quantized ones (Q4_K_M: 47 s on 2 loaded cores). The quantized files need numpy alone; BF16 rounds
# through torch (make_gguf.bf16_bits). Never committed. Deterministic: the same seed gives the same files.
import os
import sys
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, '..', 'fixtures', 'gguf')))


class _Absent:
    """Stands in for a module the fixture generators import at their top (torch, regex) but that the
    quantized files never call: numpy writes them. Naming its attributes is allowed (module-level
    tables name torch's dtypes); calling anything but set_default_dtype stops with one message."""
    def __init__(self, module, name=''):
        self._module, self._name = module, name

    def __getattr__(self, name):
        return _Absent(self._module, f'{self._name}.{name}' if self._name else name)

    def __call__(self, *args, **kwargs):
        if self._name == 'set_default_dtype':
            return None
        sys.exit(f'make_bench_gguf.py: {self._module}.{self._name} is needed here (python3-{self._module}); '
                 'the quantized files (q8_0, q4_k_m) need numpy alone')


for _module in ('torch', 'regex'):
    try:
        __import__(_module)
    except ImportError:
        sys.modules[_module] = _Absent(_module)
import make_gguf as mg  # noqa: E402

F32 = np.float32
CFG = {'model_type': 'qwen3', 'hidden_size': 1024, 'intermediate_size': 3072, 'num_hidden_layers': 28,
       'num_attention_heads': 16, 'num_key_value_heads': 8, 'head_dim': 128, 'rms_norm_eps': 1e-6,
       'rope_theta': 1000000.0, 'max_position_embeddings': 40960, 'tie_word_embeddings': True,
       'vocab_size': 151936, 'hidden_act': 'silu'}
POOL = int(os.environ.get('POOL', 2))           # distinct layers in a quantized file (0: all)
EMBED_POOL = int(os.environ.get('EMBED_POOL', 8192))   # distinct embedding rows in one
FILE_TYPE = {'bf16': 32, 'q8_0': 7, 'q4_k_m': 15}   # llama_ftype: MOSTLY_BF16, MOSTLY_Q8_0, MOSTLY_Q4_K_M


def use_more_bits(i, n):
    """llama-quant.cpp: the layers whose attn_v / ffn_down Q4_K_M keeps in Q6_K."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def matrix_type(kind, name, layer):
    if kind != 'q4_k_m':
        return kind.upper()
    if name == 'token_embd.weight':          # tied: quantized as the output matrix
        return 'Q6_K'
    if name.endswith(('attn_v.weight', 'ffn_down.weight')) and use_more_bits(layer, CFG['num_hidden_layers']):
        return 'Q6_K'
    return 'Q4_K'


def tokenizer():
    """The whole Qwen3 vocabulary: make_gguf's cut vocabulary with the cut at <|endoftext|> (151,643
    pieces + it), then the other added tokens, then [PADn] up to the embedding's rows, as
    convert_hf_to_gguf.py pads."""
    import json
    mg.N_VOCAB = 151644
    kv = mg.tokenizer_kv('qwen3')
    tok = json.load(open(os.path.join(mg.TOK, 'qwen3', 'tokenizer.json'), encoding='utf-8'))
    added = {a['id']: a['content'] for a in tok['added_tokens']}
    tokens, types = list(kv[2][2][1]), list(kv[3][2][1])
    for i in range(len(tokens), CFG['vocab_size']):
        tokens.append(added.get(i, f'[PAD{i}]'))
        types.append(3 if i in added else 5)
    kv[2] = ('tokenizer.ggml.tokens', mg.T_ARR, (mg.T_STR, tokens))
    kv[3] = ('tokenizer.ggml.token_type', mg.T_ARR, (mg.T_I32, types))
    return kv


def layout():
    """(name, shape in torch order, layer) in the order convert_hf_to_gguf.py writes them."""
    d, ff, L = CFG['hidden_size'], CFG['intermediate_size'], CFG['num_hidden_layers']
    dh, H, KV = CFG['head_dim'], CFG['num_attention_heads'], CFG['num_key_value_heads']
    yield 'token_embd.weight', (CFG['vocab_size'], d), -1
    for i in range(L):
        b = f'blk.{i}.'
        yield from ((b + n, shape, i) for n, shape in (
            ('attn_norm.weight', (d,)), ('attn_q.weight', (H * dh, d)), ('attn_k.weight', (KV * dh, d)),
            ('attn_v.weight', (KV * dh, d)), ('attn_output.weight', (d, H * dh)), ('attn_q_norm.weight', (dh,)),
            ('attn_k_norm.weight', (dh,)), ('ffn_norm.weight', (d,)), ('ffn_gate.weight', (ff, d)),
            ('ffn_up.weight', (ff, d)), ('ffn_down.weight', (d, ff))))
    yield 'output_norm.weight', (d,), -1


def values(name, shape):
    """The seeded float32 values of one tensor (its own generator: any subset, in any order)."""
    g = np.random.default_rng([20261126, zlib.crc32(name.encode())])
    if len(shape) == 1:
        return (1 + g.standard_normal(shape, dtype=F32) * F32(0.1)).astype(F32)
    return (g.standard_normal(shape, dtype=F32) * F32(0.05 if name == 'token_embd.weight' else 0.02)).astype(F32)


def encoded(kind, name, shape, layer, pool, cache):
    """One tensor's bytes. With a pool, layer i holds layer i % pool's values and the embedding repeats
    its first EMBED_POOL rows: numpy's block-by-block quantizers would take the better part of an hour
    on two cores for every distinct block, and repeated bytes change neither program's work (every
    block is still read and multiplied) nor the memory (distinct file pages)."""
    typ = 'F32' if len(shape) == 1 else matrix_type(kind, name, layer)
    if not pool:
        return typ, mg.encode(values(name, shape), typ)
    if name == 'token_embd.weight':
        rows = min(EMBED_POOL, shape[0])
        raw = mg.encode(values(name, (rows,) + shape[1:]), typ)
        per_row = len(raw) // rows
        reps, rest = divmod(shape[0], rows)
        return typ, raw * reps + raw[:rest * per_row]
    src = name if layer < 0 else name.replace(f'blk.{layer}.', f'blk.{layer % pool}.', 1)
    if (src, typ) not in cache:
        cache[(src, typ)] = mg.encode(values(src, shape), typ)
    return typ, cache[(src, typ)]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else '/tmp/attnviz-gguf-bench'
    kinds = (sys.argv[2] if len(sys.argv) > 2 else 'bf16,q8_0,q4_k_m').split(',')
    os.makedirs(out, exist_ok=True)
    tok = tokenizer()
    for kind in kinds:
        t0 = time.time()
        raw, cache = [], {}
        pool = 0 if kind == 'bf16' else POOL
        for name, shape, layer in layout():
            typ, b = encoded(kind, name, shape, layer, pool, cache)
            raw.append((name, list(reversed(shape)), typ, b))
        del cache
        kv = mg.metadata('qwen3', CFG, f'qwen3-0.6b-seeded-{kind}', FILE_TYPE[kind], tok)
        path = os.path.join(out, f'qwen3-0.6b-{kind}.gguf')
        mg.write_gguf(path, kv, raw)
        del raw
        print(f'{path} {os.path.getsize(path)} bytes, {time.time() - t0:.0f} s', flush=True)


if __name__ == '__main__':
    main()
