"""A training loop run from threads other than the main one, as Ray Train runs train_loop_per_worker and as some
launchers do: `--threads 1` trains in one worker thread, `--threads 2` in two at once, each its own model,
DataLoader and optimizer. The main thread only starts and joins them. No profile-train code in it.
"""
import argparse
import threading
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __init__(self, n, sample_ms):
        self.n, self.sample_ms = n, sample_ms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.sample_ms / 1000.0)
        return torch.randn(64), torch.randn(1)


def train_loop_per_worker(seed, steps, batch, sample_ms):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Slow(steps * batch, sample_ms), batch_size=batch, num_workers=0)
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--sample-ms", type=float, default=1.0)
    a = ap.parse_args()
    workers = [threading.Thread(target=train_loop_per_worker, args=(k, a.steps, a.batch, a.sample_ms),
                                name="train-%d" % k) for k in range(a.threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


if __name__ == "__main__":
    main()
