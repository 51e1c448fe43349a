"""A tiny transformers BERT (config only, no download) trained on dict batches."""

import torch
from transformers import BertConfig, BertForSequenceClassification


def main() -> None:
    torch.manual_seed(7)
    config = BertConfig(
        vocab_size=30,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=16,
        num_labels=2,
    )
    model = BertForSequenceClassification(config)
    input_ids = torch.randint(3, 30, (256, 10))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[:, 7:] = torch.randint(0, 2, (256, 3))
    labels = (input_ids[:, 0] > 16).long()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for step in range(30):
        b = torch.randint(0, 256, (32,))
        batch = {
            "input_ids": input_ids[b],
            "attention_mask": attention_mask[b],
            "labels": labels[b],
        }
        outputs = model(**batch)
        loss = outputs.loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
