#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
# The GGUF speed and memory table (tests/bench/README.md): for each file of make_bench_gguf.py,
# attnviz's full trace of 128 tokens and one token appended to it (`attnviz bench --model FILE`,
# every layer's attention kept, median of --repeat runs per process), llama.cpp's prompt processing of
# 128 tokens on the same file and threads (llamacpp_pp.mjs, after a warm-up), interleaved attnviz /
# llama.cpp / attnviz / ... file after file, ROUNDS rounds, because the machine may be shared; then
# each file's peak RSS at 1,024 tokens (/usr/bin/time -v). The first file is the baseline the others
# are compared with (BF16). Prints the machine, the load before and after, and a markdown table.
#   /usr/bin/python3 tests/bench/gguf_table.py --attnviz build/app/attnviz --rounds 3 \
#       /tmp/attnviz-gguf-bench/qwen3-0.6b-{bf16,q8_0,q4_k_m}.gguf
# env NLC_DIR: the folder whose node_modules holds node-llama-cpp 3.22.1 (default /tmp/gguf-npm).
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def machine():
    model = next((l.split(':', 1)[1].strip() for l in subprocess.run(['lscpu'], capture_output=True, text=True).stdout.splitlines()
                  if l.startswith('Model name')), '?')
    return f'{model}, {os.cpu_count()} CPUs'


def load():
    return open('/proc/loadavg').read().split()[0]


def attnviz_run(exe, path, tokens, repeat, threads):
    env = dict(os.environ, ATTNVIZ_THREADS=str(threads))
    r = subprocess.run([exe, 'bench', '--model', path, '--tokens', str(tokens), '--repeat', str(repeat), '--json'],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f'attnviz bench {path}: exit {r.returncode}: {r.stderr.strip()[-2000:]}')
    o = json.loads(r.stdout[r.stdout.index('{'):])
    rows = {row['what']: row['ms'] for row in o['rows']}
    return rows['full trace'], rows.get('one token appended (incremental)'), o['load_ms']


def llama_run(path, tokens, repeat, threads):
    env = dict(os.environ, NLC_DIR=os.environ.get('NLC_DIR', '/tmp/gguf-npm'))
    r = subprocess.run(['node', os.path.join(HERE, 'llamacpp_pp.mjs'), path, str(tokens), str(repeat), str(threads)],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f'llama.cpp {path}: exit {r.returncode}: {r.stderr.strip()[-2000:]}')
    return json.loads(r.stdout.strip().splitlines()[-1])


def peak_rss(exe, path, tokens, threads):
    env = dict(os.environ, ATTNVIZ_THREADS=str(threads))
    r = subprocess.run(['/usr/bin/time', '-v', exe, 'bench', '--model', path, '--tokens', str(tokens), '--repeat', '1'],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f'attnviz bench {path} at {tokens}: exit {r.returncode}: {r.stderr.strip()[-2000:]}')
    kb = int(re.search(r'Maximum resident set size \(kbytes\): (\d+)', r.stderr).group(1))
    return kb / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--attnviz', default='build/app/attnviz')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--tokens', type=int, default=128)
    ap.add_argument('--rss-tokens', type=int, default=1024)
    ap.add_argument('--no-rss', action='store_true')
    ap.add_argument('files', nargs='+')
    a = ap.parse_args()
    print(f'machine: {machine()}; load before {load()}', flush=True)
    full = {f: [] for f in a.files}
    app = {f: [] for f in a.files}
    pp = {f: [] for f in a.files}
    release = None
    for rnd in range(a.rounds):
        for f in a.files:
            ms_full, ms_app, load_ms = attnviz_run(a.attnviz, f, a.tokens, a.repeat, a.threads)
            full[f].append(ms_full)
            app[f].append(ms_app)
            lr = llama_run(f, a.tokens, a.repeat, a.threads)
            pp[f] += lr['ms']
            release = lr['llama_cpp']
            print(f'round {rnd + 1} {os.path.basename(f)}: attnviz full {ms_full:.1f} ms, append {ms_app:.1f} ms '
                  f'(load {load_ms:.0f} ms); llama.cpp pp {", ".join(f"{x:.1f}" for x in lr["ms"])} ms '
                  f'(load {lr["load_ms"]:.0f} ms); load avg {load()}', flush=True)
    rss = {}
    if not a.no_rss:
        for f in a.files:
            rss[f] = peak_rss(a.attnviz, f, a.rss_tokens, a.threads)
            print(f'{os.path.basename(f)}: peak RSS at {a.rss_tokens} tokens {rss[f]:.0f} MB', flush=True)
    print(f'load after {load()}; llama.cpp {release}')

    def mm(v):
        return f'{min(v):,.1f} / {statistics.median(v):,.1f}'
    base = a.files[0]
    print('\n| file | size MB | attnviz full 128 ms (min / med) | vs baseline | append ms (min / med) | vs baseline '
          '| llama.cpp pp 128 ms (min / med) | attnviz / llama.cpp (med) | peak RSS 1,024 MB | size + 1 GB |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for f in a.files:
        size = os.path.getsize(f) / 2**20
        rs = f'{rss[f]:,.0f}' if f in rss else '-'
        print(f'| {os.path.basename(f)} | {size:,.0f} | {mm(full[f])} | '
              f'{statistics.median(full[f]) / statistics.median(full[base]):.2f}× | {mm(app[f])} | '
              f'{statistics.median(app[f]) / statistics.median(app[base]):.2f}× | {mm(pp[f])} | '
              f'{statistics.median(full[f]) / statistics.median(pp[f]):.2f}× | {rs} | {size + 1024:,.0f} |')


if __name__ == '__main__':
    sys.exit(main())
