"""A tiny random GPT-2 trained by the transformers Trainer on CPU.

    python hf_trainer_gpt2.py                      # healthy
    python hf_trainer_gpt2.py --nan-weight         # a NaN planted in one weight
    python hf_trainer_gpt2.py --nan-data           # a NaN in one row of the input embeddings

``--callback REPORT`` adds ``diagnose.integrations.transformers.DiagnoseCallback`` (writing
REPORT), to compare the callback with the zero-code ``diagnose hf_trainer_gpt2.py``.
Nothing is downloaded: the model is built from a config and the data is random token ids.
"""

import argparse
import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--clip", type=float, default=1.0, help="max_grad_norm (0: no clipping)")
parser.add_argument("--steps", type=int, default=4)
parser.add_argument("--nan-weight", action="store_true")
parser.add_argument("--callback", metavar="REPORT", help="trace with DiagnoseCallback")
parser.add_argument(
    "--nan-data", action="store_true", help="feed inputs_embeds, one value of one row NaN"
)
args = parser.parse_args()

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2))
if args.nan_weight:
    with torch.no_grad():
        model.transformer.h[1].mlp.c_fc.weight[0, 0] = float("nan")

generator = torch.Generator().manual_seed(0)
data = []
for _ in range(32):
    ids = torch.randint(0, 64, (12,), generator=generator)
    data.append({"input_ids": ids, "labels": ids.clone()})
if args.nan_data:
    # Precomputed embeddings instead of token ids, as a pipeline with its own encoder feeds them.
    with torch.no_grad():
        data = [
            {"inputs_embeds": model.transformer.wte(row["input_ids"]), "labels": row["labels"]}
            for row in data
        ]
    data[5]["inputs_embeds"][3, 7] = float("nan")

with tempfile.TemporaryDirectory() as out:
    training_args = TrainingArguments(
        output_dir=out,
        use_cpu=True,
        report_to=[],
        max_steps=args.steps,
        logging_steps=1,
        per_device_train_batch_size=4,
        learning_rate=args.lr,
        warmup_steps=1,
        max_grad_norm=args.clip,
        gradient_accumulation_steps=2,
        save_strategy="no",
        dataloader_num_workers=0,
        disable_tqdm=True,
        seed=0,
    )
    callbacks = []
    if args.callback:
        from diagnose.integrations.transformers import DiagnoseCallback

        callbacks.append(DiagnoseCallback(report_path=args.callback))
    trainer = Trainer(model=model, args=training_args, train_dataset=data, callbacks=callbacks)
    trainer.train()
print("done")
