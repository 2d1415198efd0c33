"""A GAN training loop in the style of pytorch/examples dcgan/main.py: per batch, the discriminator's update
(real and fake batches, two backward passes, optimizerD.step) and then the generator's (optimizerG.step) on the
same batch; every --save-every iterations a slow image dump (vutils.save_image stand-in). Synthetic images stand
in for the dataset. No profile-train code in it.
"""
import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--save-s", type=float, default=0.4)
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    nz, bs = 16, 32
    data = TensorDataset(torch.randn(args.iters * bs, 1, 16, 16))
    loader = DataLoader(data, batch_size=bs, shuffle=True)
    netD = nn.Sequential(nn.Conv2d(1, 16, 4, 2, 1), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(16 * 8 * 8, 1),
                         nn.Sigmoid())
    netG = nn.Sequential(nn.Linear(nz, 256), nn.ReLU(), nn.Linear(256, 256), nn.Tanh(), nn.Unflatten(1, (1, 16, 16)))
    criterion = nn.BCELoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    for i, (real,) in enumerate(loader):
        netD.zero_grad()
        label = torch.ones(real.size(0), 1)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        fake = netG(torch.randn(real.size(0), nz))
        errD_fake = criterion(netD(fake.detach()), label * 0)
        errD_fake.backward()
        optimizerD.step()
        netG.zero_grad()
        errG = criterion(netD(fake), label)
        errG.backward()
        optimizerG.step()
        if i % args.save_every == args.save_every // 2:
            time.sleep(args.save_s)  # vutils.save_image of a sample grid
    print("dcgan_like: %d iterations" % (i + 1))


if __name__ == "__main__":
    main()
