#!/usr/bin/env python3
"""Trains a small CNN with GroupNorm on scikit-learn's digits (8x8 images of 0-9; the data set ships inside
scikit-learn, nothing is downloaded), twice from the same initial weights and batches:

  nnops   nnops.torch.nn.GroupNorm + nnops.torch.optim.PowerSign (one native call per step)
  torch   torch.nn.GroupNorm + PowerSign written as eager torch ops (the formula, per parameter)

both with PowerSign's cosine sign decay over the whole run, and prints test accuracy and time per epoch.

usage: python examples/python/train_digits.py [--epochs 30] [--threads N] [--seed 0] [--variants nnops,torch]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import nnops.torch as nt
from nnops.torch.optim import PowerSign, cosine_sign_decay


class EagerPowerSign(torch.optim.Optimizer):
    """PowerSign as eager torch ops (what a user writes without nnops), TensorFlow's semantics."""

    def __init__(self, params, lr=0.1, base=math.e, beta=0.9, sign_decay_fn=None):
        super().__init__(params, dict(lr=lr, base=base, beta=beta, sign_decay_fn=sign_decay_fn))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            logbase, beta, fn = math.log(group["base"]), group["beta"], group["sign_decay_fn"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"], state["m"] = 0, torch.zeros_like(p)
                g, m = p.grad, state["m"]
                sign_decay = 1.0 if fn is None else fn(state["step"])
                m.mul_(beta).add_(g, alpha=1 - beta)
                p.sub_(group["lr"] * torch.exp(logbase * sign_decay * (torch.sign(m) * torch.sign(g))) * g)
                state["step"] += 1


def make_model(group_norm):
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3, padding=1), group_norm(8, 32), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, padding=1), group_norm(8, 64), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(64, 64, 3, padding=1), group_norm(8, 64), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10))


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    model.train()
    return acc


def run_epoch(model, opt, data, batch, g):
    x_tr, y_tr = data[0], data[1]
    t0 = time.perf_counter()
    perm = torch.randperm(len(x_tr), generator=g)
    for i in range(0, len(x_tr), batch):
        idx = perm[i:i + batch]
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x_tr[idx]), y_tr[idx])
        loss.backward()
        opt.step()
    return time.perf_counter() - t0, loss.item()


def train(variants, data, epochs, batch, seed):
    """Trains every variant, alternating epochs (so that a change in the machine's load hits all alike)."""
    runs = []
    for k, (name, model, opt) in enumerate(variants):
        bar = tqdm(total=epochs, desc=f"{name:6s}", unit="epoch", position=k, leave=True)
        runs.append(dict(name=name, model=model, opt=opt, g=torch.Generator().manual_seed(seed), bar=bar, times=[]))
    for _ in range(epochs):
        for r in runs:
            dt, loss = run_epoch(r["model"], r["opt"], data, batch, r["g"])
            r["times"].append(dt)
            r["bar"].set_postfix(loss=f"{loss:.3f}", test_acc=f"{accuracy(r['model'], data[2], data[3]):.3f}")
            r["bar"].update()
    for r in runs:
        r["bar"].close()
    return {r["name"]: (accuracy(r["model"], data[2], data[3]), r["times"]) for r in runs}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--threads", type=int, default=0, help="torch (and so nnops) threads; 0: torch's default")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", default="nnops,torch", help="comma-separated: nnops, torch (default both)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # [N, 1, 8, 8] in [0, 1]
    x_tr, x_te, y_tr, y_te = train_test_split(x, digits.target, test_size=0.2, stratify=digits.target,
                                              random_state=args.seed)
    data = (torch.from_numpy(x_tr), torch.from_numpy(y_tr).long(), torch.from_numpy(x_te), torch.from_numpy(y_te).long())
    steps = args.epochs * math.ceil(len(x_tr) / args.batch)
    print(f"digits: {len(x_tr)} training and {len(x_te)} test images, {args.epochs} epochs of {args.batch}, "
          f"{torch.get_num_threads()} threads, PowerSign lr={args.lr} with cosine_sign_decay({steps})")

    variants = []
    for name, gn, optim in (("nnops", nt.nn.GroupNorm, PowerSign), ("torch", torch.nn.GroupNorm, EagerPowerSign)):
        if name not in args.variants.split(","):
            continue
        torch.manual_seed(args.seed)  # the same initial weights for every variant
        model = make_model(gn)
        variants.append((name, model, optim(model.parameters(), lr=args.lr, sign_decay_fn=cosine_sign_decay(steps))))
    results = train(variants, data, args.epochs, args.batch, args.seed)

    print()
    print("| variant | GroupNorm | PowerSign | test accuracy | time per epoch (median) |")
    print("|---|---|---|---|---|")
    for name, (acc, times) in results.items():
        gn, ps = ("nnops.torch.nn.GroupNorm", "nnops.torch.optim.PowerSign") if name == "nnops" else (
            "torch.nn.GroupNorm", "eager torch ops")
        print(f"| {name} | {gn} | {ps} | {100 * acc:.2f}% | {1e3 * statistics.median(times):.1f} ms |")
    return results


if __name__ == "__main__":
    main()
