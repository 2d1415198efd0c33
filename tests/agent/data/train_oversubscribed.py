"""An oversubscribed CPU training loop, as a Lightning script with DataLoader(num_workers=2) and
torch.set_num_threads(2) on a two-core machine is: two intra-op threads and two worker processes share two
cores. An MLP on synthetic data, a few steps. Used by tests/agent under `profile-train run` (issue 23)."""
import argparse
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--cores", type=int, default=2, help="pin the process to this many of its cores")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    allowed = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, allowed[: args.cores])
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    n = args.steps * 32
    ds = TensorDataset(torch.randn(n, 256, generator=g), torch.randint(0, 10, (n,), generator=g))
    loader = DataLoader(ds, batch_size=32, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    steps = 0
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        steps += 1
    print("%d steps, %d threads, %d workers, %d cores" % (steps, torch.get_num_threads(), args.workers,
                                                         len(os.sched_getaffinity(0))))


if __name__ == "__main__":
    main()
