#!/usr/bin/env python3
"""The Python shim's cost on a compiled training loop (issue 39): tests/agent/data/train_compiled.py (torch.compile
on the CPU, two graph breaks per step: the shim's CompileWatch, step and phase ranges all active) run three ways,
interleaved (plain shim plain shim ...: a slow period of a shared machine hits both), --rounds times:
  plain   the venv's python, no profile-train at all (no shim, no agent)
  shim    `profile-train run` (the agent and the shim: CompileWatch, step and phase ranges)
(`run` with PROFILE_TRAIN_SHIM=0 is no baseline: without the shim a CPU program makes no NVTX range, so nothing
is captured and `run` refuses it.)
The program times its own steps after --warmup (process CPU time and wall time, compile time excluded: the first
steps compile). Printed: each run, the medians per mode, and the ratio shim/plain of the medians
and the median of the per-round ratios.
Usage: bench/shim/bench_compile_overhead.py [--build DIR] [--python PY] [--rounds N] [--steps N] [--warmup N]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAM = os.path.join(ROOT, "tests", "agent", "data", "train_compiled.py")


def one(binary, py, work, mode, i, args):
    timing = os.path.join(work, "%s-%d.json" % (mode, i))
    prog = [py, PROGRAM, "--steps", str(args.steps), "--timing", timing, "--timing-warmup", str(args.warmup)]
    env = dict(os.environ)
    if mode == "plain":
        cmd = prog
    else:
        cmd = [binary, "run", "--out", os.path.join(work, "%s-%d" % (mode, i)), "--quiet", "--"] + prog
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=900)
    if p.returncode != 0:
        sys.exit("%s run %d failed (rc %d):\n%s" % (mode, i, p.returncode, p.stdout[-3000:]))
    with open(timing) as f:
        t = json.load(f)
    return 1000.0 * t["cpu_s"] / t["steps"], 1000.0 * t["wall_s"] / t["steps"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    binary = os.path.join(args.build, "profile-train")
    modes = ("plain", "shim")
    res = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="pt_bench_compile_") as work:
        for i in range(args.rounds):
            for m in modes:
                cpu, wall = one(binary, args.python, work, m, i, args)
                res[m].append((cpu, wall))
                print("round %d %-5s cpu %.3f ms/step  wall %.3f ms/step" % (i + 1, m, cpu, wall), flush=True)
    med = {m: (statistics.median(c for c, _ in res[m]), statistics.median(w for _, w in res[m])) for m in modes}
    for m in modes:
        print("median %-5s cpu %.3f ms/step  wall %.3f ms/step" % (m, med[m][0], med[m][1]))
    for a, b in (("shim", "plain"),):
        pr_cpu = statistics.median(x[0] / y[0] for x, y in zip(res[a], res[b]))
        pr_wall = statistics.median(x[1] / y[1] for x, y in zip(res[a], res[b]))
        print("%s / %s: cpu %.3fx (median of rounds %.3fx), wall %.3fx (median of rounds %.3fx)" % (
            a, b, med[a][0] / med[b][0], pr_cpu, med[a][1] / med[b][1], pr_wall))


if __name__ == "__main__":
    main()
