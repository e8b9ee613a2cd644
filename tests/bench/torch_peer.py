#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""attnviz bench against PyTorch in the same run: a benchmark, not a test.

For each size it runs `attnviz bench --json` and then PyTorch's nn.MultiheadAttention on the same
work (self-attention, projections with biases, softmax, out_proj, need_weights=True with every
per-head weight kept: average_attn_weights=False), median of repeated runs after a warm-up, and
prints both times and the ratio torch/attnviz (> 1: attnviz is faster). Next to each row, the
machine's sgemm rate measured at that moment (torch.mm 2048^3 over OpenBLAS) and attnviz's share
of it. --rounds N repeats the whole table N times, interleaved (attnviz, PyTorch, attnviz, ...),
and reports the median ratio with its spread, for a machine shared with other work.

--stack DEPTH times the transformer stack instead: attnviz bench --stack against a PyTorch
pre-norm encoder stack of the same shape (LayerNorm, nn.MultiheadAttention with every per-head
weight kept, residual, LayerNorm, Linear(d, 4d), ReLU, Linear(4d, d), residual).

--isa avx2 stands for an AVX2 machine on an AVX-512 one: attnviz runs with
GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F (the loader then picks its x86-64-v3 core build), PyTorch
with OPENBLAS_CORETYPE=Haswell and ATEN_CPU_CAPABILITY=avx2.

PyTorch is set up as a strong peer: Debian's python3-torch over OpenBLAS
(apt-get install python3-torch libopenblas0-pthread), OPENBLAS_CORETYPE=SkylakeX where the CPU
has AVX-512, torch.set_num_threads(<cpus>), GLIBC_TUNABLES=glibc.malloc.hugetlb=1.

Usage: /usr/bin/python3 tests/bench/torch_peer.py [--attnviz build/app/attnviz] [--sizes 16:64:4,...]
                 [--seconds 1] [--rounds 1] [--isa native|avx2] [--stack DEPTH] [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

DEFAULT_SIZES = "16:64:4,128:256:4,512:768:12,2048:768:12,4096:768:12,32:1000:256:4"
STACK_SIZES = "128:768:12,512:768:12"
AVX2_TUNABLE = "glibc.cpu.hwcaps=-AVX512F"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def isa_arg():
    return "avx2" if "--isa=avx2" in sys.argv or "--isa avx2" in " ".join(sys.argv) else "native"


def ensure_env():
    """The peer's environment must be set before the process (and OpenBLAS, malloc) start."""
    want = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    if isa_arg() == "avx2":
        want["OPENBLAS_CORETYPE"] = "Haswell"
        want["ATEN_CPU_CAPABILITY"] = "avx2"
    elif "avx512f" in cpu_flags():
        want["OPENBLAS_CORETYPE"] = "SkylakeX"
    if all(os.environ.get(k) == v for k, v in want.items()):
        return
    env = dict(os.environ, **want)
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def parse_sizes(text):
    sizes = []
    for item in text.split(","):
        n = [int(x) for x in item.split(":")]
        sizes.append((1, *n) if len(n) == 3 else tuple(n))
    return sizes


def median(v):
    return statistics.median(v)


def time_ms(fn, seconds):
    fn()  # warm-up
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < seconds and len(times) < 200):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return median(times)


def torch_mha_ms(torch, b, t, d, h, seconds):
    torch.manual_seed(0)
    m = torch.nn.MultiheadAttention(d, h, bias=True, batch_first=True).eval()
    x = torch.rand(b, t, d) * 2 - 1
    with torch.inference_mode():
        return time_ms(lambda: m(x, x, x, need_weights=True, average_attn_weights=False), seconds)


def torch_stack_ms(torch, depth, t, d, h, seconds):
    torch.manual_seed(0)
    nn = torch.nn
    layers = [nn.ModuleDict(dict(ln1=nn.LayerNorm(d), attn=nn.MultiheadAttention(d, h, batch_first=True),
                                 ln2=nn.LayerNorm(d), ff1=nn.Linear(d, 4 * d), ff2=nn.Linear(4 * d, d)))
              for _ in range(depth)]
    x0 = torch.rand(1, t, d) * 2 - 1

    def run():
        x = x0
        kept = []
        for L in layers:
            y = L["ln1"](x)
            a, w = L["attn"](y, y, y, need_weights=True, average_attn_weights=False)
            kept.append(w)
            x = x + a
            x = x + L["ff2"](torch.relu(L["ff1"](L["ln2"](x))))
        return x, kept

    with torch.inference_mode():
        return time_ms(run, seconds)


def sgemm_gflops(torch, n=2048):
    a = torch.rand(n, n)
    b = torch.rand(n, n)
    torch.mm(a, b)
    best = 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = max(best, 2 * n ** 3 / (time.perf_counter() - t0) / 1e9)
    return best


def attnviz_row(args, b, t, d, h):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("ATEN_CPU_CAPABILITY", None)
    env["GLIBC_TUNABLES"] = AVX2_TUNABLE if args.isa == "avx2" else ""
    cmd = [args.attnviz, "bench", "--json", "--backend", args.backend, "--seconds", str(args.seconds),
           "--sizes", "%d:%d:%d:%d" % (b, t, d, h)]
    if args.stack:
        cmd += ["--stack", str(args.stack)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return rows[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attnviz", default=os.path.join(os.path.dirname(__file__), "../../build/app/attnviz"))
    ap.add_argument("--sizes", default=None)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--isa", choices=["native", "avx2"], default="native")
    ap.add_argument("--stack", type=int, default=0, help="time a stack of this depth (default sizes %s)" % STACK_SIZES)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ensure_env()
    import torch

    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    info = {"torch": torch.__version__, "threads": threads, "blas": "openblas" if "openblas" in
            torch.__config__.show().lower() or os.path.exists("/usr/lib/x86_64-linux-gnu/openblas-pthread") else "?",
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(auto)"), "isa": args.isa,
            "rounds": args.rounds}
    sizes = parse_sizes(args.sizes or (STACK_SIZES if args.stack else DEFAULT_SIZES))
    samples = {s: [] for s in sizes}
    device = "?"
    for _ in range(args.rounds):
        for (b, t, d, h) in sizes:
            sg = sgemm_gflops(torch)
            o = attnviz_row(args, b, t, d, h)
            device = o["device"]
            peer = torch_stack_ms(torch, args.stack, t, d, h, args.seconds) if args.stack else \
                torch_mha_ms(torch, b, t, d, h, args.seconds)
            samples[(b, t, d, h)].append(dict(ours=o["median_ms"], peer=peer, sgemm=sg, gflops=o["gflops"]))
    info["device"] = device
    rows = []
    for (b, t, d, h), ss in samples.items():
        ratios = [x["peer"] / x["ours"] for x in ss]
        shares = [x["gflops"] / x["sgemm"] for x in ss]
        rows.append(dict(batch=b, t=t, d=d, h=h, depth=args.stack or 1,
                         attnviz_ms=round(median([x["ours"] for x in ss]), 4),
                         torch_ms=round(median([x["peer"] for x in ss]), 4),
                         attnviz_gflops=round(median([x["gflops"] for x in ss]), 1),
                         sgemm_gflops=round(median([x["sgemm"] for x in ss]), 1),
                         sgemm_share=round(median(shares), 3),
                         ratio=round(median(ratios), 2), ratio_min=round(min(ratios), 2),
                         ratio_max=round(max(ratios), 2)))
    if args.json:
        print(json.dumps(info))
        for r in rows:
            print(json.dumps(r))
        return
    print("attnviz on %(device)s; PyTorch %(torch)s, %(threads)d threads, BLAS %(blas)s, "
          "OPENBLAS_CORETYPE=%(OPENBLAS_CORETYPE)s; --isa %(isa)s; %(rounds)d round(s)" % info)
    print("%5s %6s %5s %4s %5s %11s %11s %8s %8s %7s %8s %13s" % (
        "batch", "t", "d", "h", "depth", "attnviz_ms", "torch_ms", "av_GF/s", "sgemm", "%sgemm", "ratio",
        "ratio min-max"))
    for r in rows:
        print("%5d %6d %5d %4d %5d %11.3f %11.3f %8.1f %8.1f %6.0f%% %7.2fx %6.2f-%.2f" % (
            r["batch"], r["t"], r["d"], r["h"], r["depth"], r["attnviz_ms"], r["torch_ms"], r["attnviz_gflops"],
            r["sgemm_gflops"], 100 * r["sgemm_share"], r["ratio"], r["ratio_min"], r["ratio_max"]))


if __name__ == "__main__":
    main()
