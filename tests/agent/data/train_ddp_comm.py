"""A small DistributedDataParallel loop on CPU (gloo) with known collectives, for `torchrun --nproc-per-node N`
(tests/agent/comm_facts_e2e.py, bench/shim/bench_comm_overhead.py).

Per step: DDP's buffer broadcast before forward (the model has a BatchNorm: broadcast_buffers), its gradient
buckets in backward (bucket_cap_mb small: several buckets), and three direct collectives: an
all_gather_into_tensor of the loss, a broadcast of a Long tensor from rank 0 and an async all_reduce (waited).
No DataLoader: a step ends at the optimizer step. Everything is seeded: the same run gives the same bits.

--out FILE (JSON, per rank: FILE.rank<R>.json): each step's loss (float.hex), the bucket sizes DDP used in that
step's backward (reducer._get_zeros_like_grad_buckets after it: numel and dtype per bucket, in bucket order),
how many times the user's comm hook ran, a SHA-256 of the final parameters, and the process CPU time and wall time
per step after --warmup steps.
--hook none | user | fp16: no comm hook, a Python hook registered after DDP's construction (divide + async
all_reduce, like allreduce_hook, counting its calls), or the builtin FP16_COMPRESS."""
import argparse
import gc
import hashlib
import json
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def user_hook(state, bucket):
    state["calls"] += 1
    t = bucket.buffer()
    t.div_(dist.get_world_size())
    return dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--bucket-cap-mb", type=float, default=0.1)
    p.add_argument("--hook", choices=("none", "user", "fp16"), default="none")
    p.add_argument("--bucket-view", action="store_true", help="gradient_as_bucket_view=True")
    p.add_argument("--out", default="")
    p.add_argument("--warmup", type=int, default=1, help="steps before the timed ones (cpu_ms / wall_ms per step)")
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    h = args.hidden
    model = nn.Sequential(nn.Linear(64, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                          nn.Linear(h, 10))
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb, gradient_as_bucket_view=args.bucket_view)
    state = {"calls": 0}
    if args.hook == "user":
        ddp.register_comm_hook(state, user_hook)
    elif args.hook == "fp16":
        ddp._register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    losses, buckets = [], []
    cpu0 = wall0 = None
    for step in range(args.steps):
        if step == min(args.warmup, args.steps - 1):
            cpu0, wall0 = time.process_time(), time.perf_counter()
        g = torch.Generator().manual_seed(1000 * step + rank)
        x = torch.randn(args.batch_size, 64, generator=g)
        y = torch.randint(0, 10, (args.batch_size,), generator=g)
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()
        buckets.append([[int(b.buffer().numel()), str(b.buffer().dtype).replace("torch.", "")]
                        for b in ddp.reducer._get_zeros_like_grad_buckets()])
        opt.step()
        # Direct collectives: the losses of all ranks, a Long from rank 0, an async all_reduce.
        gathered = torch.empty(world, dtype=torch.float32)
        dist.all_gather_into_tensor(gathered, loss.detach().reshape(1))
        token = torch.tensor([step * 7 + 1], dtype=torch.long) if rank == 0 else torch.zeros(1, dtype=torch.long)
        dist.broadcast(token, src=0)
        counts = torch.ones(32, dtype=torch.float64)
        dist.all_reduce(counts, async_op=True).wait()
        losses.append(float(loss.detach()).hex())
    timed = args.steps - min(args.warmup, args.steps - 1)
    cpu_ms = (time.process_time() - cpu0) * 1e3 / timed if timed > 0 else None
    wall_ms = (time.perf_counter() - wall0) * 1e3 / timed if timed > 0 else None
    digest = hashlib.sha256()
    for prm in ddp.parameters():
        digest.update(prm.detach().contiguous().numpy().tobytes())
    if args.out:
        with open("%s.rank%d.json" % (args.out, rank), "w") as fh:
            json.dump({"rank": rank, "world": world, "losses": losses, "buckets": buckets,
                       "hook_calls": state["calls"], "params_sha256": digest.hexdigest(),
                       "cpu_ms_per_step": cpu_ms, "wall_ms_per_step": wall_ms}, fh)
    print("rank %d: %d steps, last loss %s" % (rank, args.steps, losses[-1] if losses else None))
    # Both ranks done, and DDP's reducer (which holds the group) gone, before the group is torn down: without
    # these gloo aborted a rank at exit now and then ("terminate called without an active exception").
    dist.barrier()
    del ddp, opt
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
