"""A GAN-style loop with two optimizers (dcgan) and nanoGPT-style parameter groups (decay 0.1 on matrices,
0.0 on biases and norms, the optimizer default left at 0.01). Used by tests/agent under `profile-train run`."""
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
gen = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
disc = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.ReLU(), nn.Linear(32, 1))
decay = [p for p in gen.parameters() if p.dim() >= 2]
no_decay = [p for p in gen.parameters() if p.dim() < 2]
opt_g = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=2e-4)
opt_d = torch.optim.Adam(disc.parameters(), lr=1e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
for step in range(6):
    real = torch.randn(32, 16)
    fake = gen(torch.randn(32, 8))
    opt_d.zero_grad()
    loss_d = bce(disc(real), torch.ones(32, 1)) + bce(disc(fake.detach()), torch.zeros(32, 1))
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    loss_g = bce(disc(fake), torch.ones(32, 1))
    loss_g.backward()
    opt_g.step()
print("done")
