"""Finding the error lines in what users paste: tracebacks, chained exceptions, noisy logs."""

from __future__ import annotations

from diagnose.matching.logtext import clean_lines, extract_error_lines

CHAINED = """\
Traceback (most recent call last):
  File "/data/loader.py", line 41, in __getitem__
    x = self.items[idx]
IndexError: list index out of range

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "train.py", line 88, in <module>
    batch = next(it)
RuntimeError: Caught IndexError in DataLoader worker process 0.
"""

OOM_WITH_CPP = """\
Traceback (most recent call last):
  File "train.py", line 12, in <module>
    out = model(x)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 3.19 MiB is free.
Exception raised from malloc at /pytorch/c10/cuda/CUDACachingAllocator.cpp:1234 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f0 in libc10.so)
frame #1: <unknown function> + 0x2b1c (0x7f1 in libc10_cuda.so)
"""


def test_final_exception_comes_first_and_root_cause_second():
    lines = extract_error_lines(CHAINED)
    assert [(e.exc_class, e.role) for e in lines] == [
        ("RuntimeError", "final"),
        ("IndexError", "root cause"),
    ]
    assert lines[0].message == "Caught IndexError in DataLoader worker process 0."


def test_module_qualified_class_and_cpp_frames_are_not_part_of_the_message():
    (line,) = extract_error_lines(OOM_WITH_CPP)
    assert line.exc_class == "torch.OutOfMemoryError"
    assert line.message.startswith("CUDA out of memory. Tried to allocate 20.00 MiB.")
    assert "frame #0" not in line.text and "Exception raised from" not in line.text


def test_ansi_colours_progress_bars_and_rank_prefixes_are_cleaned():
    text = (
        "\x1b[31mEpoch 0:  10%|#         | 1/10 [00:01<00:09, 1.0it/s]\rEpoch 0:  20%|##"
        "        | 2/10 [00:02<00:08, 1.0it/s, loss=nan]\x1b[0m\n"
        "[rank0]: RuntimeError: boom\n"
    )
    assert [line for line in clean_lines(text) if line] == [
        "Epoch 0:  20%|##        | 2/10 [00:02<00:08, 1.0it/s, loss=nan]",
        "RuntimeError: boom",
    ]
    roles = {(e.exc_class, e.role) for e in extract_error_lines(text)}
    assert ("RuntimeError", "final") in roles
    assert (None, "log") in roles  # the bar's final state says loss=nan


def test_warning_and_log_lines_in_a_log_are_found():
    text = (
        "step 10 loss 2.3\n"
        "/x/site-packages/torch/amp/grad_scaler.py:3: UserWarning: something odd\n"
        "[2024-05-01 10:00:00,000] [INFO] [deepspeed] OVERFLOW! Rank 0 Skipping step.\n"
        "step 11 loss 2.2\n"
    )
    found = {(e.role, e.exc_class) for e in extract_error_lines(text)}
    assert found == {("warning", "UserWarning"), ("log", None)}


def test_a_plain_message_is_its_own_query():
    (line,) = extract_error_lines("  CUDA out of memory  \n")
    assert (line.text, line.role, line.exc_class) == ("CUDA out of memory", "message", None)
