"""A small, real DistributedDataParallel training loop on CPU (gloo), for `torchrun --nproc-per-node 2`.
Each rank reads its shard of a slow Dataset; used by tests/agent under `profile-train run`."""
import argparse
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class SlowDataset(Dataset):
    def __init__(self, n, dim, sleep_s):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, dim, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.sleep_s = sleep_s

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(self.sleep_s)
        return self.x[i], self.y[i]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--sample-ms", type=float, default=2.0)
    p.add_argument("--slow-rank", type=int, default=-1, help="this rank's samples take 4x --sample-ms")
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    sample_ms = args.sample_ms * (4 if dist.get_rank() == args.slow_rank else 1)
    ds = SlowDataset(args.steps * args.batch_size * world, 64, sample_ms / 1000.0)
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=DistributedSampler(ds), num_workers=0)
    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    steps = 0
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        steps += 1
    print("rank %d: %d steps" % (dist.get_rank(), steps))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
