"""Real tracebacks as users paste them rank the right shipped record first."""

from __future__ import annotations

import pytest

from diagnose.matcher import Matcher
from diagnose.records import load_records

OOM_TRACEBACK = """\
Traceback (most recent call last):
  File "/home/me/train.py", line 57, in <module>
    loss = model(**batch).loss
           ^^^^^^^^^^^^^^^^^^^
  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 22.61 GiB memory in use. Of the allocated memory 21.89 GiB is allocated by PyTorch, and 268.01 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
Exception raised from malloc at /pytorch/c10/cuda/CUDACachingAllocator.cpp:1324 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3c5a8b9446 in /opt/venv/lib/python3.11/site-packages/torch/lib/libc10.so)
frame #1: <unknown function> + 0x3ce0f (0x7f3c5a97ce0f in /opt/venv/lib/python3.11/site-packages/torch/lib/libc10_cuda.so)
"""

CHAINED_DEVICE = """\
Traceback (most recent call last):
  File "/home/me/model.py", line 30, in forward
    return self.proj(x)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/home/me/train.py", line 90, in <module>
    trainer.fit(model)
  File "/home/me/train.py", line 44, in fit
    raise TrainingFailed("step 3 failed") from None
__main__.TrainingFailed: step 3 failed
"""

LIGHTNING_LOG = (
    "\x1b[2mGPU available: True (cuda), used: True\x1b[0m\n"
    "Epoch 0:  41%|████      | 41/100 [00:07<00:10,  5.61it/s, v_num=3, train_loss=2.310]\r"
    "Epoch 0:  42%|████▏     | 42/100 [00:07<00:10,  5.60it/s, v_num=3, train_loss=nan]\r\n"
    "\x1b[31mTraceback (most recent call last):\x1b[0m\n"
    '  File "/home/me/lit.py", line 70, in <module>\n'
    "    trainer.fit(model, dm)\n"
    '  File "/opt/venv/lib/python3.11/site-packages/torch/amp/grad_scaler.py", line 338, in unscale_\n'
    '    raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")\n'
    "\x1b[1;31mRuntimeError\x1b[0m: unscale_() has already been called on this optimizer since the last update().\n"
)

GRADSCALER_FP16 = """\
Traceback (most recent call last):
  File "finetune.py", line 112, in <module>
    scaler.unscale_(optimizer)
  File "/usr/lib/python3/site-packages/torch/amp/grad_scaler.py", line 342, in unscale_
    optimizer_state["found_inf_per_device"] = self._unscale_grads_(
  File "/usr/lib/python3/site-packages/torch/amp/grad_scaler.py", line 264, in _unscale_grads_
    raise ValueError("Attempting to unscale FP16 gradients.")
ValueError: Attempting to unscale FP16 gradients.
"""


@pytest.fixture(scope="module")
def matcher() -> Matcher:
    return Matcher(load_records().records)


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        (OOM_TRACEBACK, "cuda-out-of-memory"),
        (LIGHTNING_LOG, "gradscaler-unscale-called-twice"),
        (GRADSCALER_FP16, "gradscaler-attempting-to-unscale-fp16-gradients"),
        (
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x784 and 512x10)",
            "mat1-and-mat2-shapes-cannot-be-multiplied",
        ),
    ],
)
def test_pasted_log_ranks_the_right_record_first(matcher, text, slug):
    first = matcher.match(text)[0]
    assert first.slug == slug and first.kind == "pattern"


def test_chained_exception_finds_the_root_cause_record(matcher):
    result = matcher.search(CHAINED_DEVICE)
    assert [e.role for e in result.query[:2]] == ["final", "root cause"]
    first = result.matches[0]
    assert first.slug == "expected-all-tensors-on-same-device"
    assert first.role == "root cause"
