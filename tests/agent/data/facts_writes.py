"""Checks where and how often the shim writes its facts file (issue 29, item 21), run directly with the shim on
PYTHONPATH and PROFILE_TRAIN_OUT set (no agent needed): os.replace is wrapped before torch is imported, a loop
trains for about --seconds, then the script prints one JSON line: writes during training on the training thread
(must be 0), writes during training in all (write on change: a handful at most, not one a second) and the
steps_seen of the file written at exit.
"""
import argparse
import atexit
import json
import os
import sys
import threading
import time

calls = []
_replace = os.replace


def replace(src, dst, *args, **kwargs):
    calls.append((threading.current_thread() is threading.main_thread(), time.monotonic(), str(dst)))
    return _replace(src, dst, *args, **kwargs)


os.replace = replace
result = {}


def report():  # registered before torch's import: runs after the shim's own exit handler (atexit is LIFO)
    path = os.path.join(os.environ["PROFILE_TRAIN_OUT"], "facts-%d.json" % os.getpid())
    with open(path) as fh:
        result["steps_seen_at_exit"] = json.load(fh)["capture"]["steps_seen"]
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


atexit.register(report)

import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=3.5)
a = ap.parse_args()

model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.randn(64, 16), torch.randn(64, 1)), batch_size=8)
t0 = time.monotonic()
steps = 0
while time.monotonic() - t0 < a.seconds:
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        time.sleep(0.01)
training_end = time.monotonic()
during = [c for c in calls if "facts-" in c[2] and c[1] <= training_end]
result.update({"steps": steps, "writes_during_training": len(during),
               "on_training_thread": sum(1 for c in during if c[0])})
