"""A CPU-bound training loop without a DataLoader (one torch thread, matrix products): its step time doubles when
other processes compete for the CPU. Its argument (a tuner placeholder) changes nothing, so every
configuration runs at the same speed: the load test (TuneLoad in e2e_test.cpp) plants a CPU hog during one side of
each pair and checks that tune claims no gain from it."""
import os
import sys

import torch


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(384, 384), torch.nn.ReLU(), torch.nn.Linear(384, 384))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    x = torch.randn(256, 384)
    for _ in range(int(os.environ.get("CPU_TRAIN_STEPS", "40"))):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
    del sys.argv  # the placeholder's value is not used


if __name__ == "__main__":
    main()
