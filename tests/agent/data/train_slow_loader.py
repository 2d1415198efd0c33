"""A small, real PyTorch training loop whose Dataset is slow (time.sleep per sample).

With --workers 0 the step waits on data most of the time (input-bound); with --workers 2 the two worker
processes load batches while the model trains, so the wait mostly disappears. Used by tests/agent and
bench/agent under `profile-train run`; it has no profile-train code in it.
"""
import argparse
import os
import signal
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    def __init__(self, n, dim, sleep_s):
        self.n, self.dim, self.sleep_s = n, dim, sleep_s
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, dim, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.sleep_s)  # stands for decoding / augmentation work
        return self.x[i], self.y[i]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--sample-ms", type=float, default=1.5)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--crash-after", type=int, default=-1, help="SIGSEGV itself after this many steps")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--accumulate", type=int, default=1, help="micro-batches per optimizer step")
    p.add_argument("--break-after", type=int, default=-1, help="leave the loop after this many steps")
    p.add_argument("--teardown-s", type=float, default=0.0, help="seconds of work after the loop (checkpointing)")
    p.add_argument("--exit-code", type=int, default=0, help="exit status once training is done")
    args = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    dim = 256
    ds = SlowDataset(args.steps * args.accumulate * args.batch_size, dim, args.sample_ms / 1000.0)
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(dim, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    step = 0
    warm = 5  # steady-state timing starts after these steps (start-up work, worker spawn, first-use costs)
    t0 = time.perf_counter()
    c0 = time.process_time()
    for _ in range(args.epochs):
        for i, (x, y) in enumerate(loader):
            if i % args.accumulate == 0:
                opt.zero_grad()
            loss = loss_fn(model(x), y)
            (loss / args.accumulate).backward()
            if (i + 1) % args.accumulate != 0:
                continue
            opt.step()
            step += 1
            if step == warm:
                t0, c0 = time.perf_counter(), time.process_time()
            if step == args.crash_after:
                os.kill(os.getpid(), signal.SIGSEGV)
            if step == args.break_after:
                break
    dt = time.perf_counter() - t0
    time.sleep(args.teardown_s)
    cpu = time.process_time() - c0  # this process's CPU time (all threads), immune to waiting for a core
    timed = step - warm if step > warm else max(step, 1)
    print("trained %d steps; after the first %d: %.3f s (%.2f ms/step, %.2f cpu-ms/step), final loss %.4f" % (
        step, warm, dt, 1000 * dt / timed, 1000 * cpu / timed, loss.item()))
    if args.exit_code:
        sys.exit(args.exit_code)


if __name__ == "__main__":
    main()
