"""Accuracy on the gallery: `diagnose` ranks each buggy script's known fix first.

Every script in examples/expected.yaml runs under the real CLI (`diagnose --format json`, a
subprocess, two at a time). A buggy script must produce an event (or, for a run that stays finite, a silent finding) whose first fix is its
`expected_fix`; a healthy one must produce a clean report with no fix at all. The summary test
prints top-1 / top-3 accuracy over the buggy scripts.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from tests.conftest import EXAMPLES, run_cli

EXPECTED: dict[str, dict] = yaml.safe_load((EXAMPLES / "expected.yaml").read_text())
BUGGY = sorted(name for name, entry in EXPECTED.items() if not entry.get("healthy"))
HEALTHY = sorted(name for name, entry in EXPECTED.items() if entry.get("healthy"))

pytestmark = pytest.mark.slow


def _diagnose(name: str) -> dict:
    result = run_cli("--format", "json", str(EXAMPLES / name))
    assert result.returncode in (0, 1), f"{name}: exit {result.returncode}: {result.stderr[-800:]}"
    report = json.loads(result.stdout)
    report["_exit"] = result.returncode
    return report


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(EXPECTED, pool.map(_diagnose, EXPECTED), strict=True))


def test_every_gallery_script_is_listed_with_a_root_cause():
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    assert scripts == set(EXPECTED)
    assert len(BUGGY) >= 25 and len(HEALTHY) >= 9
    for name in BUGGY:
        entry = EXPECTED[name]
        assert entry["root_cause"] and entry["expected_fix"], name
        assert (EXAMPLES / name).read_text().startswith('"""Root cause: '), name


@pytest.mark.parametrize("name", BUGGY)
def test_buggy_script_gets_its_fix_first(reports, name):
    report = reports[name]
    assert report["_exit"] == 1 and report["status"] in ("nonfinite", "exception", "silent"), name
    ranked = [f["id"] for f in report["fixes"]]
    assert ranked[:1] == [EXPECTED[name]["expected_fix"]], (
        f"{name}: {EXPECTED[name]['root_cause']}; ranked {ranked}; event {report['event']}"
    )


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_script_is_clean_with_no_fix(reports, name):
    report = reports[name]
    assert report["_exit"] == 0, report["event"]
    assert report["status"] == "clean" and report["event"] is None
    assert report["fixes"] == [] and report["symptoms"] == [], report["symptoms"]


def test_accuracy_summary(reports):
    top1 = sum(_rank(reports[n], n) == 0 for n in BUGGY)
    top3 = sum(_rank(reports[n], n) in (0, 1, 2) for n in BUGGY)
    lines = [
        f"gallery accuracy over {len(BUGGY)} buggy scripts: "
        f"top-1 {top1}/{len(BUGGY)} ({top1 / len(BUGGY):.0%}), "
        f"top-3 {top3}/{len(BUGGY)} ({top3 / len(BUGGY):.0%})"
    ]
    for name in BUGGY:
        ranked = [f["id"] for f in reports[name]["fixes"]][:3]
        lines.append(f"  {name:30s} want {EXPECTED[name]['expected_fix']:22s} got {ranked}")
    print("\n" + "\n".join(lines))
    assert top3 == len(BUGGY), "\n".join(lines)


def _rank(report: dict, name: str) -> int | None:
    ranked = [f["id"] for f in report["fixes"]]
    want = EXPECTED[name]["expected_fix"]
    return ranked.index(want) if want in ranked else None


def test_a_healthy_script_ending_with_sys_exit_3_is_clean_and_keeps_its_status(reports):
    report = reports["healthy_exit_status.py"]
    assert report["status"] == "clean" and report["_exit"] == 0
    assert report["exit_code"] == 3 and not report["symptoms"]
