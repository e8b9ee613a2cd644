#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""attnviz bench against PyTorch in the same run: a benchmark, not a test.

For each size it runs `attnviz bench --json` and then PyTorch's nn.MultiheadAttention on the same
work (self-attention, projections with biases, softmax, out_proj, need_weights=True with every
per-head weight kept: average_attn_weights=False), median of repeated runs after a warm-up, and
prints both times and the ratio torch/attnviz (> 1: attnviz is faster).

PyTorch is set up as a strong peer, as issue 2 asks: Debian's python3-torch over OpenBLAS
(apt-get install python3-torch libopenblas0-pthread), OPENBLAS_CORETYPE=SkylakeX where the CPU
has AVX-512, torch.set_num_threads(<cpus>), GLIBC_TUNABLES=glibc.malloc.hugetlb=1.

Usage: /usr/bin/python3 tests/bench/torch_peer.py [--attnviz build/app/attnviz] [--sizes 16:64:4,...]
                                                 [--seconds 1] [--json]
"""
import argparse
import json
import os
import subprocess
import sys
import time

DEFAULT_SIZES = "16:64:4,128:256:4,512:768:12,2048:768:12,4096:768:12,32:1000:256:4"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def ensure_env():
    """The peer's environment must be set before the process (and OpenBLAS, malloc) start."""
    want = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    if "avx512f" in cpu_flags():
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


def torch_median_ms(torch, b, t, d, h, seconds):
    torch.manual_seed(0)
    m = torch.nn.MultiheadAttention(d, h, bias=True, batch_first=True).eval()
    x = torch.rand(b, t, d) * 2 - 1
    with torch.inference_mode():
        m(x, x, x, need_weights=True, average_attn_weights=False)  # warm-up
        times = []
        start = time.perf_counter()
        while len(times) < 5 or (time.perf_counter() - start < seconds and len(times) < 200):
            t0 = time.perf_counter()
            m(x, x, x, need_weights=True, average_attn_weights=False)
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    n = len(times)
    return times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])


def gemm_gflops(torch, n=2048):
    a = torch.rand(n, n)
    b = torch.rand(n, n)
    torch.mm(a, b)
    t0 = time.perf_counter()
    for _ in range(5):
        torch.mm(a, b)
    return 2 * n ** 3 * 5 / (time.perf_counter() - t0) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attnviz", default=os.path.join(os.path.dirname(__file__), "../../build/app/attnviz"))
    ap.add_argument("--sizes", default=DEFAULT_SIZES)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ensure_env()
    import torch

    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    info = {"torch": torch.__version__, "threads": threads, "blas": "openblas" if "openblas" in
            torch.__config__.show().lower() or os.path.exists("/usr/lib/x86_64-linux-gnu/openblas-pthread") else "?",
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(auto)"),
            "torch_sgemm_2048_gflops": round(gemm_gflops(torch), 1)}
    rows = []
    for b, t, d, h in parse_sizes(args.sizes):
        out = subprocess.run([args.attnviz, "bench", "--json", "--backend", args.backend, "--seconds",
                              str(args.seconds), "--sizes", "%d:%d:%d:%d" % (b, t, d, h)],
                             check=True, capture_output=True, text=True).stdout
        ours = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        peer = torch_median_ms(torch, b, t, d, h, args.seconds)
        flops = 8.0 * b * t * d * d + 4.0 * b * t * t * d
        for o in ours:
            rows.append(dict(backend=o["backend"], batch=b, t=t, d=d, h=h, attnviz_ms=o["median_ms"],
                             torch_ms=round(peer, 4), attnviz_gflops=o["gflops"],
                             torch_gflops=round(flops / (peer * 1e6), 2), ratio=round(peer / o["median_ms"], 2)))
    if args.json:
        print(json.dumps(info))
        for r in rows:
            print(json.dumps(r))
        return
    print("PyTorch %(torch)s, %(threads)d threads, BLAS %(blas)s, OPENBLAS_CORETYPE=%(OPENBLAS_CORETYPE)s, "
          "torch sgemm 2048^3: %(torch_sgemm_2048_gflops)s GFLOP/s" % info)
    print("%-8s %5s %6s %5s %4s %12s %12s %9s %9s %8s" % ("backend", "batch", "t", "d", "h", "attnviz_ms", "torch_ms",
                                                        "av_GF/s", "pt_GF/s", "ratio"))
    for r in rows:
        print("%-8s %5d %6d %5d %4d %12.4f %12.4f %9.1f %9.1f %7.2fx" % (
            r["backend"], r["batch"], r["t"], r["d"], r["h"], r["attnviz_ms"], r["torch_ms"], r["attnviz_gflops"],
            r["torch_gflops"], r["ratio"]))


if __name__ == "__main__":
    main()
