"""DDP on CPU (gloo) started by the script's own launcher, as PyTorch Lightning's `devices=2` does without
torchrun: the first process is rank 0 and starts the other ranks as copies of itself with LOCAL_RANK set;
RANK is never in any process's environment. Used by tests/agent under `profile-train run`."""
import argparse
import os
import socket
import subprocess
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlowDataset(torch.utils.data.Dataset):
    def __init__(self, inner, sleep_s):
        self.inner, self.sleep_s = inner, sleep_s

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        time.sleep(self.sleep_s)
        return self.inner[i]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--slow-rank", type=int, default=-1, help="this rank's samples take --sample-ms each")
    p.add_argument("--sample-ms", type=float, default=3.0)
    p.add_argument("--every-rank-ms", type=float, default=0.0, help="every rank's samples take this long")
    p.add_argument("--cores", type=int, default=0, help="pin the job to this many of its cores (0: as started)")
    args = p.parse_args()
    if args.cores > 0:  # before the other ranks start: they inherit the mask
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.cores])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    children = []
    if local_rank == 0:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(free_port()))
        for r in range(1, args.devices):
            env = dict(os.environ, LOCAL_RANK=str(r), NODE_RANK="0")
            children.append(subprocess.Popen([sys.executable] + sys.argv, env=env))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://%s:%s" % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]),
                            rank=local_rank, world_size=args.devices)
    g = torch.Generator().manual_seed(local_rank)
    ds = TensorDataset(torch.randn(args.steps * 8, 32, generator=g), torch.randint(0, 4, (args.steps * 8,), generator=g))
    if local_rank == args.slow_rank:
        ds = SlowDataset(ds, args.sample_ms / 1000.0)
    elif args.every_rank_ms > 0:
        ds = SlowDataset(ds, args.every_rank_ms / 1000.0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    steps = 0
    for x, y in DataLoader(ds, batch_size=8):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        steps += 1
    print("rank %d: %d steps" % (dist.get_rank(), steps), flush=True)
    dist.destroy_process_group()
    rc = 0
    for c in children:
        rc |= c.wait()
    sys.exit(rc)


if __name__ == "__main__":
    main()
