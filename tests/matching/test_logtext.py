"""Finding the error lines in what users paste: tracebacks, chained exceptions, noisy logs."""

from __future__ import annotations

from diagnose.matching.logtext import clean_lines, extract_error_lines
from tests.matching.pasted import FRAMES_THEN_RAISE, WATCHDOG

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


# -- which line is the exception of a traceback ------------------------------------------------


def test_prose_after_the_frames_is_not_the_exception_and_the_raised_message_stands_in():
    lines = extract_error_lines(FRAMES_THEN_RAISE + "Thank you in advance.\n")
    assert [(e.role, e.exc_class, e.message) for e in lines] == [
        ("raised", "RuntimeError", "grad can be implicitly created only for scalar outputs")
    ]


def test_a_cut_off_exception_line_is_final_and_the_raised_message_comes_next():
    lines = extract_error_lines(FRAMES_THEN_RAISE + "RuntimeError: grad can be implicit\n")
    assert [(e.role, e.message) for e in lines] == [
        ("final", "grad can be implicit"),
        ("raised", "grad can be implicitly created only for scalar outputs"),
    ]


def test_the_raised_message_is_not_repeated_when_the_exception_line_says_it():
    text = (
        FRAMES_THEN_RAISE + "RuntimeError: grad can be implicitly created only for scalar outputs\n"
    )
    assert [e.role for e in extract_error_lines(text)] == ["final"]


def test_only_a_plain_string_literal_in_the_last_frame_counts_as_raised():
    text = """\
Traceback (most recent call last):
  File "C:\\\\envs\\\\lib\\\\site-packages\\\\torch\\\\nn\\\\modules\\\\module.py", line 1223, in load_state_dict
    raise RuntimeError('Error(s) in loading state_dict for {}:\\n\\t{}'.format(
"""
    assert all(e.role != "raised" for e in extract_error_lines(text))
    earlier_frame = FRAMES_THEN_RAISE + '  File "train.py", line 9, in <module>\n    main()\n'
    assert all(e.role != "raised" for e in extract_error_lines(earlier_frame))


IPYTHON_CUT = """\
RuntimeError                              Traceback (most recent call last)
<ipython-input-14-82ec354902a5> in <module>()
      6     epoch += 1
----> 8     train_epoch()

~/anaconda2/envs/tbd-env/lib/python3.6/site-packages/torch/tensor.py in backward(self, gradient, retain_graph, create_graph)
     91                 products. Defaults to ``False``.
---> 93         torch.autograd.backward(self, gradient, retain_graph, create_graph)
"""


def test_ipython_header_is_not_the_message_when_the_message_is_missing():
    (line,) = extract_error_lines(IPYTHON_CUT)
    assert (line.role, line.exc_class, line.text, line.message) == (
        "final",
        "RuntimeError",
        "RuntimeError",
        "",
    )


def test_ipython_traceback_ends_at_the_line_naming_its_class():
    text = IPYTHON_CUT + "\nRuntimeError: expected scalar type Float but found Double\n"
    (line,) = extract_error_lines(text)
    assert (line.role, line.message) == ("final", "expected scalar type Float but found Double")


def test_original_traceback_of_a_dataloader_worker_holds_the_final_error():
    text = """\
RuntimeError: Caught RuntimeError in DataLoader worker process 0.
Original Traceback (most recent call last):
  File "C:\\\\envs\\\\endo\\\\lib\\\\site-packages\\\\torch\\\\utils\\\\data\\\\_utils\\\\worker.py", line 302, in _worker_loop
    data = fetcher.fetch(index)
RuntimeError: stack expects each tensor to be equal size, but got [24, 32, 64] at entry 0 and [24, 64, 32] at entry 1
"""
    lines = extract_error_lines(text)
    assert lines[0].role == "final" and lines[0].message.startswith("stack expects")
    assert lines[1].message == "Caught RuntimeError in DataLoader worker process 0."


# -- where a message ends -----------------------------------------------------------------------

SIZE_MISMATCH_LINES = (
    "        size mismatch for head.cls_preds.0.weight: copying a param with shape"
    " torch.Size([80, 96, 1, 1]) from checkpoint, the shape in current model is"
    " torch.Size([6, 96, 1, 1]).\n"
    "        size mismatch for head.cls_preds.0.bias: copying a param with shape"
    " torch.Size([80]) from checkpoint, the shape in current model is torch.Size([6]).\n"
)


def test_indented_lines_continue_a_message_that_has_no_traceback_header():
    (line,) = extract_error_lines(
        "RuntimeError: Error(s) in loading state_dict for YOLOX:\n" + SIZE_MISMATCH_LINES
    )
    assert line.role == "final" and line.text.count("size mismatch for") == 2


def test_tab_indented_list_continues_a_message_pasted_with_a_leading_quote():
    text = (
        'RuntimeError: "Error(s) in loading state_dict for CascadedNet:\n'
        + SIZE_MISMATCH_LINES.replace("        ", "\t")
    )
    (line,) = extract_error_lines(text)
    assert line.exc_class == "RuntimeError" and "\tsize mismatch for head" in line.text


def test_a_log_line_or_progress_bar_after_the_exception_is_not_part_of_its_message():
    text = """\
Traceback (most recent call last):
  File "train.py", line 171, in <module>
    loss = criterion(pred.view(-1, pred.size(2)), question.view(-1))
ValueError: Expected input batch_size (1216) to match target batch_size (1280)
Epoch 12: : 600it [11:53,  1.19s/it, loss=nan, v_num=0, val_loss=0.054]NaN or Inf found in input tensor.
Monitored metric val_rec_loss = nan is not finite. Previous best value was 0.045. Signaling Trainer to stop.
"""
    lines = extract_error_lines(text)
    assert lines[0].text == (
        "ValueError: Expected input batch_size (1216) to match target batch_size (1280)"
    )
    assert {e.role for e in lines[1:]} == {"log"}


def test_cuda_notes_continue_the_message_but_a_frame_line_does_not():
    text = (
        "RuntimeError: CUDA error: device-side assert triggered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"
        "ValueError: Expected input batch_size (79) to match target batch_size (47).\n"
        "    return torch._C._nn.cross_entropy_loss(input, target, weight)\n"
    )
    first, second = sorted(extract_error_lines(text), key=lambda e: e.exc_class)
    assert first.text.count("\n") == 2 and "CUDA_LAUNCH_BLOCKING" in first.text
    assert "\n" not in second.text


def test_a_new_traceback_ends_the_message_before_it():
    text = (
        "RuntimeError: first\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "ValueError: second\n"
    )
    assert {e.text for e in extract_error_lines(text)} == {
        "RuntimeError: first",
        "ValueError: second",
    }


# -- logs, bars and markdown ----------------------------------------------------------------------


def test_an_error_line_of_a_cpp_log_is_kept_beside_the_lines_after_it():
    texts = [e.text for e in extract_error_lines(WATCHDOG)]
    assert any("Watchdog caught collective operation timeout" in t for t in texts)
    assert any("detected by watchdog" in t for t in texts)


def test_the_text_after_a_tqdm_bar_on_the_same_line_is_what_the_line_says():
    text = (
        "Epoch 0:   6%|██        | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6, "
        "v_num=95nc][E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=96120, OpType=ALLREDUCE, Timeout(ms)=1800000) "
        "ran for 25624887 milliseconds before timing out.\n"
        "Steps:   0%|          | 0/800 [00:00<?, ?it/s]Traceback (most recent call last):\n"
        '  File "train_dreambooth.py", line 812, in <module>\n'
        "ValueError: Attempting to unscale FP16 gradients.\n"
    )
    cleaned = clean_lines(text)
    assert cleaned[0].startswith("[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught")
    assert cleaned[1] == "Traceback (most recent call last):"
    assert extract_error_lines(text)[0].role == "final"


def test_markdown_backticks_around_a_message_do_not_hide_its_class():
    text = (
        "`RuntimeError: Expected all tensors to be on the same device, but found at least two "
        "devices, cpu and cuda:0! (when checking argument for argument index in method "
        "wrapper__index_select)`"
    )
    (line,) = extract_error_lines(text)
    assert line.exc_class == "RuntimeError" and line.role == "final"
    assert not line.text.endswith("`")
    spanning = (
        '`python3.8/site-packages/torch/autograd/__init__.py", line 130, in backward\n'
        "RuntimeError: Function 'DivBackward0' returned nan values in its 1th output.`\n"
    )
    assert clean_lines(spanning)[1].endswith("1th output.")


def test_backticks_that_torch_prints_inside_a_message_are_kept():
    line = (
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling "
        "`cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`"
    )
    assert clean_lines(line) == [line]
    assert clean_lines("```python\n" + line + "\n```") == ["", line, ""]


def test_a_warning_glued_to_the_end_of_an_exception_line_is_a_line_of_its_own():
    text = (
        "RuntimeError: one of the variables needed for gradient computation has been modified "
        "by an inplace operation: [torch.FloatTensor [1, 2, 2]], which is output 0 of "
        "AsStridedBackward0, is at version 1; expected version 0 instead. Good luck!"
        "/usr/local/lib/python3.7/dist-packages/torch/autograd/__init__.py:175: UserWarning: "
        "Error detected in BmmBackward0. Traceback of forward call that caused the error:\n"
    )
    lines = extract_error_lines(text)
    assert [(e.role, e.exc_class) for e in lines] == [
        ("final", "RuntimeError"),
        ("warning", "UserWarning"),
    ]
    assert lines[0].text.endswith("Good luck!")


def test_a_one_line_message_with_log_words_is_the_message():
    (line,) = extract_error_lines("cuda runtime error (59): device-side assert triggered\n")
    assert line.role == "message"


def test_colab_and_ipython_8_frames_are_read_up_to_the_exception_line():
    colab = """\
RuntimeError                              Traceback (most recent call last)
[<ipython-input-81-5551546cf2e9>](https://localhost:8080/#) in <cell line: 7>()
----> 7 inputs, targets = next(data_iter)

7 frames
[/usr/local/lib/python3.10/dist-packages/torch/utils/data/_utils/collate.py](https://localhost:8080/#) in collate_tensor_fn(batch, collate_fn_map)
--> 214     return torch.stack(batch, 0, out=out)

RuntimeError: stack expects each tensor to be equal size, but got [5] at entry 0 and [1] at entry 1
"""
    ipython8 = """\
RuntimeError                              Traceback (most recent call last)
Cell In[3], line 5
      3 x = torch.randn(2, 3)
----> 5 model(x)
File ~/miniconda3/lib/python3.10/site-packages/torch/nn/modules/linear.py:114, in Linear.forward(self, input)
    113 def forward(self, input: Tensor) -> Tensor:
--> 114     return F.linear(input, self.weight, self.bias)

RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)
"""
    assert [e.role for e in extract_error_lines(colab)] == ["final"]
    assert extract_error_lines(colab)[0].message.startswith("stack expects each tensor")
    (line,) = extract_error_lines(ipython8)
    assert line.message == "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"


def test_a_cut_ipython_traceback_does_not_take_a_later_unrelated_line():
    text = IPYTHON_CUT + "Epoch 3 finished\nRuntimeError: something later\n"
    lines = extract_error_lines(text)
    assert ("RuntimeError", "") in [(e.text, e.message) for e in lines]
    assert all(e.message != "something later" or e.role != "final" for e in lines)


def test_very_long_lines_are_read_only_up_to_the_line_bound():
    # The work per line is bounded by what the patterns see, not by the line's length
    # (the time it takes is the matcher benchmark's business, not a test's).
    from diagnose.matching.logtext import MAX_LINE_CHARS

    hostile = [
        "it/s [ " + "1111111 " * 100_000,
        "RuntimeError: x a" + "/a" * 200_000 + ".py:1: UserWarning: y",
        "`" + "Error." * 100_000,
        "RuntimeError: x\n  " + "a, " * 200_000,
    ]
    for text in hostile:
        for line in extract_error_lines(text):
            assert len(line.text) <= 2 * MAX_LINE_CHARS


def test_the_line_after_an_error_line_is_kept_as_its_possible_wrap():
    # pytorch/pytorch#45950: the message was broken after "in:" when it was pasted
    text = (
        "RuntimeError: NCCL error in:\n"
        "caffe2/torch/lib/c10d/ProcessGroupNCCL.cpp:759, unhandled system error, NCCL\n"
        "version 2.7.3\n"
    )
    first = extract_error_lines(text)[0]
    assert first.first_line == "RuntimeError: NCCL error in:"
    assert (
        first.wrap == "caffe2/torch/lib/c10d/ProcessGroupNCCL.cpp:759, unhandled system error, NCCL"
    )


def test_a_line_that_starts_something_of_its_own_is_no_wrap():
    for following in (
        "ValueError: a second error",
        "/usr/lib/python3/torch/autograd/__init__.py:175: UserWarning: Error detected in MmBackward0",
        "[E ProcessGroupNCCL.cpp:737] [Rank 3] Watchdog caught collective operation timeout",
        "Traceback (most recent call last):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57",
        "    indented: a continuation or a frame, not a wrap",
    ):
        lines = extract_error_lines("RuntimeError: something failed\n" + following)
        (line,) = [e for e in lines if e.first_line == "RuntimeError: something failed"]
        assert line.wrap == ""


def test_a_paste_indented_as_a_whole_is_read_as_its_traceback():
    pasted = (
        "    Traceback (most recent call last):\n"
        '      File "train.py", line 3, in <module>\n'
        "        loss.backward()\n"
        "    RuntimeError: element 0 of tensors does not require grad\n"
    )
    first = extract_error_lines(pasted)[0]
    assert (first.role, first.exc_class) == ("final", "RuntimeError")
    assert first.message == "element 0 of tensors does not require grad"


PARENT_THEN_CHILD_ECHO = """\
Traceback (most recent call last):
  File "train.py", line 40, in <module>
    for batch in loader:
  File "C:\\envs\\t\\lib\\multiprocessing\\reduction.py", line 60, in dump
    ForkingPickler(file, protocol).dump(obj)
AttributeError: Can't pickle local object 'main.<locals>.<lambda>'
Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "C:\\envs\\t\\lib\\multiprocessing\\spawn.py", line 116, in spawn_main
    exitcode = _main(fd, parent_sentinel)
  File "C:\\envs\\t\\lib\\multiprocessing\\spawn.py", line 126, in _main
    self = reduction.pickle.load(from_parent)
EOFError: Ran out of input
"""


def test_a_spawned_childs_echo_never_hides_its_parents_error():
    lines = extract_error_lines(PARENT_THEN_CHILD_ECHO)
    assert [(e.exc_class, e.role) for e in lines] == [
        ("AttributeError", "final"),
        ("EOFError", "exception"),
    ]


def test_the_echo_printed_first_or_beside_a_headerless_parent_is_not_final_either():
    parent, child = PARENT_THEN_CHILD_ECHO.split("AttributeError: Can't pickle local object")
    child_first = child.split("\n", 1)[1] + parent + "AttributeError: Can't pickle x"
    assert extract_error_lines(child_first)[0].exc_class == "AttributeError"
    headerless = PARENT_THEN_CHILD_ECHO.replace("Traceback (most recent call last):\n", "", 1)
    assert extract_error_lines(headerless)[0].exc_class == "AttributeError"


def test_a_childs_echo_alone_and_a_childs_own_error_stay_final():
    child = PARENT_THEN_CHILD_ECHO.split("'main.<locals>.<lambda>'\n", 1)[1]
    assert extract_error_lines(child)[0].exc_class == "EOFError"
    own = PARENT_THEN_CHILD_ECHO.replace(
        "EOFError: Ran out of input",
        "RuntimeError: An attempt has been made to start a new process",
    )
    assert extract_error_lines(own)[0].exc_class == "RuntimeError"


def test_a_traceback_printed_after_a_shell_prompt_is_read_as_one():
    text = '(torch14) D:\\fcdd>Traceback (most recent call last):\n  File "a.py", line 1\nKeyError: 3\n'
    assert [(e.exc_class, e.role) for e in extract_error_lines(text)] == [("KeyError", "final")]


def test_mpirun_and_horovod_tagged_output_loses_its_rank_tags():
    text = (
        "[1,0]<stdout>:/usr/lib/horovod/torch/__init__.py:20: DeprecationWarning: old\n"
        "[1,0]<stderr>:RuntimeError: DataLoader worker (pid 9) is killed by signal: Bus error.\n"
    )
    assert (
        clean_lines(text)[1]
        == "RuntimeError: DataLoader worker (pid 9) is killed by signal: Bus error."
    )
    assert extract_error_lines(text)[0].exc_class == "RuntimeError"


COMPILE_WRAPPED = """\
Traceback (most recent call last):
  File "train.py", line 30, in <module>
    out = compiled(x)
torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:
ImportError: cannot import name 'triton_key' from 'triton.compiler.compiler'

Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information
"""


def test_the_exception_under_a_backends_raised_line_is_the_final_one():
    lines = extract_error_lines(COMPILE_WRAPPED)
    assert [(e.exc_class, e.role) for e in lines[:2]] == [
        ("ImportError", "final"),
        ("torch._dynamo.exc.BackendCompilerFailed", "chained"),
    ]


def test_a_raised_line_with_nothing_under_it_stays_final():
    text = COMPILE_WRAPPED.replace("ImportError: cannot import name 'triton_key'", "")
    assert extract_error_lines(text)[0].exc_class == "torch._dynamo.exc.BackendCompilerFailed"


def test_the_source_line_python_prints_under_a_warning_is_not_read_as_a_log_line():
    text = (
        "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py:617: UserWarning:"
        " This DataLoader will create 8 worker processes in total. Our suggested max number of"
        " worker in current system is 2.\n"
        "  warnings.warn(_create_warning_msg(\n"
        "  warnings.warn('nan loss skipped')\n"
    )
    lines = extract_error_lines(text)
    assert [e.role for e in lines] == ["warning"]
    assert "warnings.warn" not in lines[0].text
