"""Root cause: the model runs in float16 and its activations overflow the fp16 range.

The features are raw 16-bit ADC counts (0..60000), never normalised. The whole model is cast
to float16 with ``.half()`` to "save memory"; the first Linear layer sums 64 such inputs times its
weights, and some of its outputs pass fp16's largest finite value (65504) in the first forward pass,
becoming inf. bfloat16 has float32's range and would not overflow.
"""

import torch
from torch import nn

torch.manual_seed(0)

# Raw ADC counts, not normalised: values up to 60000.
features = torch.randint(0, 60000, (256, 64)).float()
targets = features[:, :4].sum(dim=1, keepdim=True) / 60000.0

model = nn.Sequential(
    nn.Linear(64, 256),
    nn.ReLU(),
    nn.Linear(256, 128),
    nn.ReLU(),
    nn.Linear(128, 1),
).half()  # fp16 everywhere
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(30):
    batch = slice((step * 32) % 256, (step * 32) % 256 + 32)
    x = features[batch].to(torch.float16)
    y = targets[batch].to(torch.float16)
    optimizer.zero_grad()
    pred = model(x)
    loss = nn.functional.mse_loss(pred, y)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
