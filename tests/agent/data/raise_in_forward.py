"""A training step whose model raises in forward (a user bug): under `profile-train run` the traceback must show
the user's frames and torch's, not the shim's wrappers."""
import torch
from torch import nn


class Bad(nn.Module):
    def forward(self, x):
        raise ValueError("boom in forward")


model = nn.Sequential(nn.Linear(2, 2), Bad())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    model(torch.zeros(1, 2)).sum().backward()
    opt.step()
