"""``dataset mine`` on trees an attacker shaped: links that loop, FIFOs and devices named like
sources, names that are not UTF-8, and source text full of terminal controls. Every such entry
is skipped with one line, the run ends in bounded time, and nothing raw reaches the output."""

from __future__ import annotations

import json
import os
import threading

from hypothesis import given
from hypothesis import strategies as st

from diagnose.commands.dataset_mine import _line, safe
from diagnose.records.mine import Options, mine
from tests.records.mine.conftest import MYLIB
from tests.untrusted import ATTACKS, assert_no_controls, examples

CHECKS = (MYLIB / "mylib" / "checks.py").read_bytes()
BIDI = "\u202e\u2066\u2069\u202a"
HOSTILE = ("fifo", "self-link", "link-pair", "dangling", "undecodable", "link-to-fifo")


def _plant(tree, kind: str, n: int) -> str | None:
    """One hostile entry in ``tree``; the repository path it is reported under (if any)."""
    name = f"e{n}.py"
    if kind == "fifo":
        os.mkfifo(tree / name)
    elif kind == "self-link":
        os.symlink(name, tree / name)
    elif kind == "link-pair":
        os.symlink(f"e{n}b.py", tree / name)
        os.symlink(name, tree / f"e{n}b.py")
    elif kind == "dangling":
        os.symlink(tree / "missing" / "x.py", tree / name)
    elif kind == "link-to-fifo":
        os.mkfifo(tree / f"e{n}.fifo")
        os.symlink(tree / f"e{n}.fifo", tree / name)
    elif kind == "undecodable":
        raw = os.fsencode(str(tree)) + b"/e" + str(n).encode() + b"\xff\xfe.py"
        with open(raw, "wb") as fh:
            fh.write(CHECKS)
        return None
    return name


def _mine_bounded(source, seconds: float = 20.0):
    """``mine`` in a thread, so that a read that blocks (a FIFO opened) fails the test."""
    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(result=mine(str(source), Options())))
    worker.daemon = True
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "mine blocked (a FIFO opened, or a link loop followed)"
    return box["result"]


@given(kinds=st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=5))
@examples(25)
def test_every_hostile_entry_is_skipped_with_one_line_and_the_good_file_is_mined(
    tmp_path_factory, kinds
):
    tree = tmp_path_factory.mktemp("tree")
    (tree / "setup.py").write_text("")
    (tree / "ok.py").write_bytes(CHECKS)
    planted = [_plant(tree, kind, n) for n, kind in enumerate(kinds)]
    result = _mine_bounded(tree)
    assert {w["record"]["filePath"] for w in result.wrappers} == {"ok.py"}
    skipped = dict(result.skipped)
    for name, kind in zip(planted, kinds, strict=True):
        if name is not None:
            assert name in skipped, (kind, skipped)
    undecodable = [p for p in skipped if "\\xff\\xfe" in p]
    assert len(undecodable) == kinds.count("undecodable")
    for path, why in result.skipped:
        line = f"skipped {safe(path)}: {safe(why)}"
        assert "\n" not in line
        line.encode("utf-8")  # printable: no lone surrogate left in it


def test_a_fifo_named_like_a_source_is_never_opened(tmp_path):
    (tmp_path / "setup.py").write_text("")
    os.mkfifo(tmp_path / "b.py")
    result = _mine_bounded(tmp_path, seconds=10)
    assert dict(result.skipped)["b.py"] == "not a regular file (a FIFO)"


@given(
    text=st.lists(st.sampled_from([*ATTACKS, *BIDI, "ok", " "]), min_size=1, max_size=6).map(
        "".join
    )
)
@examples(40)
def test_json_lines_carry_no_raw_controls_and_read_back_as_the_same_record(text):
    wrapper = {"record": {"errorMessage": text, "filePath": text}, "datasetVersion": "x"}
    line = _line(wrapper)
    assert_no_controls(line, "JSON line")
    assert not any(ch in line for ch in BIDI)
    assert json.loads(line) == wrapper


def test_out_through_a_link_is_refused_and_its_target_kept(tmp_path):
    from tests.conftest import run_cli

    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    os.symlink(victim, tmp_path / "out.jsonl")
    run = run_cli("dataset", "mine", str(MYLIB), "--out", str(tmp_path / "out.jsonl"))
    assert run.returncode == 2 and "is a symbolic link (not followed)" in run.stderr
    assert run.stderr.count("\n") == 1 and victim.read_text() == "keep\n"
