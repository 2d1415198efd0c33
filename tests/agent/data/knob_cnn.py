"""A small image classifier in the style of pytorch/examples' mnist / cifar scripts: a Conv2d + BatchNorm network,
a TensorDataset behind a DataLoader, SGD with momentum, cross-entropy. Used by the knob override tests
(tests/agent/knob_overrides_test.cpp): the program itself sets none of the knobs. KNOB_STEPS (default 12)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def main():
    torch.manual_seed(0)
    steps = int(os.environ.get("KNOB_STEPS", "12"))
    data = TensorDataset(torch.randn(32 * steps, 3, 32, 32), torch.randint(0, 10, (32 * steps,)))
    loader = DataLoader(data, batch_size=32, shuffle=True)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()
    for x, y in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    print("final loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
