#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Real-shape model tables on 2 cores, attnviz against PyTorch in the same run.

A benchmark, not a test. Each round runs, one after the other, `attnviz bench --seeded SHAPE` and
its PyTorch peer on the same shape and work, shape after shape; every process reports the median of
--repeat runs. Over the rounds it prints each row's median with its min-max spread, the ratio
PyTorch/attnviz per round (> 1: attnviz is faster) as median (min-max), the goal, and the load
average before and after. Last, the peak resident memory of a process that loads the shape and
traces 1,024 tokens with every layer's attention weights kept (attnviz: `--observe attention`, every
layer's weights, keys and values and no other stage, beside the whole trace of every stage; PyTorch:
every layer's weights tensor kept, the same weights).

--shapes picks the table (comma-separated):
  gpt2-small,bert-base (the default): GPT-2 small full trace at 128 and 1,024 tokens and one token
      appended to 128, BERT-base full trace at 128; peer tests/bench/torch_models.py; GPT-2's memory.
  smollm2-135m,qwen3-0.6b,llama3.2-1b: the rotary decoders (grouped-query attention, RMSNorm,
      SwiGLU; architecture.cpp: seededShape): full trace of 128 tokens and one token appended to 128,
      goals in ms and as PyTorch/attnviz ratios (>= 1.5x full, >= 1.8x append), each shape's memory;
      peer tests/bench/torch_llama.py (Hugging Face's modeling_llama / modeling_qwen3 in float32
      eager, a key/value cache for the append). Each round also measures the machine's sgemm rate
      (torch.mm 2048^3, --threads threads) and the table gives each full trace's FLOP rate as a share
      of it (the FLOPs from the shape: torch_llama.py full_trace_flops).

Both sides compute the same things: every layer's attention weights kept, a causal model's LM head at
the last position with its top 10 (the next-token list; attnviz computes other positions on demand),
float32 on PyTorch's side, --threads threads (ATTNVIZ_THREADS, torch.set_num_threads). PyTorch runs
with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (its strongest allocator setting here).

Usage: /usr/bin/python3 tests/bench/models_peer.py [--attnviz build/app/attnviz] [--rounds 3]
                 [--repeat 3] [--threads 2] [--shapes gpt2-small,bert-base] [--json]
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

# Each shape: the peer script, the sizes timed per round, its rows (key suffix, label, goal ms, goal
# ratio PyTorch/attnviz or None) and its memory goal in MB (None: no memory row).
SHAPES = {
    "gpt2-small": ("torch_models.py", "128,1024", "GPT-2 small", [
        ("append-128", "one token appended to 128", 30, None),
        ("full-128", "full trace, 128 tokens", 150, None),
        ("full-1024", "full trace, 1,024 tokens", 2500, None)], 1500),
    "bert-base": ("torch_models.py", "128", "BERT-base", [("full-128", "full trace, 128 tokens", 200, None)], None),
    "smollm2-135m": ("torch_llama.py", "128", "SmolLM2-135M (30 x 9 heads / 3 kv x 576)", [
        ("full-128", "full trace, 128 tokens", 150, 1.5),
        ("append-128", "one token appended to 128", 35, 1.8),
        ("typed-128", "one token typed at 128 (two traces, growing)", 35, 1.8)], 1200),
    "qwen3-0.6b": ("torch_llama.py", "128", "Qwen3-0.6B (28 x 16 / 8 x 1024, d_head 128)", [
        ("full-128", "full trace, 128 tokens", 500, 1.5),
        ("append-128", "one token appended to 128", 120, 1.8),
        ("typed-128", "one token typed at 128 (two traces, growing)", 120, 1.8)], 3000),
    "llama3.2-1b": ("torch_llama.py", "128", "Llama-3.2-1B (16 x 32 / 8 x 2048, vocab 128k)", [
        ("full-128", "full trace, 128 tokens", 1200, 1.5),
        ("append-128", "one token appended to 128", 250, 1.8),
        ("typed-128", "one token typed at 128 (two traces, growing)", 250, 1.8)], 4000),
}
MEMORY_TOKENS = 1024


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
    """{shape-full-N: ms, shape-append-128: ms, shape-typed-128: ms} from either side's JSON rows. The
    peer's append (a key/value cache that concatenates: it grows) stands beside attnviz's typed row."""
    got = {}
    for r in result["rows"]:
        if r["what"].startswith("full"):
            got[f"{shape}-full-{r['tokens']}"] = r["ms"]
        elif r["what"].startswith("one token typed") and r["tokens"] == 131:
            got[f"{shape}-typed-128"] = r["ms"]
        elif r["tokens"] == 129:
            got[f"{shape}-append-128"] = r["ms"]
            got.setdefault(f"{shape}-typed-128", r["ms"])
    return got


def flops_of(result, shape):
    """{shape-full-N: FLOPs} where the peer reports them (torch_llama.py)."""
    return {f"{shape}-full-{r['tokens']}": r["flops"] for r in result["rows"] if "flops" in r}


def attnviz(args, shape, tokens, repeat, extra=()):
    env = dict(os.environ, ATTNVIZ_THREADS=str(args.threads))
    verb = [] if os.path.basename(args.attnviz) == "model_bench" else ["bench"]  # the core-only program
    return run_json([args.attnviz, *verb, "--seeded", shape, "--tokens", tokens, "--repeat", str(repeat), "--json",
                     *extra], env)


def torch(args, shape, tokens, repeat):
    env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.hugetlb=1")
    return run_json([sys.executable, os.path.join(HERE, SHAPES[shape][0]), shape, "--tokens", tokens, "--repeat",
                     str(repeat), "--threads", str(args.threads)], env)


def sgemm(args):
    return run_json([sys.executable, os.path.join(HERE, "torch_llama.py"), "--sgemm", "--threads", str(args.threads)],
                    dict(os.environ))["sgemm_gflops"]


def spread(values):
    return statistics.median(values), min(values), max(values)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--attnviz", default="build/app/attnviz")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--shapes", default="gpt2-small,bert-base",
                   help=f"comma-separated, of {', '.join(SHAPES)} (default gpt2-small,bert-base)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown or not shapes:
        p.error(f"--shapes: {', '.join(unknown) or 'none given'}; known: {', '.join(SHAPES)}")
    rows = [(f"{shape}-{suffix}", f"{SHAPES[shape][2]}: {label}", goal, ratio_goal)
            for shape in shapes for suffix, label, goal, ratio_goal in SHAPES[shape][3]]
    rated = any(SHAPES[s][0] == "torch_llama.py" for s in shapes)  # FLOPs known: sgemm shares

    loads = [load()]
    ours = {k: [] for k, _, _, _ in rows}
    peer = {k: [] for k, _, _, _ in rows}
    ratio = {k: [] for k, _, _, _ in rows}
    share_ours = {k: [] for k, _, _, _ in rows}
    share_peer = {k: [] for k, _, _, _ in rows}
    flops, sgemms = {}, []
    torch_version = ""
    for rnd in range(args.rounds):
        rate = sgemm(args) if rated else None
        if rate:
            sgemms.append(rate)
        for shape in shapes:
            a = rows_of(attnviz(args, shape, SHAPES[shape][1], args.repeat, ("--typed",)), shape)
            t_res = torch(args, shape, SHAPES[shape][1], args.repeat)
            torch_version = t_res["torch"]
            t = rows_of(t_res, shape)
            flops.update(flops_of(t_res, shape))
            for k in a:
                if k in ours:
                    ours[k].append(a[k])
                    peer[k].append(t[k])
                    ratio[k].append(t[k] / a[k])
                    if rate and k in flops:  # GFLOP/s over the round's sgemm GFLOP/s
                        share_ours[k].append(flops[k] / a[k] / 1e6 / rate)
                        share_peer[k].append(flops[k] / t[k] / 1e6 / rate)
        loads.append(load())
        print(f"# round {rnd + 1} done, load {loads[-1]}", file=sys.stderr)
    memory = []
    for shape in shapes:
        goal = SHAPES[shape][4]
        if goal is None:
            continue
        tokens = str(MEMORY_TOKENS)
        memory.append({"shape": shape, "what": SHAPES[shape][2], "tokens": MEMORY_TOKENS, "goal": goal,
                       "attnviz": attnviz(args, shape, tokens, 1, ("--observe", "attention"))["peak_rss_mb"],
                       "attnviz_all": attnviz(args, shape, tokens, 1)["peak_rss_mb"],
                       "torch": torch(args, shape, tokens, 1)["peak_rss_mb"]})
    loads.append(load())

    result = {
        "machine": f"{cpu_name()}, {os.cpu_count()} CPUs visible, {args.threads} threads each side",
        "torch": torch_version, "rounds": args.rounds, "repeat": args.repeat, "load": loads, "shapes": shapes,
        "sgemm_gflops": sgemms,
        "rows": [{"key": k, "what": label, "goal": goal, "ratio_goal": ratio_goal, "flops": flops.get(k),
                  "attnviz_ms": ours[k], "torch_ms": peer[k], "ratio": ratio[k],
                  "attnviz_sgemm_share": share_ours[k], "torch_sgemm_share": share_peer[k]}
                 for k, label, goal, ratio_goal in rows],
        "memory": memory,
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"## {result['machine']}; PyTorch {torch_version}; {args.rounds} rounds x median of {args.repeat}")
    print(f"## load average (1/5/15 min) before, after each round, at the end: {' | '.join(loads)}")
    print()
    print("| what | goal | attnviz ms, median (min-max) | PyTorch ms, median (min-max) | PyTorch / attnviz | goal met |")
    print("|---|---|---|---|---|---|")
    for k, label, goal, ratio_goal in rows:
        if not ours[k]:
            continue
        a, t, r = spread(ours[k]), spread(peer[k]), spread(ratio[k])
        met = a[0] <= goal and (ratio_goal is None or r[0] >= ratio_goal)
        goal_text = f"<= {goal:,} ms" + (f", >= {ratio_goal}x PyTorch" if ratio_goal else "")
        print(f"| {label} | {goal_text} | {a[0]:,.1f} ({a[1]:,.1f}-{a[2]:,.1f}) | {t[0]:,.1f} ({t[1]:,.1f}-{t[2]:,.1f}) "
              f"| {r[0]:.2f}x ({r[1]:.2f}-{r[2]:.2f}) | {'yes' if met else 'no'} |")
    for m in memory:
        print(f"| {m['what']}: {m['tokens']:,} tokens, every layer's attention kept: peak RSS | <= {m['goal']:,} MB "
              f"| {m['attnviz']:,.0f} MB (every stage too: {m['attnviz_all']:,.0f} MB) | {m['torch']:,.0f} MB "
              f"| {m['torch'] / m['attnviz']:.2f}x | {'yes' if m['attnviz'] <= m['goal'] else 'no'} |")
    if not sgemms:
        return
    g = spread(sgemms)
    print()
    print(f"## sgemm (torch.mm 2048^3, {args.threads} threads), once per round: {g[0]:,.1f} GFLOP/s "
          f"({g[1]:,.1f}-{g[2]:,.1f})")
    print()
    print("| full trace | GFLOP | attnviz GFLOP/s, share of sgemm, median (min-max) "
          "| PyTorch GFLOP/s, share of sgemm, median (min-max) |")
    print("|---|---|---|---|")
    for k, label, _, _ in rows:
        if not share_ours[k]:
            continue
        a, t = spread(ours[k]), spread(peer[k])
        so, sp = spread(share_ours[k]), spread(share_peer[k])
        print(f"| {label} | {flops[k] / 1e9:,.1f} | {flops[k] / a[0] / 1e6:,.1f}, {so[0]:.0%} ({so[1]:.0%}-{so[2]:.0%}) "
              f"| {flops[k] / t[0] / 1e6:,.1f}, {sp[0]:.0%} ({sp[1]:.0%}-{sp[2]:.0%}) |")


if __name__ == "__main__":
    main()
