"""A Lightning-like program: a LightningModule look-alike (training_step, configure_optimizers) driven by a small
Trainer look-alike whose fit() loop owns the DataLoader iteration, backward, optimizer step and zero_grad, as
Lightning's automatic optimization does. An MLP regressor, Adam. Used by the knob override tests
(tests/agent/knob_overrides_test.cpp): the program itself sets none of the knobs. KNOB_STEPS (default 12)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class LitRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class Trainer:
    def __init__(self, max_steps):
        self.max_steps = max_steps
        self.global_step = 0

    def fit(self, module, loader):
        opt = module.configure_optimizers()
        module.train()
        while self.global_step < self.max_steps:
            for batch_idx, batch in enumerate(loader):
                loss = module.training_step(batch, batch_idx)
                opt.zero_grad()
                loss.backward()
                opt.step()
                self.global_step += 1
                if self.global_step >= self.max_steps:
                    break
        return loss.item()


def main():
    torch.manual_seed(0)
    steps = int(os.environ.get("KNOB_STEPS", "12"))
    x = torch.randn(1024, 64)
    y = x[:, :1] * 2 + 0.1 * torch.randn(1024, 1)
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    print("final loss %.4f" % Trainer(steps).fit(LitRegressor(), loader))


if __name__ == "__main__":
    main()
