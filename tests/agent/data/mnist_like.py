"""An image-classification script in the style of pytorch/examples mnist/main.py: train an epoch with a
DataLoader and Adadelta, then test() over the test loader (forwards only, no_grad), scheduler.step(), for
--epochs epochs. Synthetic 28x28 images stand in for MNIST. No profile-train code in it.
"""
import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(2304, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--train-batches", type=int, default=8)
    p.add_argument("--test-batches", type=int, default=5)
    p.add_argument("--test-sleep-ms", type=float, default=0.0, help="extra time per test batch (a slow metric)")
    args = p.parse_args()
    torch.manual_seed(1)
    torch.set_num_threads(1)
    bs = 32

    def data(nb):
        n = nb * bs
        return TensorDataset(torch.randn(n, 1, 28, 28), torch.randint(0, 10, (n,)))

    train_loader = DataLoader(data(args.train_batches), batch_size=bs, shuffle=True)
    test_loader = DataLoader(data(args.test_batches), batch_size=bs)
    model = Net()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    for epoch in range(1, args.epochs + 1):
        model.train()
        for batch_idx, (x, target) in enumerate(train_loader):
            optimizer.zero_grad()
            loss = F.nll_loss(model(x), target)
            loss.backward()
            optimizer.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, target in test_loader:
                for _ in range(3):  # the test set is larger than a training batch's work
                    output = model(x)
                correct += output.argmax(dim=1).eq(target).sum().item()
                if args.test_sleep_ms:
                    time.sleep(args.test_sleep_ms / 1000.0)
        print("epoch %d: test accuracy %d/%d" % (epoch, correct, len(test_loader.dataset)))
        scheduler.step()


if __name__ == "__main__":
    main()
