"""The test tiers of conftest.py, run for real: plain pytest collects the fast tier only and
says what it left out; --all-tiers, -m and a named file select what they say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = "tests/fixtures/tiers"


def _collected(*args: str) -> tuple[set[str], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + ["-o", "python_files=tier_case.py", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return set(re.findall(r"::(test_\w+)", proc.stdout)), proc.stdout


def test_plain_pytest_is_the_fast_tier_and_says_what_it_left_out():
    tests, out = _collected(CASES)
    assert tests == {"test_fast"}
    assert "fast tier only: 1 slow, 1 system tests not run" in out
    assert "pytest --all-tiers runs every tier" in out


@pytest.mark.slow
@pytest.mark.parametrize(
    "args,tests",
    [
        (("--all-tiers", CASES), {"test_fast", "test_slow", "test_system"}),
        (("-m", "slow", CASES), {"test_slow"}),
        (("-m", "system", CASES), {"test_system"}),
        (("-m", "not system", CASES), {"test_fast", "test_slow"}),
        ((f"{CASES}/tier_case.py",), {"test_fast", "test_slow", "test_system"}),
    ],
    ids=["all-tiers", "slow", "system", "expression", "named-file"],
)
def test_each_way_of_choosing_selects_its_tiers(args, tests):
    assert _collected(*args)[0] == tests
