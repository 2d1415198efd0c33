"""A known model for the memory facts (tests/agent/memory_budget_e2e_test.cpp): an MLP trained with AdamW over a
DataLoader on the CPU. No profile-train code in it.

--leak          keep every step's loss tensor, with its autograd graph, in a list (a planted leak: each step's
                activations stay allocated)
--reference F   after the loop, run one more forward under torch.profiler(profile_memory=True) and write to F
                the bytes that forward allocated and still holds at its end (the profiler's CPU [memory]
                events: the sum of the operators' self memory, allocations minus frees), i.e. the activations
                kept for backward as the profiler counts them; then finish that step unprofiled
--amsgrad       AdamW(amsgrad=True): a third moment buffer per parameter
"""
import argparse
import json

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--inputs", type=int, default=128)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--leak", action="store_true")
    p.add_argument("--amsgrad", action="store_true")
    p.add_argument("--reference", default="")
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    dims = [args.inputs] + [args.hidden] * args.layers
    mods = []
    for a, b in zip(dims, dims[1:]):
        mods += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*mods, nn.Linear(dims[-1], 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, amsgrad=args.amsgrad)
    n = args.batch * args.steps
    loader = DataLoader(TensorDataset(torch.randn(n, args.inputs), torch.randint(0, 10, (n,))),
                        batch_size=args.batch)
    loss_fn = nn.CrossEntropyLoss()
    kept = []
    for x, y in loader:
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward(retain_graph=args.leak)
        opt.step()
        if args.leak:
            kept.append(loss)
    if args.reference:
        x, y = next(iter(loader))
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            loss = loss_fn(model(x), y)
        held = sum(e.self_cpu_memory_usage for e in prof.key_averages())
        opt.zero_grad()
        loss.backward()
        opt.step()
        with open(args.reference, "w") as fh:
            json.dump({"forward_held_bytes": int(held), "batch_size": int(x.shape[0])}, fh)
    print("done", len(kept))


if __name__ == "__main__":
    main()
