"""Hand-built reports shaped like the tracer's, for renderer tests."""

from __future__ import annotations

from diagnose.report import GradNote, Learning, LossInput, Report, ScriptInfo, StepRecord, Symptom


def nonfinite_report(module: str = "net.fc2") -> Report:
    return Report.model_validate(
        {
            "status": "nonfinite",
            "script": {"path": "train.py", "argv": ["--lr", "1"]},
            "event": {
                "kind": "nonfinite",
                "phase": "forward",
                "step": 4,
                "module": module,
                "module_type": "Linear",
                "op": "linear",
                "dtype": "torch.float16",
                "value": "inf",
                "location": {"file": "train.py", "line": 23, "code": "    h = self.fc2(h)"},
                "message": f"first non-finite: step 4, forward, `{module}` (Linear, float16): "
                "output |x| max = inf from finite input",
                "details": ["input |x| max 2.1e3, weight |x| max 2.8e4"],
            },
            "frames": [
                {
                    "index": 7,
                    "step": 4,
                    "phase": "forward",
                    "module": "net.fc1",
                    "module_type": "Linear",
                    "outputs": [
                        {
                            "name": "output",
                            "dtype": "torch.float16",
                            "shape": [8, 64],
                            "abs_min": 0.01,
                            "abs_max": 3.9e4,
                            "headroom": 1.68,
                            "near_limit": True,
                        }
                    ],
                },
                {
                    "index": 8,
                    "step": 4,
                    "phase": "forward",
                    "module": module,
                    "module_type": "Linear",
                    "producer": True,
                    "inputs": [{"name": "input[0]", "dtype": "torch.float16", "abs_max": 3.9e4}],
                    "outputs": [
                        {
                            "name": "output",
                            "dtype": "torch.float16",
                            "shape": [8, 10],
                            "abs_min": 0.5,
                            "abs_max": float("inf"),
                            "inf": 3,
                            "nan": 0,
                        }
                    ],
                    "weights": [{"name": "weight", "dtype": "torch.float16", "abs_max": 2.8e4}],
                },
            ],
            "history": [
                {
                    "step": s,
                    "loss": 2.0 + s,
                    "grad_norm": 10.0**s,
                    "max_activation": 10.0 ** (s + 1),
                    "lr": 0.1,
                    "loss_scale": None,
                }
                for s in range(4)
            ],
            "config": {
                "precision": "fp16",
                "optimizer": "SGD",
                "lr": 0.1,
                "grad_clip": None,
                "grad_scaler": False,
            },
            "symptoms": [
                {
                    "id": "fp16-overflow",
                    "confidence": 0.9,
                    "title": "fp16 overflow",
                    "evidence": ["activation |x| max 3.9e4 in fp16, 60% of the range"],
                }
            ],
            "fixes": [
                {
                    "id": "use-bf16",
                    "score": 0.9,
                    "title": "Train in bfloat16 instead of float16",
                    "why": "bf16 has the range of fp32.",
                    "example_patch": "# before\nx.half()\n# after\nx.bfloat16()",
                    "patch": "--- train.py\n+++ train.py\n@@ -1 +1 @@\n-model.half()\n+model.bfloat16()\n",
                    "rules": ["fp16-activation-overflow"],
                },
                {
                    "id": "enable-grad-clipping",
                    "score": 0.3,
                    "title": "Clip gradients",
                    "why": "Bounds the update.",
                    "example_patch": "clip_grad_norm_(p, 1.0)",
                    "patch": None,
                    "patch_note": "no backward() call found",
                },
            ],
        }
    )


AT_CHANCE = Symptom(id="loss-at-chance", confidence=0.85, evidence=["the loss stayed at 2.3"])


def silent_report(
    losses: list[float],
    lrs: list[float] | None = None,
    layers: tuple[str, ...] = ("net.fc1", "net.fc2"),
    status: str = "silent",
) -> Report:
    """A finite run whose loss sat at the chance level: its history, losses and layers."""
    lrs = lrs or [1e-3] * len(losses)
    return Report(
        status=status,
        script=ScriptInfo(path="train.py"),
        history=[
            StepRecord(step=i, loss=x, lr=lr)
            for i, (x, lr) in enumerate(zip(losses, lrs, strict=True))
        ],
        symptoms=[AT_CHANCE],
        learning=Learning(
            optimizer_steps=len(losses),
            backward_passes=len(losses),
            losses=[LossInput(function="cross_entropy", classes=10)],
            layer_grads=[GradNote(module=m, norm=0.5 * (i + 1)) for i, m in enumerate(layers)],
        ),
    )
