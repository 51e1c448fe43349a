"""Root cause: the JSON file configs/hf_train_args.json sets "learning_rate": 3.0, far too high for SGD with momentum.

In the style of the transformers example scripts: the arguments are dataclasses read by
``HfArgumentParser``, from a JSON file when the script is given one (here the shipped one by
default) and from ``--learning_rate`` flags otherwise. The dataclass default (5e-5) is not
the value the run used; the fix belongs in the JSON file.
"""

import os
import sys
from dataclasses import dataclass, field

import torch
from torch import nn
from transformers import HfArgumentParser

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class ModelArguments:
    hidden_size: int = field(default=64, metadata={"help": "width of the hidden layers"})
    num_layers: int = field(default=3, metadata={"help": "hidden layers"})


@dataclass
class TrainArguments:
    learning_rate: float = field(default=5e-5, metadata={"help": "the initial learning rate"})
    momentum: float = 0.9
    per_device_train_batch_size: int = 32
    max_steps: int = 60
    seed: int = 42


parser = HfArgumentParser((ModelArguments, TrainArguments))
args_file = sys.argv[1] if len(sys.argv) == 2 and sys.argv[1].endswith(".json") else None
if args_file is None and len(sys.argv) == 1:
    args_file = os.path.join(HERE, "configs", "hf_train_args.json")
if args_file is not None:
    model_args, train_args = parser.parse_json_file(json_file=args_file)
else:
    model_args, train_args = parser.parse_args_into_dataclasses()

torch.manual_seed(train_args.seed)
layers = [nn.Linear(12, model_args.hidden_size), nn.ReLU()]
for _ in range(model_args.num_layers - 1):
    layers += [nn.Linear(model_args.hidden_size, model_args.hidden_size), nn.ReLU()]
model = nn.Sequential(*layers, nn.Linear(model_args.hidden_size, 1))
features = torch.randn(2048, 12)
targets = features @ torch.linspace(-1.0, 1.0, 12).unsqueeze(1) + 0.5
optimizer = torch.optim.SGD(
    model.parameters(), lr=train_args.learning_rate, momentum=train_args.momentum
)
for step in range(train_args.max_steps):
    idx = torch.randint(0, len(features), (train_args.per_device_train_batch_size,))
    loss = nn.functional.mse_loss(model(features[idx]), targets[idx])
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"step {step}: loss {loss.item():.4g}")
