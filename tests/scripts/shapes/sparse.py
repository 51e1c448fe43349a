"""Sparse embedding gradients under SparseAdam."""

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
emb = torch.nn.Embedding(10, 4, sparse=True)
opt = torch.optim.SparseAdam(emb.parameters(), lr=0.01)
for _ in range(5):
    opt.zero_grad()
    loss = emb(torch.tensor([1, 2, 3, 3])).pow(2).sum()
    loss.backward()
    opt.step()
print("result sparse", repr(loss.item()), repr(emb.weight.sum().item()))
