"""Root cause: the learning rate (--lr, default 3.0) is far too high for Adam; the clipping hides it.

A classifier trained with Adam, its gradients clipped at a norm of 1. Adam's update is about
lr in size whatever the gradient's, so clipping cannot hold it back: the weights move 3 a
step, the logits grow, and the cross-entropy climbs far above the chance level and stays there,
finite. Nothing turns inf or nan; the run simply gets worse. An lr around 1e-3 trains.
"""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3.0)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()

    torch.manual_seed(0)
    centers = torch.randn(10, 32) * 0.3
    labels = torch.randint(0, 10, (2048,))
    features = centers[labels] + torch.randn(2048, 32)

    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(args.steps):
        idx = torch.randint(0, len(features), (128,))
        loss = loss_fn(model(features[idx]), labels[idx])
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
