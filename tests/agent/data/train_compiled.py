"""A compiled CPU training loop with two graph breaks in forward: a data-dependent `.item()` branch and a `print`
(tests/agent/compile_e2e.py). Modes:
  train_compiled.py [--steps N]                 plain loop (under `profile-train run`)
  train_compiled.py --kineto FILE [--steps N]   the same loop under torch.profiler, Kineto trace written to FILE
  train_compiled.py --explain FILE              torch._dynamo.explain's break reasons as JSON lines {file, line, reason}
  --no-breaks                                   the same model written without the breaks (torch.where, no print)
  --shapes N                                    the batch size cycles through N sizes (dynamic=False): a recompile
                                                for each new shape, in the steady steps too
  --mode MODE                                   torch.compile(mode=MODE), e.g. reduce-overhead (on the CPU it
                                                compiles, and CUDA graphs are skipped)
"""
import argparse
import json
import os

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, breaks=True):
        super().__init__()
        self.breaks = breaks
        self.a = nn.Linear(64, 128)
        self.b = nn.Linear(128, 128)
        self.c = nn.Linear(128, 10)

    def forward(self, x):
        h = torch.relu(self.a(x))
        if not self.breaks:
            h = torch.where(h.sum() > 0, h * 2, h)
            return self.c(torch.tanh(self.b(h)))
        if h.sum().item() > 0:  # BREAK-ITEM
            h = h * 2
        print("forward", end="\r")  # BREAK-PRINT
        h = torch.tanh(self.b(h))
        return self.c(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--kineto")
    ap.add_argument("--explain")
    ap.add_argument("--no-breaks", action="store_true")
    ap.add_argument("--shapes", type=int, default=1)
    ap.add_argument("--mode")
    ap.add_argument("--timing", help="write {cpu_s, wall_s, steps} of the steps after --timing-warmup as JSON here")
    ap.add_argument("--timing-warmup", type=int, default=5)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net(breaks=not args.no_breaks)
    x = torch.randn(256, 64)
    y = torch.randint(0, 10, (256,))
    if args.explain:
        out = torch._dynamo.explain(model)(x)
        with open(args.explain, "w") as f:
            for r in out.break_reasons:
                frame = r.user_stack[-1] if r.user_stack else None
                f.write(json.dumps({"file": os.path.basename(frame.filename) if frame else None,
                                    "line": frame.lineno if frame else None,
                                    "reason": r.reason.splitlines()[0]}) + "\n")
        return
    kwargs = {}
    if args.mode:
        kwargs["mode"] = args.mode
    if args.shapes > 1:
        kwargs["dynamic"] = False  # every new batch size is a new graph: planted recompiles
    cmodel = torch.compile(model, **kwargs)
    sizes = [256 - 32 * i for i in range(max(1, args.shapes))]
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    count = [0]

    def step():
        n = sizes[count[0] % len(sizes)]
        count[0] += 1
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(cmodel(x[:n]), y[:n])
        loss.backward()
        opt.step()

    if not args.kineto:
        import time
        t0 = c0 = None
        for i in range(args.steps):
            if i == args.timing_warmup:
                t0, c0 = time.monotonic(), time.process_time()
            step()
        if args.timing and t0 is not None:
            with open(args.timing, "w") as f:
                json.dump({"cpu_s": time.process_time() - c0, "wall_s": time.monotonic() - t0,
                           "steps": args.steps - args.timing_warmup}, f)
        return
    from torch.profiler import ProfilerActivity, profile, schedule
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=0, warmup=3, active=args.steps - 3, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(args.kineto)) as prof:
        for _ in range(args.steps):
            step()
            prof.step()


if __name__ == "__main__":
    main()
