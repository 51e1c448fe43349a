"""A dict-configured regression loop that steps before its backward, all on one line.

``optimizer.zero_grad(); optimizer.step(); loss.backward()``: each step comes after zero_grad
and before the backward that would fill the gradients, so no step moves a weight.
"""

import torch

HP = {"lr": 0.01, "steps": 150, "hidden": 24, "weight_decay": 0.0}


def make_model(hp):
    return torch.nn.Sequential(
        torch.nn.Linear(6, hp["hidden"]), torch.nn.Tanh(), torch.nn.Linear(hp["hidden"], 1)
    )


def main():
    torch.manual_seed(0)
    x = torch.randn(256, 6)
    y = x @ torch.linspace(-1.0, 1.0, 6).unsqueeze(1)
    model = make_model(HP)
    optimizer = torch.optim.Adam(model.parameters(), lr=HP["lr"], weight_decay=HP["weight_decay"])
    for step in range(HP["steps"]):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad(); optimizer.step(); loss.backward()  # noqa: E702  # fmt: skip
        if step % 50 == 0 or step == HP["steps"] - 1:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
