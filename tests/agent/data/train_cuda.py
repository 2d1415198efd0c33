"""A small, real CUDA training loop (conv net on random images) for the GPU capture check.
Batches come from a DataLoader on the host, so each step copies them host-to-device: pageable memory by
default, pinned with --pin-memory. No profile-train code in it. `--device cpu` runs the same loop without a GPU
(the dry run of bench/gpu/ on a machine without one)."""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--pin-memory", action="store_true")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    args = p.parse_args()
    if args.device == "cuda":
        assert torch.cuda.is_available(), "this check needs a GPU"
    dev = torch.device(args.device)
    n = args.steps * args.batch_size
    ds = TensorDataset(torch.randn(n, 3, 64, 64), torch.randint(0, 10, (n,)))
    loader = DataLoader(ds, batch_size=args.batch_size, pin_memory=args.pin_memory, num_workers=args.workers)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(64, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    steps = 0
    for x, y in loader:
        x = x.to(dev, non_blocking=args.pin_memory)
        y = y.to(dev, non_blocking=args.pin_memory)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        steps += 1
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print("trained %d steps in %.3f s (%.2f ms/step) on %s, final loss %.4f" % (
        steps, dt, 1000 * dt / max(steps, 1),
        torch.cuda.get_device_name() if dev.type == "cuda" else "cpu", loss.item()))


if __name__ == "__main__":
    main()
