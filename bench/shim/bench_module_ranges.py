#!/usr/bin/env python3
"""Cost of the shim's per-module ranges (PROFILE_TRAIN_MODULE_RANGES) on a real torch model on the CPU.

One benchmark run measures, interleaved (A B C D A B C D ...: a slow period of a shared machine hits every
mode), the same training loop under `profile-train run` with
  off       no module ranges
  forward   PROFILE_TRAIN_MODULE_RANGES=DEPTH            forward ranges
  fwd+bwd   PROFILE_TRAIN_MODULE_RANGES=DEPTH,backward   forward and backward ranges (Node pre-hooks)
  full      forward ranges + no-op full backward hooks on the same modules (register_full_backward_pre_hook /
            register_full_backward_hook: the mechanism the backward ranges avoid; its hooks do nothing here, so
            this is a lower bound of its cost)
and prints, per mode, the median per-step time (process CPU time, immune to waiting for a core; wall time too),
the overhead per module per step in us against `off` (and `fwd+bwd` / `full` against `forward`: the backward
part alone), and the ratio against `off`.

The model: an embedding Linear, BLOCKS pre-norm residual MLP blocks (LayerNorm, Linear, GELU, Linear), a head;
DEPTH 3 puts a range on every one of them (2 + 5 x BLOCKS modules). One torch thread.

Usage: bench/shim/bench_module_ranges.py [--build DIR] [--python PY] [--repeats N] [--steps N] [--blocks N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODES = [("off", "", False), ("forward", "3", False), ("fwd+bwd", "3,backward", False), ("full", "3", True)]
WARMUP = 20


def child(args):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.norm = nn.LayerNorm(dim)
            self.fc1 = nn.Linear(dim, 2 * dim)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(2 * dim, dim)

        def forward(self, x):
            return x + self.fc2(self.act(self.fc1(self.norm(x))))

    class Net(nn.Module):
        def __init__(self, dim, hidden, blocks):
            super().__init__()
            self.embed = nn.Linear(dim, hidden)
            self.blocks = nn.Sequential(*[Block(hidden) for _ in range(blocks)])
            self.head = nn.Linear(hidden, 10)

        def forward(self, x):
            return self.head(self.blocks(self.embed(x)))

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net(64, args.hidden, args.blocks)
    if args.full_hooks:
        import warnings
        warnings.simplefilter("ignore")  # full hooks warn on modules with in-place ops; not measured here
        for qual, m in model.named_modules():
            if qual and qual.count(".") < 3:
                m.register_full_backward_pre_hook(lambda *a: None)
                m.register_full_backward_hook(lambda *a: None)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(args.batch_size, 64)
    y = torch.randint(0, 10, (args.batch_size,))
    cpu, wall = [], []
    for _ in range(WARMUP + args.steps):
        c0, w0 = time.process_time(), time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    with open(args.result, "w") as fh:
        json.dump({"cpu_ms": 1e3 * statistics.median(cpu[WARMUP:]),
                   "wall_ms": 1e3 * statistics.median(wall[WARMUP:])}, fh)


def run_once(args, tmp, i, mode):
    name, spec, full = mode
    out = os.path.join(tmp, "%d-%s" % (i, name.replace("+", "_")))
    result = out + ".json"
    env = dict(os.environ)
    env.pop("PROFILE_TRAIN_MODULE_RANGES", None)
    if spec:
        env["PROFILE_TRAIN_MODULE_RANGES"] = spec
    cmd = [os.path.join(args.build, "profile-train"), "run", "--out", out, "--", args.python, __file__, "--child",
           "--result", result, "--steps", str(args.steps), "--blocks", str(args.blocks), "--hidden",
           str(args.hidden), "--batch-size", str(args.batch_size)] + (["--full-hooks"] if full else [])
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    with open(result) as fh:
        r = json.load(fh)
    with open(os.path.join(out, "report.json")) as fh:
        mr = json.load(fh).get("facts", {}).get("capture", {}).get("module_ranges", {})
    r["modules"] = mr.get("modules", 0)
    r["backward_ranges_per_step"] = mr.get("backward_ranges", 0) / float(WARMUP + args.steps)
    return r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--blocks", type=int, default=8)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--child", action="store_true")
    p.add_argument("--full-hooks", action="store_true")
    p.add_argument("--result")
    args = p.parse_args()
    if args.child:
        return child(args)
    runs = {m[0]: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for mode in MODES:
                runs[mode[0]].append(run_once(args, tmp, i, mode))
    med = {k: {f: statistics.median(r[f] for r in v) for f in ("cpu_ms", "wall_ms")} for k, v in runs.items()}
    modules = max(r["modules"] for r in runs["forward"])
    print("model: embed + %d residual MLP blocks + head, hidden %d, batch %d; depth 3 = %d modules; %d steps x %d "
          "repeats, interleaved" % (args.blocks, args.hidden, args.batch_size, modules, args.steps, args.repeats))
    print("backward ranges per step (fwd+bwd): %.1f" % statistics.median(r["backward_ranges_per_step"]
                                                                        for r in runs["fwd+bwd"]))
    print("%-8s %14s %14s %18s %22s %10s" % ("mode", "cpu-ms/step", "wall-ms/step", "us/module/step",
                                           "of which backward", "ratio"))
    off = med["off"]["cpu_ms"]
    for name, _, _ in MODES:
        ms = med[name]["cpu_ms"]
        per_module = 1e3 * (ms - off) / modules if name != "off" else 0.0
        bwd = 1e3 * (ms - med["forward"]["cpu_ms"]) / modules if name in ("fwd+bwd", "full") else None
        print("%-8s %14.3f %14.3f %18.1f %22s %9.3fx" % (name, ms, med[name]["wall_ms"], per_module,
                                                       "%.1f" % bwd if bwd is not None else "-", ms / off))
    print("cpu-ms/step of every run: " + json.dumps({k: [round(r["cpu_ms"], 3) for r in v] for k, v in runs.items()}))


if __name__ == "__main__":
    sys.exit(main())
