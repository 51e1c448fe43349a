"""A tiny random T5 in fp16 whose feed-forward output overflows (one `wo` weight too large)."""

import torch
from transformers import T5Config, T5ForConditionalGeneration


def build() -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=64,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        dropout_rate=0.0,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    model = T5ForConditionalGeneration(config).half()
    with torch.no_grad():
        model.encoder.block[1].layer[1].DenseReluDense.wo.weight.mul_(1.0e5)
    input_ids = torch.randint(0, 64, (2, 12))
    labels = torch.randint(0, 64, (2, 6))
    return model, input_ids, labels


if __name__ == "__main__":
    model, input_ids, labels = build()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    for _step in range(3):
        out = model(input_ids=input_ids, labels=labels)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
    print("done")
