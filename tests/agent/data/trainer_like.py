"""A training loop in the style of Hugging Face `Trainer` (transformers is not installed here; this stands in
for it in tests/agent/real_programs_test.cpp).

What matters for step detection is reproduced: the loader is wrapped the way accelerate's DataLoaderShard does
it, fetching batch k+1 before batch k is handed to the loop (prefetch); gradients are accumulated over
--accumulation micro-batches per optimizer step (loss / N, clip_grad_norm_, optimizer.step, lr_scheduler.step,
optimizer.zero_grad); the loop stops at --max-steps optimizer steps with the next batch already fetched.
No profile-train code in it.
"""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class PrefetchingLoader:
    """accelerate.data_loader.DataLoaderShard's iteration: always one batch ahead."""

    def __init__(self, loader):
        self.loader = loader

    def __iter__(self):
        it = iter(self.loader)
        try:
            current = next(it)
        except StopIteration:
            return
        while True:
            try:
                following = next(it)
            except StopIteration:
                yield current
                return
            yield current
            current = following


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--max-steps", type=int, default=12)
    p.add_argument("--accumulation", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--sample-ms", type=float, default=0.1, help="per-sample load time (tokenization stand-in)")
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    class Tokenized(TensorDataset):
        def __getitem__(self, i):
            time.sleep(args.sample_ms / 1000.0)
            return super().__getitem__(i)

    n = args.batch_size * args.accumulation * (args.max_steps + 2)
    ds = Tokenized(torch.randn(n, 128), torch.randint(0, 4, (n,)))
    loader = PrefetchingLoader(DataLoader(ds, batch_size=args.batch_size, shuffle=True))
    model = nn.Sequential(nn.Linear(128, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0 - s / args.max_steps)
    loss_fn = nn.CrossEntropyLoss()
    global_step = 0
    model.train()
    for epoch in range(1000):
        for step, (x, y) in enumerate(loader):
            loss = loss_fn(model(x), y) / args.accumulation
            loss.backward()
            if (step + 1) % args.accumulation == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                global_step += 1
                if global_step >= args.max_steps:
                    break
        if global_step >= args.max_steps:
            break
    print("trainer_like: %d optimizer steps, accumulation %d" % (global_step, args.accumulation))


if __name__ == "__main__":
    main()
