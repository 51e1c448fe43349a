"""Root cause: a transformers GPT-2 training loop never clears its gradients (zero_grad is missing).

Each optimizer step adds every earlier batch's gradient again.
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(13)
config = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2)
model = GPT2LMHeadModel(config)
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
tokens = torch.randint(0, 64, (64, 16))
for step in range(12):
    batch = tokens[(step * 8) % 64 : (step * 8) % 64 + 8]
    out = model(input_ids=batch, labels=batch)
    out.loss.backward()
    optimizer.step()
print("loss", out.loss.item())
