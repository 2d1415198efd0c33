"""An ordinary, unmodified PyTorch training script with an input-bound DataLoader: num_workers=0 and a
Dataset whose __getitem__ is slow (simulated decoding/augmentation). `profile-train tune` must find
num_workers > 0 through the Python shim's overrides without any edit to this file."""
import os
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, index):
        time.sleep(0.002)  # 2 ms of "decoding" per sample, on the CPU
        g = torch.Generator().manual_seed(index)
        return torch.randn(32, generator=g), index % 4


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SlowDataset(), batch_size=16, shuffle=False, num_workers=0)
    steps = int(os.environ.get("SLOW_TRAIN_STEPS", "30"))
    for step, (x, y) in enumerate(loader):
        if step >= steps:
            break
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
