#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
# Issue 44's goals table (long texts, the CPU rows of its "## Goals") from one run of `attnviz bench`:
# each row's command, what it measured, the goal and whether it is met. tests/bench/long_table.sh runs
# it; tests/bench/README.md ("Long texts: the goals table") says what each row means.
#   /usr/bin/python3 tests/bench/long_table.py --attnviz build/app/attnviz [--base OLD/app/attnviz]
#       [--quick] [--rounds 3] [--repeat 5] [--threads 2] [--gguf FILE]
# Memory is bench's peak resident set (getrusage) less the weights' own bytes (bench's weight_bytes),
# except the GGUF row, whose goal is on the whole peak (file + 1 GB). GB = 10^9 bytes, MiB = 2^20.
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GB = 1e9
MIB = 2.0**20
SHAPES = ['gpt2-small', 'bert-base', 'smollm2-135m', 'qwen3-0.6b', 'llama3.2-1b']  # bench --seeded's
APPEND_GOAL_MS = {'smollm2-135m': 35.0, 'qwen3-0.6b': 120.0}  # the window-append goals
NOISE = 1.05  # "no slower": the median within 5 % of the base build's, interleaved on the same machine


def load():
    return open('/proc/loadavg').read().split()[0]


def machine():
    model = next((l.split(':', 1)[1].strip() for l in subprocess.run(['lscpu'], capture_output=True, text=True).stdout.splitlines()
                  if l.startswith('Model name')), '?')
    return f'{model}, {os.cpu_count()} CPUs'


def bench(exe, args, threads):
    """attnviz bench ARGS --json: the parsed object (rows by their `what`)."""
    env = dict(os.environ, ATTNVIZ_THREADS=str(threads))
    cmd = [exe, 'bench'] + args + ['--json']
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f'{" ".join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-1500:]}')
    o = json.loads(r.stdout[r.stdout.index('{'):])
    o['by'] = {row['what']: row['ms'] for row in o['rows']}
    return o


def above_weights_mib(o):
    return o['peak_rss_mb'] - o['model']['weight_bytes'] / MIB


def row_ms(o, prefix):
    return next((ms for what, ms in o['by'].items() if what.startswith(prefix)), None)


class Table:
    def __init__(self):
        self.rows = []

    def add(self, work, command, measured, goal, met):
        self.rows.append((work, command, measured, goal, 'yes' if met is True else 'no' if met is False else met))
        print(f'  {work}: {measured} (goal {goal}: {self.rows[-1][4]}); load {load()}', flush=True)

    def print(self):
        print('\n| work | measured | goal | met | command (`attnviz bench ...`) |')
        print('|---|---|---|---|---|')
        for work, command, measured, goal, met in self.rows:
            print(f'| {work} | {measured} | {goal} | {met} | `{command}` |')


def memory_row(t, exe, threads, work, args, goal_gb, map_goal_ms=None, zoom_goal_ms=None):
    """A long text's trace (q, k, v in 16 bits and the log-sum-exp; no t x t weights) and, with --map,
    a pooled 512 x 512 map of one head and a zoom to 256 x 256 cells."""
    try:
        o = bench(exe, args, threads)
    except RuntimeError as e:
        t.add(work, ' '.join(args), f'failed: {e}', f'≤ {goal_gb} GB', 'no')
        return
    mib = above_weights_mib(o)
    t.add(work + ': peak RSS above the weights', ' '.join(args),
          f'{mib:,.0f} MiB ({mib * MIB / GB:.2f} GB; weights {o["model"]["weight_bytes"] / MIB:,.0f} MiB)',
          f'≤ {goal_gb} GB ({goal_gb * GB / MIB:,.0f} MiB)', mib * MIB <= goal_gb * GB)
    if map_goal_ms is not None:
        ms = row_ms(o, 'pooled map')
        t.add(work + ': pooled 512 × 512 map of one head', ' '.join(args), f'{ms:,.1f} ms', f'≤ {map_goal_ms:,.0f} ms',
              ms is not None and ms <= map_goal_ms)
    if zoom_goal_ms is not None:
        ms = row_ms(o, 'zoom to 256')
        t.add(work + ': zoomed to 256 × 256 cells', ' '.join(args), f'{ms:,.1f} ms', f'≤ {zoom_goal_ms:,.0f} ms',
              ms is not None and ms <= zoom_goal_ms)


def gguf_row(t, exe, threads, path):
    work = 'GGUF Qwen3-0.6B Q4_K_M, 1,024 tokens: peak RSS'
    if not path or not os.path.exists(path):
        t.add(work, '--model FILE --tokens 1024 --observe tiles-attention-16 --repeat 1 --full-only',
              f'not run: no file {path}' if path else 'not run: no file (make_bench_gguf.py, or --gguf FILE)',
              'file + 1 GB', '—')
        return
    args = ['--model', path, '--tokens', '1024', '--observe', 'tiles-attention-16', '--repeat', '1', '--full-only']
    size = os.path.getsize(path)
    try:
        o = bench(exe, args, threads)
    except RuntimeError as e:
        t.add(work, ' '.join(args), f'failed: {e}', 'file + 1 GB', 'no')
        return
    peak = o['peak_rss_mb'] * MIB
    t.add(work, ' '.join(args).replace(path, os.path.basename(path)),
          f'{peak / MIB:,.0f} MiB (file {size / MIB:,.0f} MiB)', f'≤ file + 1 GB ({(size + GB) / MIB:,.0f} MiB)',
          peak <= size + GB)


def short_rows(t, exe, base, threads, rounds, repeat):
    """128 tokens, every stage kept (bench's default): the full trace and one token appended, this
    build and the base build interleaved round by round (A B A B), medians over the rounds."""
    args = lambda s: ['--seeded', s, '--tokens', '128', '--repeat', str(repeat)]
    runs = {(s, who): [] for s in SHAPES for who in ('new', 'base')}
    for rnd in range(rounds):
        for s in SHAPES:
            for who, e in (('new', exe), ('base', base)):
                if not e:
                    continue
                o = bench(e, args(s), threads)
                runs[(s, who)].append((o['by'].get('full trace'), o['by'].get('one token appended (incremental)')))
                print(f'round {rnd + 1} {s} {who}: full {runs[(s, who)][-1][0]:.1f} ms, append '
                      f'{runs[(s, who)][-1][1] or float("nan"):.1f} ms; load {load()}', flush=True)
    for s in SHAPES:
        for k, what in ((0, 'full trace'), (1, 'one token appended')):
            new = [r[k] for r in runs[(s, 'new')] if r[k] is not None]
            if not new:
                continue  # an encoder has no appended token
            med = statistics.median(new)
            measured = f'{med:,.1f} ms (min {min(new):,.1f}, {len(new)} rounds)'
            goals, met = [], True
            old = [r[k] for r in runs[(s, 'base')] if r[k] is not None]
            if old:
                bmed = statistics.median(old)
                measured += f'; base {bmed:,.1f} ms ({med / bmed:.2f}×)'
                goals.append('no slower than the base (≤ 1.05×)')
                met = met and med <= bmed * NOISE
            else:
                goals.append('no slower than today (needs --base)')
            if k == 1 and s in APPEND_GOAL_MS:
                goals.append(f'≤ {APPEND_GOAL_MS[s]:.0f} ms')
                met = met and med <= APPEND_GOAL_MS[s]
            verdict = met if (old or (k == 1 and s in APPEND_GOAL_MS)) else '—'
            if not old and verdict is True:
                verdict = 'yes (ms goal; base not run)'
            t.add(f'{s}, 128 tokens: {what}', ' '.join(args(s)), measured, '; '.join(goals), verdict)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--attnviz', default='build/app/attnviz')
    ap.add_argument('--base', default='', help="the build of 'today' for the 128-token rows (interleaved A/B)")
    ap.add_argument('--quick', action='store_true', help='the 1,024- and 128-token rows only (not 8,192 and 32,768)')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--repeat', type=int, default=5)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--gguf', default='', help='the Q4_K_M file (make_bench_gguf.py); none: that row is not run')
    a = ap.parse_args()
    print(f'machine: {machine()}; {a.threads} threads; load before {load()}', flush=True)
    t = Table()
    tiles = ['--observe', 'tiles-attention-16', '--repeat', '1', '--full-only']
    memory_row(t, a.attnviz, a.threads, 'Llama-3.2-1B shape, 1,024 tokens',
               ['--seeded', 'llama3.2-1b', '--tokens', '1024'] + tiles + ['--map', '512'], 0.3)
    if not a.quick:
        memory_row(t, a.attnviz, a.threads, 'Llama-3.2-1B shape, 8,192 tokens',
                   ['--seeded', 'llama3.2-1b', '--tokens', '8192'] + tiles + ['--map', '512'], 1.5, map_goal_ms=1000)
        memory_row(t, a.attnviz, a.threads, 'SmolLM2-135M shape, 32,768 tokens',
                   ['--seeded', 'smollm2-135m', '--context', '32768', '--tokens', '32768'] + tiles + ['--map', '512'], 2.5,
                   map_goal_ms=2000, zoom_goal_ms=50)
    gguf_row(t, a.attnviz, a.threads, a.gguf)
    short_rows(t, a.attnviz, a.base, a.threads, a.rounds, a.repeat)
    t.rows.append(('GPU: the 32k map of a head', '—', 'not run here (the device machine)', '≤ 100 ms', '—'))
    print(f'load after {load()}')
    t.print()


if __name__ == '__main__':
    sys.exit(main())
