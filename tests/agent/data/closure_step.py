"""A training loop in PyTorch Lightning's style: forward and backward run inside optimizer.step(closure), as
Lightning's automatic optimization does (training_step, then backward, from the closure the optimizer calls).
A DataLoader feeds it. No profile-train code in it.
"""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = TensorDataset(torch.randn(a.steps * 32, 128), torch.randn(a.steps * 32, 1))
    for x, y in DataLoader(data, batch_size=32):
        def closure():
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss

        opt.step(closure)


if __name__ == "__main__":
    main()
