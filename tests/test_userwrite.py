"""Changing a user's file: read on purpose, replaced atomically, never through a link."""

from __future__ import annotations

import os
import stat

import pytest

from diagnose.errors import UsageError
from diagnose.safetext import one_line
from diagnose.userwrite import create_new_file, read_user_file, replace_user_file


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
