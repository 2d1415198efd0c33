"""A word-language-model training script in the style of pytorch/examples word_language_model/main.py.

No torch.optim and no DataLoader: batches are slices of a batchified token tensor (get_batch), the model's own
zero_grad, a manual SGD update (p.data.add_(p.grad, alpha=-lr)); after each epoch an evaluation pass over the
validation data (forwards only, no_grad) and a checkpoint save (torch.save). Synthetic tokens stand in for the
corpus. No profile-train code in it.
"""
import argparse
import os
import tempfile
import time

import torch
from torch import nn


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, 1)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, data, hidden):
        output, hidden = self.rnn(self.encoder(data), hidden)
        return self.decoder(output).view(-1, self.decoder.out_features), hidden

    def init_hidden(self, bsz):
        w = next(self.parameters())
        return (w.new_zeros(1, bsz, self.rnn.hidden_size), w.new_zeros(1, bsz, self.rnn.hidden_size))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data[: nbatch * bsz].view(bsz, -1).t().contiguous()


def repackage_hidden(h):
    return tuple(v.detach() for v in h)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batches", type=int, default=10, help="training batches per epoch")
    p.add_argument("--bptt", type=int, default=20)
    p.add_argument("--save-s", type=float, default=0.3, help="extra seconds the checkpoint save takes")
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    ntokens, bsz, lr = 500, 16, 20.0
    train_data = batchify(torch.randint(0, ntokens, (args.batches * args.bptt * bsz + bsz,)), bsz)
    val_data = batchify(torch.randint(0, ntokens, (8 * args.bptt * 10 + 10,)), 10)
    model = RNNModel(ntokens, 64, 128)
    criterion = nn.NLLLoss()

    def get_batch(source, i):
        seq_len = min(args.bptt, len(source) - 1 - i)
        return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)

    def evaluate(data_source):
        model.eval()
        total = 0.0
        hidden = model.init_hidden(10)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, args.bptt):
                data, targets = get_batch(data_source, i)
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
                total += len(data) * criterion(torch.log_softmax(output, -1), targets).item()
        return total / (len(data_source) - 1)

    trained = 0
    best = None
    save = os.path.join(tempfile.mkdtemp(), "model.pt")
    for epoch in range(args.epochs):
        model.train()
        hidden = model.init_hidden(bsz)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            data, targets = get_batch(train_data, i)
            hidden = repackage_hidden(hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(torch.log_softmax(output, -1), targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for q in model.parameters():
                q.data.add_(q.grad, alpha=-lr)
            trained += 1
        val_loss = evaluate(val_data)
        if best is None or val_loss < best:
            with open(save, "wb") as f:
                torch.save(model, f)
            time.sleep(args.save_s)  # a large checkpoint's write
            best = val_loss
    print("manual_sgd_lm: %d training batches" % trained)


if __name__ == "__main__":
    main()
