#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 13's table: a real 12-layer model on 2 cores, attnviz against PyTorch in the same run.

A benchmark, not a test. Each round runs, one after the other, `attnviz bench --seeded gpt2-small`
(full trace at 128 and 1,024 tokens, one token appended to 128), tests/bench/torch_models.py on the
same shapes and work, then the same two for bert-base at 128 tokens; every process reports the
median of --repeat runs. Over the rounds it prints each row's median with its min-max spread, the
ratio PyTorch/attnviz per round (> 1: attnviz is faster) as median (min-max), the goal, and the
load average before and after. Last, the peak resident memory of a process that loads GPT-2 small
and traces 1,024 tokens with every layer's attention weights kept (attnviz: trace memory; PyTorch:
need_weights on, the same weights).

Both sides compute the same things: every layer's attention weights kept, GPT-2's LM head at the
last position with its top 10 (the next-token list; attnviz computes other positions on demand),
float32, --threads threads (ATTNVIZ_THREADS, torch.set_num_threads). PyTorch runs with
GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (its strongest allocator setting here).

Usage: /usr/bin/python3 tests/bench/models_peer.py [--attnviz build/app/attnviz] [--rounds 3]
                 [--repeat 3] [--threads 2] [--json]
--attnviz may name build/tests/bench/model_bench, the same benchmark without Qt (for a machine
without the window's libraries). Pin it to two cores on a bigger machine with `taskset -c 0,1`.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# (key, label, goal in ms or MB)
ROWS = [
    ("gpt2-append-128", "GPT-2 small: one token appended to 128", 30),
    ("gpt2-full-128", "GPT-2 small: full trace, 128 tokens", 150),
    ("gpt2-full-1024", "GPT-2 small: full trace, 1,024 tokens", 2500),
    ("bert-full-128", "BERT-base: full trace, 128 tokens", 200),
]


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def run_json(cmd, env):
    out = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out[out.index("{"):])


def rows_of(result, shape):
    got = {}
    for r in result["rows"]:
        if r["what"].startswith("full"):
            got[f"{shape}-full-{r['tokens']}"] = r["ms"]
        elif r["tokens"] == 129:
            got[f"{shape}-append-128"] = r["ms"]
    return got


def attnviz(args, shape, tokens, repeat, extra=()):
    env = dict(os.environ, ATTNVIZ_THREADS=str(args.threads))
    verb = [] if os.path.basename(args.attnviz) == "model_bench" else ["bench"]  # the core-only program
    return run_json([args.attnviz, *verb, "--seeded", shape, "--tokens", tokens, "--repeat", str(repeat), "--json",
                     *extra], env)


def torch(args, shape, tokens, repeat):
    env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.hugetlb=1")
    return run_json([sys.executable, os.path.join(HERE, "torch_models.py"), shape, "--tokens", tokens, "--repeat",
                     str(repeat), "--threads", str(args.threads)], env)


def spread(values):
    return statistics.median(values), min(values), max(values)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--attnviz", default="build/app/attnviz")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    loads = [load()]
    ours = {k: [] for k, _, _ in ROWS}
    peer = {k: [] for k, _, _ in ROWS}
    ratio = {k: [] for k, _, _ in ROWS}
    torch_version = ""
    for rnd in range(args.rounds):
        for shape, tokens in (("gpt2-small", "128,1024"), ("bert-base", "128")):
            short = shape.split("-")[0]
            a = rows_of(attnviz(args, shape, tokens, args.repeat), short)
            t_res = torch(args, shape, tokens, args.repeat)
            torch_version = t_res["torch"]
            t = rows_of(t_res, short)
            for k in a:
                if k in ours:
                    ours[k].append(a[k])
                    peer[k].append(t[k])
                    ratio[k].append(t[k] / a[k])
        loads.append(load())
        print(f"# round {rnd + 1} done, load {loads[-1]}", file=sys.stderr)
    mem_ours = attnviz(args, "gpt2-small", "1024", 1)["peak_rss_mb"]
    mem_peer = torch(args, "gpt2-small", "1024", 1)["peak_rss_mb"]
    loads.append(load())

    result = {
        "machine": f"{cpu_name()}, {os.cpu_count()} CPUs visible, {args.threads} threads each side",
        "torch": torch_version, "rounds": args.rounds, "repeat": args.repeat, "load": loads,
        "rows": [{"key": k, "what": label, "goal": goal, "attnviz_ms": ours[k], "torch_ms": peer[k], "ratio": ratio[k]}
                 for k, label, goal in ROWS],
        "peak_rss_mb": {"attnviz": mem_ours, "torch": mem_peer, "goal": 1500},
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"## {result['machine']}; PyTorch {torch_version}; {args.rounds} rounds x median of {args.repeat}")
    print(f"## load average (1/5/15 min) before, after each round, at the end: {' | '.join(loads)}")
    print()
    print("| what | goal | attnviz ms, median (min-max) | PyTorch ms, median (min-max) | PyTorch / attnviz | goal met |")
    print("|---|---|---|---|---|---|")
    for k, label, goal in ROWS:
        if not ours[k]:
            continue
        a, t, r = spread(ours[k]), spread(peer[k]), spread(ratio[k])
        print(f"| {label} | <= {goal:,} ms | {a[0]:,.1f} ({a[1]:,.1f}-{a[2]:,.1f}) | {t[0]:,.1f} ({t[1]:,.1f}-{t[2]:,.1f}) "
              f"| {r[0]:.2f}x ({r[1]:.2f}-{r[2]:.2f}) | {'yes' if a[0] <= goal else 'no'} |")
    print(f"| GPT-2 small, 1,024 tokens, every layer's attention kept: peak RSS | <= 1,500 MB | {mem_ours:,.0f} MB "
          f"| {mem_peer:,.0f} MB | {mem_peer / mem_ours:.2f}x | {'yes' if mem_ours <= 1500 else 'no'} |")


if __name__ == "__main__":
    main()
