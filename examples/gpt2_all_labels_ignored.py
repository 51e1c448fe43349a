"""Root cause: all labels of a batch are -100 (ignored): the cross-entropy is a mean over nothing.

A tiny GPT-2 (built from a config, no download) is fine-tuned on prompt/answer pairs where only
the answer tokens are trained: the prompt positions get label -100. The collate function masks
the prompt by its length, and the last batch holds only long prompts whose answers were cut off
by ``MAX_LEN``: all of its labels are -100. Cross-entropy with ``ignore_index=-100`` divides a sum
over zero tokens by zero tokens and returns nan: the logged loss (and any running average of it)
is nan although the weights are fine. Skip batches with no trainable target (check
``(labels != -100).any()``) or fix the truncation so every sample keeps an answer token.
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

MAX_LEN = 16
VOCAB = 64

torch.manual_seed(12)
config = GPT2Config(
    vocab_size=VOCAB,
    n_positions=MAX_LEN,
    n_embd=32,
    n_layer=2,
    n_head=2,
    resid_pdrop=0.0,
    embd_pdrop=0.0,
    attn_pdrop=0.0,
)
model = GPT2LMHeadModel(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)


def make_pair(prompt_len: int, answer_len: int) -> tuple[torch.Tensor, int]:
    ids = torch.randint(1, VOCAB, (prompt_len + answer_len,))
    return ids, prompt_len


def collate(pairs: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    input_ids = torch.stack([ids[:MAX_LEN] for ids, _ in pairs])
    labels = input_ids.clone()
    for row, (_, prompt_len) in enumerate(pairs):
        labels[row, :prompt_len] = -100  # train on the answer only
    return input_ids, labels


# Short prompts first; the last batch has prompts longer than MAX_LEN.
batches = [collate([make_pair(6, 10) for _ in range(8)]) for _ in range(5)]
batches.append(collate([make_pair(20, 4) for _ in range(8)]))

for step, (input_ids, labels) in enumerate(batches * 2):
    optimizer.zero_grad()
    loss = model(input_ids=input_ids, labels=labels).loss
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
