"""An ordinary training script that follows the linear learning-rate scaling rule: the learning rate grows with
the DataLoader's batch size (lr = 0.05 x batch_size / 16), as many scripts do. Each batch carries a fixed cost
(a collate that sleeps 20 ms, standing in for per-batch I/O), so a larger batch is faster per sample. On this
least-squares problem (the largest Hessian eigenvalue is about 18) lr = 0.05 is stable and lr = 0.2 (batch 64)
diverges: `profile-train tune` must see that the faster batch size changes the loss and not report it as the
winner. The data are deterministic (seeded), so repeated runs of one configuration repeat their loss."""
import os
import time

import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    n, d = 8192, 16
    scales = torch.linspace(0.5, 3.0, d)            # features of different scale: an ill-conditioned problem
    x = torch.randn(n, d) * scales
    w_true = torch.randn(d, 1)
    y = x @ w_true + 0.1 * torch.randn(n, 1)

    def collate(items):
        time.sleep(0.02)                              # a fixed cost per batch
        return torch.stack([a for a, _ in items]), torch.stack([b for _, b in items])

    # LR_TRAIN_SEED=random: the model's initialization and a shuffled batch order differ from run to run (the
    # false-alarm benchmark, bench/tune/guard_false_alarm.sh); unset: every run repeats the same loss.
    random_runs = os.environ.get("LR_TRAIN_SEED") == "random"
    if random_runs:
        torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=random_runs, collate_fn=collate)
    model = torch.nn.Linear(d, 1)
    lr = 0.05 * loader.batch_size / 16                # the linear scaling rule
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    steps = int(os.environ.get("LR_TRAIN_STEPS", "24"))
    for step, (xb, yb) in enumerate(loader):
        if step >= steps:
            break
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
