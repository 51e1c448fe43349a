"""What SOURCE may be: folders, package folders, wheels, sdists; bounded and tolerant reads."""

from __future__ import annotations

import os
import tarfile
import zipfile

import pytest

from diagnose.errors import UsageError
from diagnose.records.mine import Options, mine
from tests.records.mine.conftest import MYLIB

CHECKS = (MYLIB / "mylib" / "checks.py").read_bytes()


def _paths(source, **options) -> set[str]:
    return {w["record"]["filePath"] for w in mine(str(source), Options(**options)).wrappers}


def test_a_checkout_keeps_its_paths_and_a_package_folder_starts_at_the_package(tmp_path):
    assert _paths(MYLIB) == {"mylib/checks.py"}
    assert _paths(MYLIB / "mylib") == {"mylib/checks.py"}
    src = tmp_path / "repo" / "src" / "mylib" / "sub"
    src.mkdir(parents=True)
    (src.parent / "__init__.py").write_text("")
    (src / "__init__.py").write_text("")
    (src / "checks.py").write_bytes(CHECKS)
    (tmp_path / "repo" / "pyproject.toml").write_text("")
    assert _paths(tmp_path / "repo") == {"src/mylib/sub/checks.py"}
    assert _paths(src) == {"mylib/sub/checks.py"}  # a subpackage: from the top package
    assert _paths(src, prefix="src/") == {"src/mylib/sub/checks.py"}


def test_a_wheel_is_read_from_the_archive_without_its_metadata(tmp_path):
    wheel = tmp_path / "mylib-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("mylib/__init__.py", "")
        zf.writestr("mylib/checks.py", CHECKS)
        zf.writestr("mylib/version.py", "git_version = '" + "ab" * 20 + "'\n")
        zf.writestr("mylib-0.1.dist-info/METADATA", "raise ValueError('not code')")
    result = mine(str(wheel), Options(repo="me/mylib"))
    assert {w["record"]["filePath"] for w in result.wrappers} == {"mylib/checks.py"}
    assert result.commit == "ab" * 20  # the package records its own commit
    assert result.wrappers[0]["record"]["githubUrl"].startswith(
        f"https://github.com/me/mylib/blob/{'ab' * 20}/"
    )
    assert any("--prefix" in note for note in result.notes)


def test_an_sdist_drops_its_top_folder(tmp_path):
    sdist = tmp_path / "mylib-0.1.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        tf.add(MYLIB / "mylib" / "checks.py", "mylib-0.1/src/mylib/checks.py")
        link = tarfile.TarInfo("mylib-0.1/src/mylib/link.py")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(link)
    result = mine(str(sdist), Options())
    assert {w["record"]["filePath"] for w in result.wrappers} == {"src/mylib/checks.py"}
    assert result.skipped == [("src/mylib/link.py", "not a regular file in the archive (a link?)")]


def test_symlinks_are_never_followed_and_big_or_broken_files_are_skipped_in_one_line(tmp_path):
    tree = tmp_path / "lib"
    tree.mkdir()
    (tree / "setup.py").write_text("")
    (tree / "ok.py").write_bytes(CHECKS)
    outside = tmp_path / "outside.py"
    outside.write_text("raise ValueError('outside the tree, never read')\n")
    os.symlink(outside, tree / "escape.py")
    os.symlink(tmp_path, tree / "loop")
    (tree / "big.py").write_text("x = 1\n" * 1000)
    (tree / "bad.py").write_text("def broken(:\n    raise ValueError('never')\n")
    (tree / "latin.py").write_bytes(b"# -*- coding: ascii -*-\nx = '\xe9'\n")
    (tree / "bad.cpp").write_bytes(b'\xff\xfe TORCH_CHECK(false, "x");')
    result = mine(str(tree), Options(max_file_size=5000))
    skipped = dict(result.skipped)
    assert skipped["escape.py"] == "a symbolic link out of the tree (not followed)"
    assert skipped["big.py"].endswith("over the 5000-byte cap")
    assert skipped["bad.py"].startswith("does not parse (line 1:")
    assert skipped["latin.py"].startswith("not text in its encoding")
    assert skipped["bad.cpp"] == "not UTF-8 text (byte 0)"
    assert {w["record"]["filePath"] for w in result.wrappers} == {"ok.py"}


def test_include_exclude_and_kind_filters(tmp_path):
    assert _paths(MYLIB, include=("*/other.py",)) == set()
    assert _paths(MYLIB, exclude=("mylib/*",)) == set()
    assert _paths(MYLIB.parent, kinds=frozenset({"cpp"})) == {"csrc/checks.cpp"}


def test_an_unknown_source_or_a_broken_archive_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no installed package of that name"):
        mine("no_such_package_anywhere_xyz", Options())
    bad = tmp_path / "broken.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(UsageError, match="not a readable zip archive"):
        mine(str(bad), Options())


def test_an_installed_package_is_found_by_its_import_name():
    result = mine("json", Options(kinds=frozenset({"raise"})))
    assert result.files_read > 0
    assert all(w["record"]["filePath"].startswith("json/") for w in result.wrappers)


def test_a_prefix_that_the_checkout_already_holds_is_refused_not_doubled(tmp_path):
    # a src/ layout checkout (real file: lightning_utilities' rank_zero.py): its paths
    # already start with src/, so --prefix src/ would write src/src/... URLs
    import importlib.util
    from pathlib import Path

    real = Path(importlib.util.find_spec("lightning_utilities.core.rank_zero").origin)
    package = tmp_path / "repo" / "src" / "lightning_utilities" / "core"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "rank_zero.py").write_bytes(real.read_bytes())
    (tmp_path / "repo" / "pyproject.toml").write_text("")
    assert "src/lightning_utilities/core/rank_zero.py" in _paths(tmp_path / "repo")
    with pytest.raises(UsageError, match="already has src/ at its top"):
        _paths(tmp_path / "repo", prefix="src/")
    assert "src/lightning_utilities/core/rank_zero.py" in _paths(
        tmp_path / "repo" / "src" / "lightning_utilities", prefix="src/"
    )
