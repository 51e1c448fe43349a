"""Root cause: the YAML file configs/cfgnode_trainer.yaml sets trainer.learning_rate: 4.0, far too high for SGD.

In the style of minGPT: the settings are a tree of ``CfgNode`` objects with defaults in code,
merged with a YAML file and then with ``--trainer.learning_rate=...`` style arguments. The
optimizer reads ``config.trainer.learning_rate``, whose default in the script (3e-4) is not the
value the run used; the fix belongs in the YAML file (or in a ``--trainer.learning_rate=``
argument).
"""

import ast
import contextlib
import os
import sys

import torch
import yaml
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))


class CfgNode:
    """Nested settings reached as attributes: ``config.trainer.learning_rate``."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def merge_from_dict(self, settings):
        for key, value in settings.items():
            if isinstance(value, dict):
                getattr(self, key).merge_from_dict(value)
            else:
                setattr(self, key, value)

    def merge_from_args(self, args):
        """``--a.b=value`` overrides; the value is read as a Python literal when it is one."""
        for arg in args:
            keyval = arg.split("=", 1)
            assert len(keyval) == 2, f"expected --key=value, got {arg}"
            key, val = keyval
            with contextlib.suppress(ValueError, SyntaxError):
                val = ast.literal_eval(val)
            *path, leaf = key.lstrip("-").split(".")
            node = self
            for part in path:
                node = getattr(node, part)
            setattr(node, leaf, val)


def get_default_config():
    return CfgNode(
        model=CfgNode(n_embd=32, n_hidden=64),
        trainer=CfgNode(learning_rate=3e-4, momentum=0.9, batch_size=64, max_iters=60),
    )


class Block(nn.Module):
    def __init__(self, n_embd, n_hidden):
        super().__init__()
        self.ln = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, n_hidden), nn.GELU(), nn.Linear(n_hidden, n_embd)
        )

    def forward(self, x):
        return x + self.mlp(self.ln(x))


class Net(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.inp = nn.Linear(16, config.n_embd)
        self.blocks = nn.Sequential(
            Block(config.n_embd, config.n_hidden), Block(config.n_embd, config.n_hidden)
        )
        self.head = nn.Linear(config.n_embd, 1)

    def forward(self, x):
        return self.head(self.blocks(self.inp(x)))


config = get_default_config()
with open(os.path.join(HERE, "configs", "cfgnode_trainer.yaml")) as f:
    config.merge_from_dict(yaml.safe_load(f))
config.merge_from_args(sys.argv[1:])

torch.manual_seed(0)
x = torch.randn(1024, 16)
y = (x[:, :4].sum(dim=1, keepdim=True) * 2.0).tanh()
model = Net(config.model)
train = config.trainer
optimizer = torch.optim.SGD(model.parameters(), lr=train.learning_rate, momentum=train.momentum)
for it in range(train.max_iters):
    idx = torch.randint(0, len(x), (train.batch_size,))
    loss = nn.functional.mse_loss(model(x[idx]), y[idx])
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    print(f"iter {it}: loss {loss.item():.4g}")
