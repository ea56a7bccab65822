"""Data-parallel training with nnops GroupNorm + PowerSign, for test_ddp.py.

usage: python ddp_train.py OUT_DIR ddp PORT    two processes (gloo, 127.0.0.1 only), half the batch each
       python ddp_train.py OUT_DIR single      one process on the whole batch
Each writes the final parameters to OUT_DIR/params_<rank or single>.pt.
"""

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import nnops.torch as nt
from nnops.torch.optim import PowerSign, cosine_sign_decay

STEPS, BATCH = 6, 16


def make_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), nt.nn.GroupNorm(4, 8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1), nt.nn.GroupNorm(2, 8), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    return model


def data():
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(BATCH, 1, 8, 8, generator=g), torch.randint(0, 4, (BATCH,), generator=g))
            for _ in range(STEPS)]


def train(model, opt, batches, lo, hi):
    for x, y in batches:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[lo:hi]), y[lo:hi])
        loss.backward()
        opt.step()


def worker(rank, out_dir, port):
    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    model = torch.nn.parallel.DistributedDataParallel(make_model())
    opt = PowerSign(model.parameters(), lr=0.01, sign_decay_fn=cosine_sign_decay(STEPS))
    half = BATCH // 2
    train(model, opt, data(), rank * half, (rank + 1) * half)
    torch.save([p.detach() for p in model.module.parameters()], os.path.join(out_dir, f"params_{rank}.pt"))
    dist.destroy_process_group()


def main():
    out_dir, mode = sys.argv[1], sys.argv[2]
    if mode == "ddp":
        mp.spawn(worker, args=(out_dir, int(sys.argv[3])), nprocs=2, join=True)
    else:
        torch.set_num_threads(1)
        model = make_model()
        opt = PowerSign(model.parameters(), lr=0.01, sign_decay_fn=cosine_sign_decay(STEPS))
        train(model, opt, data(), 0, BATCH)
        torch.save([p.detach() for p in model.parameters()], os.path.join(out_dir, "params_single.pt"))


if __name__ == "__main__":
    main()
