"""A character-level transformer LM in the style of nanoGPT's train.py: its own causal self-attention blocks,
batches sliced at random offsets out of one token tensor (get_batch; no DataLoader), AdamW with a decay and a
no-decay parameter group. Used by the knob override tests (tests/agent/knob_overrides_test.cpp, tests/tuner):
the program itself sets none of the knobs. KNOB_STEPS (default 12)."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

BLOCK, VOCAB, EMBD, HEADS, LAYERS, BATCH = 32, 65, 64, 4, 2, 8


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(EMBD, 3 * EMBD)
        self.c_proj = nn.Linear(EMBD, EMBD)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(EMBD, dim=2)
        q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(EMBD), CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(EMBD)
        self.mlp = nn.Sequential(nn.Linear(EMBD, 4 * EMBD), nn.GELU(), nn.Linear(4 * EMBD, EMBD))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, EMBD), nn.Embedding(BLOCK, EMBD)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(EMBD)
        self.lm_head = nn.Linear(EMBD, VOCAB, bias=False)

    def forward(self, idx, targets):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for b in self.blocks:
            x = b(x)
        logits = self.lm_head(self.ln_f(x))
        return logits, F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))


def main():
    torch.manual_seed(0)
    steps = int(os.environ.get("KNOB_STEPS", "12"))
    data = torch.randint(0, VOCAB, (20000,))

    def get_batch():
        ix = torch.randint(len(data) - BLOCK - 1, (BATCH,))
        x = torch.stack([data[i:i + BLOCK] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + BLOCK] for i in ix])
        return x, y

    model = GPT()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95))
    for it in range(steps):
        lr = 1e-3 * min(1.0, (it + 1) / 4) * 0.5 * (1 + math.cos(math.pi * it / steps))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch()
        _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    print("final loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
