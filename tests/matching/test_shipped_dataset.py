"""Real tracebacks as users paste them rank the right shipped record first."""

from __future__ import annotations

import subprocess
import sys

import pytest

from diagnose.matcher import Matcher
from diagnose.records import load_records
from tests.matching.pasted import FRAMES_THEN_RAISE, WATCHDOG

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


# Shapes of real messages users pasted into GitHub issues (shortened where long).
WATCHDOG_AFTER_PROGRESS_BAR = (
    "Epoch 0:   6%|██        | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6, "
    "v_num=95nc][E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=96120, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25624887 "
    "milliseconds before timing out.\n"
)
SIZE_MISMATCH = (
    "size mismatch for stg1_low_band_net.0.lstm_dec2.lstm.weight_ih_l0: copying a param with "
    "shape torch.Size([256, 168]) from checkpoint, the shape in current model is "
    "torch.Size([256, 320]).\n"
)
BATCH_SIZE_THEN_LIGHTNING_LOG = """\
Traceback (most recent call last):
  File "train.py", line 171, in <module>
    loss = criterion(pred.view(-1, pred.size(2)), question.view(-1))
ValueError: Expected input batch_size (1216) to match target batch_size (1280)
Epoch 12: : 600it [11:53,  1.19s/it, loss=nan, v_num=0, val_loss=0.054]NaN or Inf found in input tensor.
Epoch 12: : 1200it [20:40,  1.03s/it, loss=nan, val_rec_loss=nan.0]          Monitored metric val_rec_loss = nan is not finite. Previous best value was 0.045. Signaling Trainer to stop.
"""


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        (WATCHDOG, "nccl-watchdog-collective-timeout"),
        (WATCHDOG_AFTER_PROGRESS_BAR, "nccl-watchdog-collective-timeout"),
        (
            FRAMES_THEN_RAISE + "Thank you in advance.\n",
            "grad-implicitly-created-only-for-scalar-outputs",
        ),
        (
            FRAMES_THEN_RAISE + "RuntimeError: grad can be implicit",
            "grad-implicitly-created-only-for-scalar-outputs",
        ),
        (
            "RuntimeError: Error(s) in loading state_dict for CascadedNet:\n        "
            + SIZE_MISMATCH,
            "load-state-dict-size-mismatch",
        ),
        (
            'RuntimeError: "Error(s) in loading state_dict for CascadedNet:\n\t' + SIZE_MISMATCH,
            "load-state-dict-size-mismatch",
        ),
        (BATCH_SIZE_THEN_LIGHTNING_LOG, "expected-input-batch-size-to-match-target"),
    ],
    ids=[
        "watchdog-then-exception-line",
        "watchdog-after-bar",
        "prose-after-traceback",
        "cut-off-final-line",
        "state-dict-no-header",
        "state-dict-quoted-tabs",
        "log-after-final-line",
    ],
)
def test_the_error_line_is_found_in_real_paste_shapes(matcher, text, slug):
    first = matcher.match(text)[0]
    assert first.slug == slug and first.kind == "pattern"


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        (
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has "
            "a total capacty of 4.00 GiB of which 41.56 MiB is free.",
            "cuda-out-of-memory",
        ),
        (
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 14.00 MiB. GPU 0 has "
            "a total capacity of 4.00 GiB of which 0 bytes is free.",
            "cuda-out-of-memory",
        ),
        (
            "`RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 4.00 GiB total "
            "capacity; 3.35 GiB already allocated; 0 bytes free; 3.41 GiB reserved in total by "
            "PyTorch)`",
            "cuda-out-of-memory-legacy-format",
        ),
        (
            "RuntimeError: DataLoader worker (pid 25902) is killed by signal: Segmentation fault",
            "dataloader-worker-killed-by-signal",
        ),
        (
            "ValueError: Expected input batch_size (1216) to match target batch_size (1280)",
            "expected-input-batch-size-to-match-target",
        ),
        (
            "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling 'cublasSgemm( "
            "handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)'",
            "cublas-status-execution-failed",
        ),
        (
            "Full error message: RuntimeError: Can't call `numpy()` on Tensor that requires grad. "
            "Use `tensor.detach().numpy()` instead.",
            "cannot-call-numpy-on-tensor-requiring-grad",
        ),
        (
            "RuntimeError: Can't call numpy() on Variable that requires grad. Use "
            "var.detach().numpy() instead.",
            "cannot-call-numpy-on-tensor-requiring-grad",
        ),
        (
            "`RuntimeError: Expected all tensors to be on the same device, but found at least two "
            "devices, cpu and cuda:0! (when checking argument for argument index in method "
            "wrapper__index_select)`",
            "expected-all-tensors-on-same-device",
        ),
        (
            "RuntimeError: Target 100 out of bounds at "
            "/.../pytorch/aten/src/THNN/generic/ClassNLLCriterion.c:56",
            "nll-loss-target-out-of-bounds",
        ),
        (
            "RuntimeError: Assertion `cur_target >= 0 && cur_target < n_classes' failed.",
            "nll-loss-target-out-of-bounds",
        ),
        (
            "cuda runtime error (59): device-side assert triggered",
            "cuda-error-device-side-assert-triggered",
        ),
        (
            "RuntimeError: Error(s) in loading state_dict for hierarchical_transformer:\n"
            "\tsize mismatch for block_level.position_enc.weight: copying a param of "
            "torch.Size([51, 30]) from checkpoint, where the shape is torch.Size([18290, 30]) in "
            "current model.",
            "load-state-dict-size-mismatch",
        ),
        (
            "RuntimeError: one of the variables needed for gradient computation has been modified "
            "by an inplace operation",
            "inplace-modified-variable-needed-for-gradient",
        ),
        (
            "RuntimeError: Expected object of scalar type Double but got scalar type Float for "
            "sequence element 2 in sequence argument at position #1 'tensors'",
            "expected-scalar-type-but-found",
        ),
        (
            "RuntimeError: Given groups=1, weight[512, 2048, 1, 1], so expected input[16, 64, 75, 75] "
            "to have 2048 channels, but got 64 channels instead",
            "conv-expected-input-channels",
        ),
    ],
    ids=[
        "capacty-typo",
        "0-bytes-is-free",
        "legacy-in-backticks",
        "signal-without-period",
        "batch-size-without-period",
        "cublas-single-quotes",
        "numpy-backticks",
        "numpy-variable",
        "device-in-backticks",
        "thnn-target-out-of-bounds",
        "thnn-cur-target-assert",
        "cuda-runtime-error-59",
        "state-dict-old-wording",
        "inplace-old-short",
        "expected-object-of-scalar-type",
        "conv-old-wording",
    ],
)
def test_real_wording_variants_match_their_record_by_pattern(matcher, text, slug):
    first = matcher.match(text)[0]
    assert first.slug == slug and first.kind == "pattern"


def test_a_warning_glued_to_the_final_line_ranks_after_it_and_is_quoted_where_it_matched(matcher):
    text = (
        "RuntimeError: one of the variables needed for gradient computation has been modified "
        "by an inplace operation: [torch.FloatTensor [1, 2, 2]], which is output 0 of "
        "AsStridedBackward0, is at version 1; expected version 0 instead. Hint: the backtrace "
        "further above shows the operation that failed to compute its gradient. The variable in "
        "question was changed in there or anywhere later. Good luck!/usr/local/lib/python3.7/"
        "dist-packages/torch/autograd/__init__.py:175: UserWarning: Error detected in "
        "BmmBackward0. Traceback of forward call that caused the error:\n"
    )
    first, second = matcher.match(text)[:2]
    assert first.slug == "inplace-modified-variable-needed-for-gradient" and first.score == 1.0
    assert second.slug == "autograd-anomaly-error-detected-in-backward"
    assert "`...Error detected in BmmBackward0. Traceback of forward call" in second.reason
    assert "same error class UserWarning" in second.reason


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        (
            "RuntimeError: CUDA error: an illegal memory access was encountered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the "
            "stacktrace below might be incorrect.\n",
            "cuda-error-illegal-memory-access",
        ),
        (
            "RuntimeError: cuda runtime error (77) : an illegal memory access was encountered at "
            "/pytorch/aten/src/THC/generic/THCTensorCopy.c:20",
            "cuda-error-illegal-memory-access",
        ),
        (
            "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
            "cudnn-status-execution-failed",
        ),
        (
            "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:518, "
            "unhandled system error, NCCL version 2.4.8",
            "nccl-unhandled-system-error",
        ),
        (
            "NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275,"
            " unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
            "nccl-unhandled-system-error",
        ),
        ("Loss is nan, stopping training", "loss-is-nan-stopping-training"),
    ],
    ids=[
        "illegal-memory-access",
        "illegal-memory-access-old",
        "cudnn-execution-failed",
        "nccl-system-error-old",
        "nccl-system-error",
        "loss-is-nan",
    ],
)
def test_errors_the_dataset_did_not_cover_have_records(matcher, text, slug):
    first = matcher.match(text)[0]
    assert first.slug == slug and first.kind == "pattern"


def test_cuda_notes_do_not_make_two_different_cuda_errors_alike(matcher):
    text = (
        "RuntimeError: CUDA error: an unknown thing happened\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"
    )
    assert all(m.slug != "cuda-error-device-side-assert-triggered" for m in matcher.match(text))


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        # ssd.pytorch#447: torch 1.x raised the allocator's failure without "Tried to allocate"
        ("RuntimeError: CUDA error: out of memory", "cuda-out-of-memory-legacy-format"),
        # facebookarchive/loop#36: torch 0.x, THC's wording
        (
            "RuntimeError: cuda runtime error (2) : out of memory at "
            "/b/wheel/pytorch-src/torch/lib/THC/generic/THCStorage.cu:66",
            "cuda-out-of-memory-legacy-format",
        ),
        # skhu101/GauHuman#21: thrust names the CUDA error by its enum
        (
            "RuntimeError: merge_sort: failed to synchronize: cudaErrorIllegalAddress: an illegal "
            "memory access was encountered",
            "cuda-error-illegal-memory-access",
        ),
        # the C++ worker check (torch/csrc/DataLoader.cpp), triggered with the installed torch
        (
            "RuntimeError: DataLoader worker (pid 2804708) exited unexpectedly with exit code 1",
            "dataloader-worker-exited-unexpectedly",
        ),
        # Honminden/GlobalMapNet fixes_and_notices.md: torch 1.8/1.9 printed no SeqNum, and the
        # paste broke the line after the colon
        (
            "Watchdog caught collective operation timeout: \nWorkNCCL(OpType=BROADCAST, "
            "Timeout(ms)=1800000) ran for 1804406 milliseconds before timing out.",
            "nccl-watchdog-collective-timeout",
        ),
        # huggingface/open-r1#620: the issue text was hard-wrapped inside a word
        (
            "[rank2]:[E424 01:11:21.160832730 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=4, OpTy\npe=BROADCAST, NumelIn=112, "
            "NumelOut=112, Timeout(ms)=1800000) ran for 1800010 milliseconds before timing out.",
            "nccl-watchdog-collective-timeout",
        ),
        # pytorch/pytorch#45950: hard-wrapped after "in:"
        (
            "RuntimeError: NCCL error in:\ncaffe2/torch/lib/c10d/ProcessGroupNCCL.cpp:759, "
            "unhandled system error, NCCL\nversion 2.7.3\nncclSystemError: System call (socket, "
            "malloc, munmap, etc) failed.",
            "nccl-unhandled-system-error",
        ),
        # chemprop/chemprop#853: Lightning replaces DDP's message with its own
        (
            "RuntimeError: It looks like your LightningModule has parameters that were not used in "
            "producing the loss returned by training_step. If this is intentional, you must enable "
            "the detection of unused parameters in DDP, either by setting the string value "
            "`strategy='ddp_find_unused_parameters_true'` or by setting the flag in the strategy "
            "with `strategy=DDPStrategy(find_unused_parameters=True)`.",
            "ddp-expected-to-have-finished-reduction",
        ),
    ],
    ids=[
        "cuda-error-out-of-memory",
        "cuda-runtime-error-2",
        "cudaErrorIllegalAddress",
        "worker-pid-exit-code",
        "watchdog-without-seqnum",
        "wrapped-inside-a-word",
        "wrapped-after-a-colon",
        "lightning-unused-parameters",
    ],
)
def test_every_wording_a_message_has_had_matches_its_record_by_pattern(matcher, text, slug):
    first = matcher.match(text)[0]
    assert first.slug == slug and first.kind == "pattern"


def test_a_dataloader_worker_that_exits_is_read_from_a_real_chained_traceback(matcher, tmp_path):
    script = tmp_path / "exits.py"
    script.write_text(
        "import os\n"
        "from torch.utils.data import DataLoader, Dataset\n"
        "class Exits(Dataset):\n"
        "    def __len__(self):\n"
        "        return 4\n"
        "    def __getitem__(self, i):\n"
        "        os._exit(1)\n"
        "if __name__ == '__main__':\n"
        "    for _ in DataLoader(Exits(), num_workers=1):\n"
        "        pass\n"
    )
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert "exited unexpectedly with exit code 1" in run.stderr
    first = matcher.match(run.stderr)[0]
    assert first.slug == "dataloader-worker-exited-unexpectedly" and first.kind == "pattern"
