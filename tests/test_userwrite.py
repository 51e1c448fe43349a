"""Changing a user's file: read on purpose, replaced atomically, never through a link."""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose.errors import UsageError
from diagnose.safetext import one_line
from diagnose.userwrite import (
    OutputExists,
    create_new_file,
    read_user_file,
    replace_user_file,
    write_output,
)
from tests.untrusted import examples


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(b"x = 1\r\n")
    path.chmod(0o751)
    return path


def test_replace_keeps_mode_and_leaves_only_the_file(script, tmp_path):
    original = read_user_file(script)
    replace_user_file(original, b"x = 2\r\n")
    assert script.read_bytes() == b"x = 2\r\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert os.listdir(tmp_path) == ["train.py"]


def test_a_symlink_read_on_purpose_is_followed_and_kept(script, tmp_path):
    link = tmp_path / "link.py"
    link.symlink_to(script)
    original = read_user_file(link)
    assert original.path == script.resolve()
    replace_user_file(original, b"x = 3\n")
    assert link.is_symlink() and script.read_bytes() == b"x = 3\n"


def test_a_file_swapped_for_a_symlink_after_reading_is_not_written_through(script, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    original = read_user_file(script)
    planted = tmp_path / "planted"
    planted.symlink_to(victim)
    os.replace(planted, script)
    with pytest.raises(UsageError, match="changed while the patch was being made"):
        replace_user_file(original, b"x = 2\n")
    assert victim.read_text() == "keep me\n"
    assert script.is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["train.py", "victim.txt"]


def test_a_file_edited_after_reading_is_not_overwritten(script):
    original = read_user_file(script)
    script.write_bytes(b"x = 1  # edited meanwhile, longer\n")
    with pytest.raises(UsageError, match="nothing written"):
        replace_user_file(original, b"x = 2\n")
    assert script.read_bytes() == b"x = 1  # edited meanwhile, longer\n"


@pytest.mark.parametrize(
    ("make", "kind"),
    [(os.mkfifo, "a FIFO"), (os.mkdir, "a folder")],
)
def test_only_regular_files_are_read(tmp_path, make, kind):
    path = tmp_path / "train.py"
    make(path)
    with pytest.raises(UsageError) as caught:
        read_user_file(path)
    assert str(caught.value) == f"{path}: not a regular file ({kind})"


def test_a_symlink_loop_gets_one_line(tmp_path):
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    with pytest.raises(UsageError, match="cannot resolve"):
        read_user_file(tmp_path / "a.py")


def test_a_new_file_skips_every_name_already_taken(tmp_path):
    (tmp_path / "taken").write_text("old\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "link").symlink_to(tmp_path / "taken")
    names = ["taken", "folder", "dangling", "link", "free"]
    old = os.umask(0o077)
    try:
        made = create_new_file(tmp_path, names, b"data", 0o644)
    finally:
        os.umask(old)
    assert made == tmp_path / "free"
    assert made.read_bytes() == b"data"
    assert stat.S_IMODE(made.stat().st_mode) == 0o644
    assert (tmp_path / "taken").read_text() == "old\n"
    assert not os.path.lexists(tmp_path / "nowhere")


def test_a_new_file_with_every_name_taken_is_refused(tmp_path):
    (tmp_path / "a").write_text("")
    with pytest.raises(UsageError, match="every name for the new file is taken"):
        create_new_file(tmp_path, ["a"], b"data", 0o600)


def test_names_are_shown_on_one_line_without_terminal_controls():
    # the one safe-text rule: escape sequences go whole, other controls are shown, one line
    assert one_line("a\nb\x1b[31m\u202e.py") == "a b\\u202e.py"


# --- outputs a command was asked to produce (exports, mined skeletons) -------------------------

OCCUPANTS = (
    "nothing",
    "own file",
    "symlink to own file",
    "dangling symlink",
    "fifo",
    "folder",
    "other user's file",
)


def _occupy(folder, what: str):
    """Put ``what`` at ``folder/out.md``; the file outside it that must never change, if any."""
    path = folder / "out.md"
    victim = folder / "victim.txt"
    victim.write_text("victim\n")
    if what == "own file":
        path.write_text("mine\n")
    elif what == "symlink to own file":
        os.symlink(victim, path)
    elif what == "dangling symlink":
        os.symlink(folder / "created-elsewhere", path)
    elif what == "fifo":
        os.mkfifo(path)
    elif what == "folder":
        path.mkdir()
    elif what == "other user's file":
        path.write_text("theirs\n")
        os.chown(path, 4321, 4321)
    return path, victim


@given(what=st.sampled_from(OCCUPANTS), replace=st.booleans(), data=st.binary(max_size=64))
@examples(60)
def test_an_output_is_new_or_replaces_only_the_users_own_file_when_asked(
    tmp_path_factory, what, replace, data
):
    if what == "other user's file" and os.geteuid() != 0:
        return  # giving a file away needs root
    folder = tmp_path_factory.mktemp("out")
    path, victim = _occupy(folder, what)
    before = {p.name for p in folder.iterdir()}
    try:
        written = write_output(path, data, replace=replace)
    except OutputExists:
        assert what == "own file" and not replace
        assert path.read_text() == "mine\n"
    except UsageError as exc:
        assert what not in ("nothing", "own file") and "\n" not in str(exc)
        if what == "other user's file":
            assert path.read_text() == "theirs\n" and os.stat(path).st_uid == 4321
    else:
        assert what == "nothing" or (what == "own file" and replace)
        assert written == path and path.read_bytes() == data and not path.is_symlink()
    assert victim.read_text() == "victim\n"
    assert not (folder / "created-elsewhere").exists()
    assert {p.name for p in folder.iterdir()} <= before | {"out.md"}  # no temporary left


def test_a_replaced_output_keeps_the_files_mode(tmp_path):
    path = tmp_path / "out.md"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    write_output(path, b"new\n", replace=True)
    assert path.read_text() == "new\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o640
