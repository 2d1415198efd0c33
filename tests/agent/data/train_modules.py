"""A small, real PyTorch training loop over a model with nested modules and residual connections (an embedding
Linear, two pre-norm residual MLP blocks, a head), for the shim's per-module ranges (PROFILE_TRAIN_MODULE_RANGES).
--checkpoint recomputes the second block in backward (torch.utils.checkpoint, non-reentrant): its forward runs
again inside the backward pass and stops early. Warnings are always shown, so a test sees any the shim causes.
It has no profile-train code in it.
"""
import argparse
import warnings

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


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
    def __init__(self, dim, hidden, use_checkpoint):
        super().__init__()
        self.embed = nn.Linear(dim, hidden)
        self.blocks = nn.Sequential(Block(hidden), Block(hidden))
        self.head = nn.Linear(hidden, 10)
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        h = self.embed(x)
        if self.use_checkpoint:
            h = self.blocks[0](h)
            h = checkpoint(self.blocks[1], h, use_reentrant=False)
        else:
            h = self.blocks(h)
        return self.head(h)


def main():
    warnings.simplefilter("always")
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--checkpoint", action="store_true")
    args = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    dim = 32
    model = Net(dim, args.hidden, args.checkpoint)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(args.steps, args.batch_size, dim)
    y = torch.randint(0, 10, (args.steps, args.batch_size))
    for step in range(args.steps):
        opt.zero_grad()
        loss = loss_fn(model(x[step]), y[step])
        loss.backward()
        opt.step()
    print("loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
