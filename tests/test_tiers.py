"""The test tiers of conftest.py, run for real: plain pytest collects the fast tier only and
says what it left out; --all-tiers, -m and a named file select what they say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tier_twins
from simulated_platform import SIMULATE_ENV

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


TWINS = ROOT / "tests" / "fast_twins.toml"


def test_every_slow_or_system_test_names_its_fast_twin_or_why_it_has_none():
    assert tier_twins.problems(ROOT / "tests", TWINS) == []


def test_every_reason_for_no_fast_twin_is_in_the_readme():
    _, reasons = tier_twins.load_table(TWINS)
    readme = (ROOT / "README.md").read_text()
    assert [r for r in reasons if f"`{r}`" not in readme] == []


@pytest.mark.parametrize(
    "change,problem",
    [
        (lambda t: t, None),
        (
            lambda t: t.replace('["tier_case.py::test_system"]\nwhy = "tool"\n', ""),
            "tier_case.py::test_system: in a slow tier, no entry",
        ),
        (
            lambda t: t.replace(
                'twin = ["tier_case.py::test_fast"]', 'twin = ["tier_case.py::test_system"]'
            ),
            "twin tier_case.py::test_system is itself in a slow tier",
        ),
        (
            lambda t: t.replace(
                'twin = ["tier_case.py::test_fast"]', 'twin = ["tier_case.py::test_gone"]'
            ),
            "twin tier_case.py::test_gone does not exist",
        ),
        (lambda t: t.replace('why = "tool"', 'why = "hard"'), "unknown reason 'hard'"),
        (
            lambda t: t.replace('why = "tool"', 'why = "tool"\ntwin = ["tier_case.py::test_fast"]'),
            "needs exactly one of twin or why",
        ),
        (
            lambda t: t + '\n["tier_case.py::test_fast"]\nwhy = "tool"\n',
            "tier_case.py::test_fast: has an entry in twins.toml but is not in a slow tier",
        ),
    ],
    ids=["complete", "missing", "slow-twin", "no-such-twin", "unknown-reason", "both", "stale"],
)
def test_the_twins_check_finds_each_kind_of_gap(tmp_path, change, problem):
    table = tmp_path / "twins.toml"
    table.write_text(change((ROOT / CASES / "twins.toml").read_text()))
    found = tier_twins.problems(ROOT / CASES, table, pattern="tier_case.py")
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0], found


@pytest.mark.slow
def test_the_twins_check_sees_the_tiers_pytest_selects():
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + ["-m", "slow or system", "tests"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    selected = {
        m.group(1) + "::" + m.group(2)
        for m in re.finditer(r"^tests/(test_\w+\.py)::(\w+)", proc.stdout, re.M)
    }
    assert selected == set(tier_twins.tiered_tests(ROOT / "tests"))


# --------------------------------------------------------------------------- fast twins


def _conftest():
    """A private copy of tests/conftest.py (its tier bookkeeping is module state: the copy's
    is not this session's)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "conftest_tiers_copy", ROOT / "tests" / "conftest.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Item:
    def __init__(self, name: str, tier: str | None) -> None:
        self.name, self.tier = name, tier

    def get_closest_marker(self, name: str):
        return object() if name == self.tier else None

    def add_marker(self, _marker) -> None:
        pass


class _Config:
    def __init__(self, args: tuple[str, ...], **options) -> None:
        self.args = list(args)
        self.args_source = pytest.Config.ArgsSource.ARGS
        self.options = {"--unit-only": False, "--all-tiers": False, "markexpr": "", **options}
        self.deselected: list[str] = []
        self.hook = type(
            "Hook",
            (),
            {"pytest_deselected": lambda _s, items: self.deselected.extend(i.name for i in items)},
        )()

    def getoption(self, name: str):
        return self.options[name]


@pytest.mark.parametrize(
    "args,options,tests",
    [
        ((CASES,), {}, {"test_fast"}),
        ((CASES,), {"--all-tiers": True}, {"test_fast", "test_slow", "test_system"}),
        ((CASES,), {"markexpr": "slow"}, {"test_fast", "test_slow", "test_system"}),
        ((f"{CASES}/tier_case.py",), {}, {"test_fast", "test_slow", "test_system"}),
        ((f"{CASES}/tier_case.py::test_slow",), {}, {"test_fast", "test_slow", "test_system"}),
    ],
    ids=["plain", "all-tiers", "expression", "named-file", "named-test"],
)
def test_conftest_keeps_the_tiers_each_way_of_choosing_asks_for(args, options, tests):
    """The fast twin of test_each_way_of_choosing_selects_its_tiers: conftest's hook on the
    three tiers' items, as pytest calls it (with -m, pytest itself then selects by marker:
    conftest must leave every item to it)."""
    items = [_Item("test_fast", None), _Item("test_slow", "slow"), _Item("test_system", "system")]
    config = _Config(args, **options)
    _conftest().pytest_collection_modifyitems(config, items)
    assert {i.name for i in items} == tests
    assert set(config.deselected) == {"test_fast", "test_slow", "test_system"} - tests


def test_the_twins_check_sees_what_pytest_selects_on_every_kind_of_mark(tmp_path):
    """The fast twin of test_the_twins_check_sees_the_tiers_pytest_selects: a decorator, a
    module's pytestmark and a pytest.param's marks, collected by pytest with -m and read by
    tier_twins."""
    (tmp_path / "tier_marks.py").write_text(
        "import pytest\n\n\n"
        "@pytest.mark.slow\ndef test_decorated():\n    pass\n\n\n"
        "@pytest.mark.parametrize('x', [1, pytest.param(2, marks=pytest.mark.system)])\n"
        "def test_one_case(x):\n    pass\n\n\n"
        "def test_fast():\n    pass\n"
    )
    (tmp_path / "tier_module.py").write_text(
        "import pytest\n\npytestmark = [pytest.mark.system]\n\n\ndef test_in_module():\n    pass\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path)]
        + ["-o", "python_files=tier_*.py", "-m", "slow or system", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        # pytest's own reading of marks, on this system as it is: a simulated platform would
        # pass its option to a pytest that has not this suite's conftest to take it
        env={k: v for k, v in os.environ.items() if k != SIMULATE_ENV},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    selected = {
        m.group(1) + "::" + m.group(2)
        for m in re.finditer(r"^(tier_\w+\.py)::(\w+)", proc.stdout, re.M)
    }
    found = tier_twins.tiered_tests(tmp_path, pattern="tier_*.py")
    assert (
        selected
        == set(found)
        == {
            "tier_marks.py::test_decorated",
            "tier_marks.py::test_one_case",
            "tier_module.py::test_in_module",
        }
    )
    assert found["tier_marks.py::test_one_case"].whole is False
