"""Files diagnose writes for others to read (reports) are replaced whole, never rewritten
in place: a reader sees the old content or the new, never half of either."""

from __future__ import annotations

import os
import stat
import threading

from diagnose.atomic import write_atomic


def test_the_new_content_replaces_the_file_rather_than_overwriting_it(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old report\n")
    reader_view = tmp_path / "seen-by-a-reader"
    os.link(path, reader_view)  # what a reader that opened the old file holds
    write_atomic(path, "new report\n")
    assert path.read_text() == "new report\n"
    assert reader_view.read_text() == "old report\n", "the old file was never touched"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "seen-by-a-reader"]


def test_the_file_keeps_its_permissions_and_a_link_to_it_stays_a_link(tmp_path):
    real = tmp_path / "reports" / "r.json"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in real.parent.iterdir()) == ["r.json"]


def test_a_stream_is_written_to_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_atomic(fifo, "a report\n")
    reader.join(timeout=30)
    assert got == ["a report\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
