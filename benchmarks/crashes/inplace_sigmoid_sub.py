# expect: inplace-modified-saved-tensor make-op-out-of-place
import torch
from torch import nn

enc = nn.Sequential(nn.Linear(10, 6))
dec = nn.Linear(6, 10)
opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()])
for _step in range(2):
    x = torch.rand(4, 10)
    code = torch.sigmoid(enc(x))
    code -= 0.5  # cause
    recon = dec(code)
    loss = ((recon - x) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
