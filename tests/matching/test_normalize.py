"""The normaliser folds what changes between runs, and keeps what names the error."""

from __future__ import annotations

import pytest

from diagnose.matching.normalize import class_relation, normalize


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)",
            "Tried to allocate 20.50 GiB (GPU 3; 79.15 GiB total capacity)",
        ),
        (
            "mat1 and mat2 shapes cannot be multiplied (64x128 and 256x10)",
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        ),
        (
            "found at least two devices, cuda:0 and cpu!",
            "found at least two devices, cpu and cuda:1!",
        ),
        (
            "expected scalar type Float but found Half",
            "expected scalar type BFloat16 but found Double",
        ),
        ("Function 'AddmmBackward0' returned nan", "Function 'MulBackward1' returned nan"),
        ('File "/home/a/train.py", at 0x7f3a2b1c', 'File "/srv/b/run.py", at 0xdeadbeef'),
        ("size [3, 4] vs torch.Size([2, 3])", "size [128, 1, 7] vs torch.Size([9])"),
    ],
)
def test_run_specific_parts_fold_to_the_same_text(a, b):
    assert normalize(a) == normalize(b)


def test_words_that_name_the_error_survive():
    assert normalize("Loss is NaN, inf/nan detected") == "loss is nan, inf/nan detected"


def test_class_relation():
    assert class_relation("torch.cuda.OutOfMemoryError", "OutOfMemoryError") == "same"
    assert class_relation("torch.OutOfMemoryError", "RuntimeError") == "related"
    assert class_relation("ValueError", "RuntimeError") is None
    assert class_relation(None, "RuntimeError") is None


def test_a_cpp_warning_and_the_python_warning_class_are_related():
    assert class_relation("Warning", "UserWarning") == "related"
    assert class_relation("FutureWarning", "Warning") == "related"


def test_an_assertion_condition_is_what_the_assert_is_and_is_not_folded():
    def cuda_assert(condition: str) -> str:
        return (
            "./aten/src/ATen/native/cuda/Kernel.cu:144: operator(): block: [3991,0,0], "
            f"thread: [88,0,0] Assertion `{condition}` failed."
        )

    gather = normalize(cuda_assert('idx_dim >= 0 && idx_dim < index_size && "index out of bounds"'))
    select = normalize(cuda_assert("srcIndex < srcSelectDimSize"))
    assert gather != select and "srcindex < srcselectdimsize" in select
    assert normalize("KeyError: `model.lr` not found") == normalize("KeyError: `x` not found")
