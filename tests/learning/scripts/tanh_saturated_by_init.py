"""A tanh MLP built from a config whose init draws weights with std 4: every hidden tanh sits
in its flat tails from the first step, almost no gradient passes them, and the classifier
stays where it began."""

import torch
from torch import nn

CONFIG = {"hidden": [128, 128], "init_std": 4.0, "lr": 1e-3, "steps": 200}


def build(config):
    layers, width = [], 20
    for size in config["hidden"]:
        layers += [nn.Linear(width, size), nn.Tanh()]
        width = size
    model = nn.Sequential(*layers, nn.Linear(width, 3))
    for module in model:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=config["init_std"])
            nn.init.zeros_(module.bias)
    return model


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(1024, 20)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    model = build(CONFIG)
    optimizer = torch.optim.SGD(model.parameters(), lr=CONFIG["lr"])
    for step in range(CONFIG["steps"]):
        i = (step * 64) % 1024
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[i : i + 64]), y[i : i + 64])
        loss.backward()
        optimizer.step()
        if step % 50 == 0 or step == CONFIG["steps"] - 1:
            print(f"step {step} loss {loss.item():.4f}")
