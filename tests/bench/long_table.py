#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
# Issue 44's goals table (long texts, the CPU rows of its "## Goals") from one run of `attnviz bench`:
# each row's command, what it measured, the goal and whether it is met. tests/bench/long_table.sh runs
# it; tests/bench/README.md ("Long texts: the goals table") says what each row means.
#   /usr/bin/python3 tests/bench/long_table.py --attnviz build/app/attnviz [--base OLD/app/attnviz]
#       [--quick] [--rounds 3] [--repeat 5] [--threads 2] [--gguf FILE] [--rows LIST] [--base-memory]
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


def bench_options(exe):
    """The --options `attnviz bench --help` lists, and the help's text: an older build (the issue's
    base) lacks some options, and some values (--observe tiles-attention-16)."""
    r = subprocess.run([exe, 'bench', '--seeded', 'gpt2-small', '--help'], capture_output=True, text=True)  # the model bench's
    return {w.split('=')[0].rstrip(',') for w in r.stdout.split() if w.startswith('--')}, ' '.join(r.stdout.split())


NEEDED = {'--context'}  # without it a row measures something else (a length cut to the checkpoint's positions)
NAMED = {'--observe'}   # options whose value the help names: dropped where it does not


def base_args(args, options):
    """(args the base build can run, None) or (None, why not): options it lacks dropped with their
    values (what a trace keeps, the map rows: its default keeps every weight, as the issue's "today")."""
    options, help_text = options
    out, dropped, i = [], [], 0
    while i < len(args):
        a = args[i]
        takes = i + 1 < len(args) and not args[i + 1].startswith('--')
        if a in NAMED and takes and args[i + 1] not in help_text:
            dropped.append(f'{a} {args[i + 1]}')
            i += 2
            continue
        if a.startswith('--') and a not in options:
            if a in NEEDED:
                return None, f'its bench has no {a}'
            dropped.append(a)
            i += 2 if takes else 1
            continue
        out += args[i:i + (2 if takes else 1)]
        i += 2 if takes else 1
    return out, dropped


def before(t_base, args, measure):
    """The base build's figure for a memory row, in words: measure(o) of its run, or why there is none."""
    exe, options = t_base
    run, dropped = base_args(args, options)
    if run is None:
        return f'before: not run ({dropped})'
    try:
        o = bench(exe, run, 2)
    except RuntimeError as e:  # "CMD: exit N: attnviz bench: WHY"
        return 'before: refused: ' + str(e).split(': exit ', 1)[-1].split(': ', 1)[-1].replace('attnviz bench: ', '')[:300]
    note = f' (without {" ".join(dropped)}: not in its bench)' if dropped else ''
    return f'before: {measure(o)}{note}'


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


def memory_row(t, exe, threads, work, args, goal_gb, map_goal_ms=None, zoom_goal_ms=None, base=None):
    """A long text's trace (q, k, v in 16 bits and the log-sum-exp; no t x t weights) and, with --map,
    a pooled 512 x 512 map of one head and a zoom to 256 x 256 cells. `base` (exe, its options): the
    base build's peak too, on what it keeps by default."""
    try:
        o = bench(exe, args, threads)
    except RuntimeError as e:
        t.add(work, ' '.join(args), f'failed: {e}', f'≤ {goal_gb} GB', 'no')
        return
    mib = above_weights_mib(o)
    measured = f'{mib:,.0f} MiB ({mib * MIB / GB:.2f} GB; weights {o["model"]["weight_bytes"] / MIB:,.0f} MiB)'
    if base:
        measured += '; ' + before(base, args, lambda b: f'{above_weights_mib(b):,.0f} MiB above the weights')
    t.add(work + ': peak RSS above the weights', ' '.join(args), measured,
          f'≤ {goal_gb} GB ({goal_gb * GB / MIB:,.0f} MiB)', mib * MIB <= goal_gb * GB)
    if map_goal_ms is not None:
        ms = row_ms(o, 'pooled map')
        t.add(work + ': pooled 512 × 512 map of one head', ' '.join(args), f'{ms:,.1f} ms', f'≤ {map_goal_ms:,.0f} ms',
              ms is not None and ms <= map_goal_ms)
    if zoom_goal_ms is not None:
        ms = row_ms(o, 'zoom to 256')
        t.add(work + ': zoomed to 256 × 256 cells', ' '.join(args), f'{ms:,.1f} ms', f'≤ {zoom_goal_ms:,.0f} ms',
              ms is not None and ms <= zoom_goal_ms)


def gguf_row(t, exe, threads, path, base=None):
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
    measured = f'{peak / MIB:,.0f} MiB (file {size / MIB:,.0f} MiB)'
    if base:
        measured += '; ' + before(base, args, lambda b: f'{b["peak_rss_mb"]:,.0f} MiB')
    t.add(work, ' '.join(args).replace(path, os.path.basename(path)), measured,
          f'≤ file + 1 GB ({(size + GB) / MIB:,.0f} MiB)', peak <= size + GB)


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
                try:
                    o = bench(e, args(s), threads)
                except RuntimeError as err:
                    if who == 'new':
                        raise
                    print(f'round {rnd + 1} {s} base: not run ({str(err)[-300:]})', flush=True)
                    continue
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
    ap.add_argument('--rows', default='llama1k,llama8k,smol32k,gguf,short',
                    help='the rows run, of llama1k, llama8k, smol32k, gguf, short (--quick: not llama8k, smol32k)')
    ap.add_argument('--base-memory', action='store_true',
                    help="with --base, the memory rows' and the GGUF row's peak of the base build too (before/after); "
                         'a row it cannot run (an option its bench lacks that changes what is measured) says so')
    a = ap.parse_args()
    rows = set(a.rows.split(','))
    if a.quick:
        rows -= {'llama8k', 'smol32k'}
    print(f'machine: {machine()}; {a.threads} threads; load before {load()}', flush=True)
    base = (a.base, bench_options(a.base)) if a.base and a.base_memory else None
    t = Table()
    tiles = ['--observe', 'tiles-attention-16', '--repeat', '1', '--full-only']
    if 'llama1k' in rows:
        memory_row(t, a.attnviz, a.threads, 'Llama-3.2-1B shape, 1,024 tokens',
                   ['--seeded', 'llama3.2-1b', '--tokens', '1024'] + tiles + ['--map', '512'], 0.3, base=base)
    if 'llama8k' in rows:
        memory_row(t, a.attnviz, a.threads, 'Llama-3.2-1B shape, 8,192 tokens',
                   ['--seeded', 'llama3.2-1b', '--tokens', '8192'] + tiles + ['--map', '512'], 1.5, map_goal_ms=1000,
                   base=base)
    if 'smol32k' in rows:
        memory_row(t, a.attnviz, a.threads, 'SmolLM2-135M shape, 32,768 tokens',
                   ['--seeded', 'smollm2-135m', '--context', '32768', '--tokens', '32768'] + tiles + ['--map', '512'], 2.5,
                   map_goal_ms=2000, zoom_goal_ms=50, base=base)
    if 'gguf' in rows:
        gguf_row(t, a.attnviz, a.threads, a.gguf, base=base)
    if 'short' in rows:
        short_rows(t, a.attnviz, a.base, a.threads, a.rounds, a.repeat)
    t.rows.append(('GPU: the 32k map of a head', '—', 'not run here (the device machine)', '≤ 100 ms', '—'))
    print(f'load after {load()}')
    t.print()


if __name__ == '__main__':
    sys.exit(main())
