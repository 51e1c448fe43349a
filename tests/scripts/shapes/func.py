"""torch.func: grad and vmap over functional_call, and vmap of a model an optimizer trains."""

import torch
from torch.func import functional_call, grad, vmap

torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
params = {k: v.detach() for k, v in model.named_parameters()}
x, y = torch.randn(8, 3), torch.randn(8, 1)


def loss_fn(p, x, y):
    return ((functional_call(model, p, (x,)) - y) ** 2).mean()


for _ in range(5):
    g = grad(loss_fn)(params, x, y)
    params = {k: params[k] - 0.1 * g[k] for k in params}
per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x.unsqueeze(1), y.unsqueeze(1))
print("result func", repr(loss_fn(params, x, y).item()), repr(per_sample["weight"].sum().item()))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(5):
    opt.zero_grad()
    loss = (vmap(model)(x) - y).pow(2).mean()
    loss.backward()
    opt.step()
print("result vmap", repr(loss.item()), repr(model.weight.sum().item()))
