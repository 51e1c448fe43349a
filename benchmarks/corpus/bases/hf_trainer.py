"""A tiny transformers GPT-2 (config only) trained by the transformers Trainer."""

import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Counting(torch.utils.data.Dataset):
    def __init__(self, size: int) -> None:
        start = torch.randint(0, 20, (size, 1))
        self.ids = (start + torch.arange(12)[None, :]) % 20

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def main() -> None:
    torch.manual_seed(12)
    config = GPT2Config(vocab_size=20, n_positions=16, n_embd=32, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            max_steps=30,
            per_device_train_batch_size=16,
            learning_rate=2e-3,
            warmup_steps=3,
            logging_steps=10,
            report_to=[],
            save_strategy="no",
            use_cpu=True,
            disable_tqdm=True,
        )
        trainer = Trainer(model=model, args=args, train_dataset=Counting(256))
        trainer.train()


if __name__ == "__main__":
    main()
