"""The script's own TorchDispatchMode and TorchFunctionMode count the ops of its steps; the
first is entered before the model's first call, while only the optimizer exists."""

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode


class DispatchCount(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


class FunctionCount(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.ops.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(20):
    with DispatchCount() as dispatched, FunctionCount() as called:
        opt.zero_grad()
        loss = model(torch.ones(2, 4)).pow(2).mean()
        loss.backward()
        opt.step()
    print("result", step, len(dispatched.ops), len(called.ops), sorted(set(dispatched.ops)))
print("result loss", repr(loss.item()))
