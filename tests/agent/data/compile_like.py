"""A training loop whose first step is much slower than the rest, as under torch.compile (the first call
compiles; here a stand-in for the compiler's work runs in the first forward so the test does not depend on a C
compiler). nanoGPT-style batches from a tensor (get_batch, no DataLoader) and AdamW. No profile-train code in it.
"""
import argparse
import time

import torch
from torch import nn


class Compiled(nn.Module):
    """First call: 'compile' (--compile-s of work), then run the plain module."""

    def __init__(self, inner, compile_s):
        super().__init__()
        self.inner, self.compile_s, self.compiled = inner, compile_s, False

    def forward(self, x):
        if not self.compiled:
            deadline = time.perf_counter() + self.compile_s
            while time.perf_counter() < deadline:  # busy, as a compiler is
                pass
            self.compiled = True
        return self.inner(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--compile-s", type=float, default=1.0)
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = torch.randn(4096, 256)
    inner = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256))
    model = Compiled(inner, args.compile_s)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def get_batch():
        ix = torch.randint(0, data.size(0) - 32, (1,)).item()
        return data[ix : ix + 32]

    for it in range(args.steps):
        x = get_batch()
        loss = (model(x) - x).pow(2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    print("compile_like: %d steps" % args.steps)


if __name__ == "__main__":
    main()
