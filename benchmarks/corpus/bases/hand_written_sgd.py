"""Logistic regression with hand-written updates: no torch optimizer, gradients by autograd."""

import torch


def main() -> None:
    torch.manual_seed(16)
    x = torch.randn(512, 5)
    true_w = torch.tensor([1.5, -2.0, 0.5, 0.0, 1.0])
    y = (x @ true_w > 0).float()
    w = torch.zeros(5, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    lr = 0.5
    for step in range(60):
        idx = torch.randint(0, 512, (64,))
        logits = x[idx] @ w + b
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y[idx])
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
            w.grad.zero_()
            b.grad.zero_()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
