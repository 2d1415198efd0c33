#!/usr/bin/env python3
"""Cost of recording the collectives (facts.collectives, src/agent/python/profile_train_comm.py) on a real DDP loop.

The loop: tests/agent/data/train_ddp_comm.py under `torchrun --nproc-per-node 2` on the CPU (gloo): a small MLP with
a BatchNorm, DDP with bucket_cap_mb 0.1 (2 gradient buckets), and per step DDP's buffer broadcast (2 broadcasts),
the bucket all-reduces and three direct collectives: 7 collectives per step, on a model small enough that they are
a large part of the step (a worst case for a per-collective cost). Both modes run under the same
`profile-train run` (agent and shim on):
  on    recording (the default)
  off   PROFILE_TRAIN_COLLECTIVES=0 (nothing of torch.distributed or DDP patched)
interleaved (on off on off ...: a slow period of a shared machine hits both), --pairs times. Per run, each rank
reports its process CPU time and wall time per step after the warm-up steps; the figure of a run is the mean over
its ranks. Printed: per mode the median over the runs, the ratio on/off of the medians, and the median of the
per-pair ratios, for CPU time and wall time, and each run's figures.

Then, unless --no-micro, the per-collective figures in one process (gloo, world size 1, the venv's python; the
shim's CommWatch loaded by path with a stand-in for the shim's state, nothing else of the shim): the process CPU
time of a synchronous and an async (waited) all_reduce of one element through the original function and through
the wrapper, and of one DDP training step of the same model (2 buckets, 2 buffer broadcasts) with DDP's builtin
all-reduce, with our comm hook recording, and with our hook while the shim is inactive (its arithmetic and the
Python hook alone). Interleaved, --micro-reps blocks; the figure is the minimum over the blocks (the least
disturbed one on a shared machine).

Usage: bench/shim/bench_comm_overhead.py [--build DIR] [--python PY] [--pairs N] [--steps N] [--warmup N]
                                        [--no-micro] [--micro-reps N]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGRAM = os.path.join(ROOT, "tests", "agent", "data", "train_ddp_comm.py")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def one_run(binary, torchrun, work, mode, i, args):
    out = os.path.join(work, "%s-%d" % (mode, i))
    prefix = os.path.join(work, "%s-%d-rank" % (mode, i))
    env = dict(os.environ, PROFILE_TRAIN_COLLECTIVES="1" if mode == "on" else "0")
    cmd = [binary, "run", "--out", out, "--", torchrun, "--nproc-per-node", "2", "--master-port", str(free_port()),
           PROGRAM, "--steps", str(args.steps), "--warmup", str(args.warmup), "--out", prefix]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=900)
    if p.returncode != 0:
        sys.exit("%s run %d failed (rc %d):\n%s" % (mode, i, p.returncode, p.stdout[-3000:]))
    cpu, wall, counted = [], [], 0
    for r in range(2):
        with open("%s.rank%d.json" % (prefix, r)) as fh:
            o = json.load(fh)
        cpu.append(o["cpu_ms_per_step"])
        wall.append(o["wall_ms_per_step"])
        with open(os.path.join(out, "rank%d" % r, "report.json")) as fh:
            c = json.load(fh)["facts"].get("collectives")
        counted += len(c["instances"]) if c else 0
    return statistics.mean(cpu), statistics.mean(wall), counted


def micro(reps):
    """The per-collective figures, in this process (run with the venv's python)."""
    import importlib.util
    import time

    import torch
    import torch.distributed as dist
    from torch import nn

    torch.set_num_threads(1)
    spec = importlib.util.spec_from_file_location(
        "profile_train_comm", os.path.join(ROOT, "src", "agent", "python", "profile_train_comm.py"))
    comm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(comm)

    class Shim:  # the part of profile_train_shim.S the watch reads
        active = True
        is_worker = False

        @staticmethod
        def steps_seen():
            return 1

        @staticmethod
        def note_error(where, e):
            print("shim error", where, e)

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    dist.init_process_group("gloo", rank=0, world_size=1)
    orig = dist.all_reduce

    def model():
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(64, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
        return nn.parallel.DistributedDataParallel(m, bucket_cap_mb=0.1)

    builtin = model()
    torch_hook = model()  # torch's own Python equivalent of the builtin: what any Python comm hook costs
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    torch_hook.register_comm_hook(None, default_hooks.allreduce_hook)
    watch = comm.CommWatch(Shim, torch)
    watch.install()
    ours = model()
    x, y = torch.randn(16, 64), torch.randint(0, 10, (16,))
    t = torch.ones(1)

    def step(m):
        m.zero_grad()
        nn.functional.cross_entropy(m(x), y).backward()

    def inactive(fn):
        def call():
            Shim.active = False
            try:
                fn()
            finally:
                Shim.active = True
        return call

    cases = [
        ("all_reduce sync, original", lambda: orig(t), 1000),
        ("all_reduce sync, wrapped", lambda: dist.all_reduce(t), 1000),
        ("all_reduce async+wait, original", lambda: orig(t, async_op=True).wait(), 1000),
        ("all_reduce async+wait, wrapped", lambda: dist.all_reduce(t, async_op=True).wait(), 1000),
        ("DDP step, builtin all-reduce", lambda: step(builtin), 200),
        ("DDP step, torch's allreduce_hook", lambda: step(torch_hook), 200),
        ("DDP step, our hook recording", lambda: step(ours), 200),
        ("DDP step, our hook, shim inactive", inactive(lambda: step(ours)), 200),
    ]
    for _, fn, _n in cases:
        for _ in range(20):
            fn()
    best = {name: float("inf") for name, _, _ in cases}
    for _ in range(reps):
        for name, fn, n in cases:
            t0 = time.process_time_ns()
            for _ in range(n):
                fn()
            best[name] = min(best[name], (time.process_time_ns() - t0) / n / 1000.0)
        del watch.instances[:]
    print("\nper collective, one process (gloo, world size 1), process CPU time, min over %d blocks:" % reps)
    for name, _, _ in cases:
        print("  %-36s %9.1f us" % (name, best[name]))
    print("  wrapper, sync:   +%.1f us per call" % (
        best["all_reduce sync, wrapped"] - best["all_reduce sync, original"]))
    print("  wrapper, async:  +%.1f us per call (a completion callback on the work's future)" % (
        best["all_reduce async+wait, wrapped"] - best["all_reduce async+wait, original"]))
    print("  DDP step: our hook recording +%.1f us, of which the Python hook and its extra multiplication pass "
          "+%.1f us (4 collectives recorded per step: 2 buckets, 2 buffer broadcasts)" % (
              best["DDP step, our hook recording"] - best["DDP step, builtin all-reduce"],
              best["DDP step, our hook, shim inactive"] - best["DDP step, builtin all-reduce"]))
    print("  DDP step: torch's allreduce_hook (no shim) +%.1f us over the builtin" % (
        best["DDP step, torch's allreduce_hook"] - best["DDP step, builtin all-reduce"]))
    dist.destroy_process_group()


def main():
    if "--child-micro" in sys.argv:
        micro(int(sys.argv[sys.argv.index("--child-micro") + 1]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="folder of the profile-train binary")
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--no-micro", action="store_true")
    ap.add_argument("--micro-reps", type=int, default=9)
    args = ap.parse_args()
    binary = os.path.join(os.path.abspath(args.build), "profile-train")
    torchrun = os.path.join(os.path.dirname(os.path.abspath(args.python)), "torchrun")
    for path in (binary, torchrun):
        if not os.path.exists(path):
            sys.exit("missing: " + path)
    res = {"on": [], "off": []}
    with tempfile.TemporaryDirectory(prefix="bench_comm_") as work:
        for i in range(args.pairs):
            for mode in ("on", "off"):
                res[mode].append(one_run(binary, torchrun, work, mode, i, args))
                cpu, wall, n = res[mode][-1]
                print("pair %d %-3s cpu %.3f ms/step  wall %.3f ms/step  instances recorded %d" % (
                    i, mode, cpu, wall, n), flush=True)
    print("\nDDP gloo loop, 2 ranks, %d steps (%d warm-up), %d interleaved pairs; figures: mean over the ranks" % (
        args.steps, args.warmup, args.pairs))
    print("%-6s %14s %15s" % ("mode", "cpu-ms/step", "wall-ms/step"))
    med = {}
    for mode in ("off", "on"):
        med[mode] = (statistics.median(r[0] for r in res[mode]), statistics.median(r[1] for r in res[mode]))
        print("%-6s %14.3f %15.3f" % (mode, med[mode][0], med[mode][1]))
    pair_cpu = [a[0] / b[0] for a, b in zip(res["on"], res["off"])]
    pair_wall = [a[1] / b[1] for a, b in zip(res["on"], res["off"])]
    print("ratio on/off of the medians: cpu %.3fx  wall %.3fx" % (med["on"][0] / med["off"][0],
                                                                  med["on"][1] / med["off"][1]))
    print("median of the per-pair ratios: cpu %.3fx  wall %.3fx  (per pair cpu %s)" % (
        statistics.median(pair_cpu), statistics.median(pair_wall), ", ".join("%.3f" % x for x in pair_cpu)))
    per_step = statistics.median(r[2] for r in res["on"]) / 2.0 / args.steps
    print("collectives recorded per rank per step (on): %.1f; extra cpu per collective (medians): %.1f us" % (
        per_step, (med["on"][0] - med["off"][0]) * 1e3 / per_step if per_step else float("nan")))
    print("runs: " + json.dumps({m: [[round(x, 3) for x in r[:2]] for r in v] for m, v in res.items()}))
    if not args.no_micro:
        sys.stdout.flush()
        subprocess.run([args.python, os.path.abspath(__file__), "--child-micro", str(args.micro_reps)], check=True)


if __name__ == "__main__":
    main()
