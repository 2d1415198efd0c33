"""A program that closes its stdout and stderr, then trains 12 steps and writes a line to each every step.

Those writes must fail (EBADF) under `profile-train run` exactly as without it: the capture agent must not take
fd 1 or 2 (issue 29, item 5). Exit 0 when every write failed, 3 when one landed somewhere.
"""
import os
import sys

os.close(1)
os.close(2)

import torch  # noqa: E402

STEPS = 12
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
failed = 0
for step in range(STEPS):
    x = torch.randn(16, 32)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    for fd in (1, 2):
        try:
            os.write(fd, b"step %d loss %.4f\n" % (step, loss.item()))
        except OSError:
            failed += 1
sys.exit(0 if failed == 2 * STEPS else 3)
