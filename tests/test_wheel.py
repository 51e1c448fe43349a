"""The wheel ships the schema and the dataset: installed in a fresh venv, validate finds them."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_installed_wheel_validates_its_shipped_dataset(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(dist),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    [wheel] = dist.glob("diagnose-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "diagnose/dataset/schema.json" in names
    assert any(n.startswith("diagnose/dataset/records/") for n in names)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # Dependencies come from this environment (nothing is downloaded); diagnose from the wheel.
    (Path(site) / "_deps_from_test_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    out = subprocess.run(
        [str(env_dir / "bin" / "diagnose"), "dataset", "validate", "--format", "json"],
        cwd=outside,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DIAGNOSE_CACHE_DIR": "off"},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)
    assert data["records"] > 0
    assert Path(data["schema"]).is_relative_to(site), data["schema"]
    assert Path(data["paths"][0]).is_relative_to(site), data["paths"]
