"""Healthy: a tiny GPT-2 (built from a config, no download) trained on padded batches.

The padding is masked through ``attention_mask`` and the padded label positions are -100, but
every batch keeps trainable tokens, so the loss stays finite. Internally the attention mask uses
the dtype's minimum value, which must not be reported. No event, no fix.
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    torch.manual_seed(22)
    config = GPT2Config(vocab_size=50, n_positions=16, n_embd=32, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    input_ids = torch.randint(1, 50, (8, 16))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[4:, 10:] = 0  # the last four rows are padded
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    for step in range(15):
        optimizer.zero_grad()
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        out.loss.backward()
        optimizer.step()
        print(f"step {step} loss {out.loss.item():.4g}")


if __name__ == "__main__":
    main()
