"""Root cause: the script's dtype setting is "float16", and an activation under float16 autocast passes 65504.

In the style of scripts whose settings are module-level names a configurator may override
(``dtype = 'float16'``), mapped to a torch dtype for ``torch.autocast``. The inputs are raw
sensor counts (0..60000): the first Linear layer's outputs pass float16's largest finite value
and become inf. Choosing "bfloat16" instead keeps the autocast and float32's range.
"""

import torch
from torch import nn

# -- settings ------------------------------------------------------------------------------
batch_size = 32
learning_rate = 1e-3
max_iters = 30
dtype = "float16"  # 'float32', 'bfloat16' or 'float16'
# ------------------------------------------------------------------------------------------

ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
autocast = torch.autocast("cpu", dtype=ptdtype, enabled=dtype != "float32")

torch.manual_seed(0)
features = torch.randint(0, 60000, (512, 64)).float()
targets = features[:, :4].sum(dim=1, keepdim=True) / 60000.0

model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
for it in range(max_iters):
    idx = torch.randint(0, len(features), (batch_size,))
    with autocast:
        pred = model(features[idx])
    loss = nn.functional.mse_loss(pred.float(), targets[idx])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"iter {it}: loss {loss.item():.4f}")
