#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
# How fast each fuzz target stops finding new coverage, from its seeds alone: the numbers behind the
# per-target seconds in tests/fuzz/CMakeLists.txt. Runs every test labelled "fuzz" of a sanitizer
# build folder (the asan preset) with an empty corpus for SECONDS, two at a time as the test command
# runs them, and prints, per target, the second (and the execution) at which libFuzzer's edge
# coverage ("cov") reached 90, 95 and 99 % of what the whole run found, the last second it grew, the
# coverage, and the executions per second. Every target still finds a little at 120 s; the seconds
# chosen are where the curve has flattened (95 %), with a margin.
#   python3 tests/fuzz/coverage_times.py build-asan [SECONDS=120] [TARGET...]
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build-asan"
seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 120
only = set(sys.argv[3:])
tests = json.loads(subprocess.run(["ctest", "--test-dir", build, "-L", "^fuzz$", "--show-only=json-v1"],
                                  check=True, capture_output=True, text=True).stdout)["tests"]
NEW = re.compile(r"^#(\d+)\s+(?:NEW|REDUCE|pulse|INITED)\s+cov: (\d+)")
EXECS = re.compile(r"stat::number_of_executed_units:\s+(\d+)")
results = {}


def run(test, scratch):
    name = test["name"]
    cmd = list(test["command"])
    cmd = [c for c in cmd if not c.startswith("-max_total_time=")] + ["-max_total_time=%d" % seconds]
    # the corpus folder (the first folder argument) replaced by an empty one: seeds only, as a fresh clone
    corpus = os.path.join(scratch, name)
    os.makedirs(corpus)
    folders = [i for i, c in enumerate(cmd) if i > 0 and not c.startswith("-")]
    cmd[folders[0]] = corpus
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", ASAN_OPTIONS="abort_on_error=1")
    start = time.monotonic()
    last_t, last_cov, execs = 0.0, 0, 0
    curve = []  # (second, execution, coverage) at each growth
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, errors="replace", env=env, cwd=scratch)
    for line in p.stderr:
        m = NEW.match(line)
        if m and int(m.group(2)) > last_cov:
            last_cov, last_t = int(m.group(2)), time.monotonic() - start
            curve.append((last_t, int(m.group(1)), last_cov))
        m = EXECS.search(line)
        if m:
            execs = int(m.group(1))
    p.wait()
    total = time.monotonic() - start
    reached = []
    for share in (0.90, 0.95, 0.99):
        t, n = next(((t, n) for t, n, c in curve if c >= share * last_cov), (last_t, 0))
        reached += [t, n]
    results[name] = tuple(reached) + (last_t, last_cov, execs / max(total, 1e-9), p.returncode)


with tempfile.TemporaryDirectory() as scratch:
    queue = [t for t in tests if not only or t["name"] in only]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                t = queue.pop(0)
            run(t, scratch)
            r = results[t["name"]]
            print("%-22s 90%% %5.1f s (#%d)  95%% %5.1f s (#%d)  99%% %5.1f s (#%d)  last %5.1f s  cov %5d  %6.0f exec/s  rc %d"
                  % ((t["name"],) + r), flush=True)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
