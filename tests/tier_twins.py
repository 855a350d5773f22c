"""Which tests sit in a slow tier, and whether each names its fast twin or why it has none.

Issue 45: the fast tier (plain ``pytest``) should catch what the slow tiers catch wherever a
fast test can (a recorded trace, a fake tree, one representative case in process instead of a
live run). ``tests/fast_twins.toml`` holds one entry per test function marked ``slow`` or
``system`` (by a decorator, a ``pytest.param(..., marks=...)`` or the module's
``pytestmark``), keyed ``test_file.py::test_name``, with either

- ``twin = ["test_file.py::test_name", ...]``: fast tests that fail on the same bugs, or
- ``why = "<reason>"``: one of the reasons in the file's ``[reasons]`` table, each a sentence
  the README's test section repeats; ``note`` may say more about the one test.

:func:`problems` lists what is wrong with a tests directory and its table; the fast test in
``test_tiers.py`` asserts there is nothing, and a slow one checks that the markers found here
are the ones pytest itself selects.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import tomllib

TIERS = frozenset({"slow", "system"})


@dataclass(frozen=True)
class TieredTest:
    """A test function and how it reaches a slow tier: ``whole`` when every case of it is
    slow or system, False when only some ``pytest.param`` cases are."""

    key: str
    whole: bool


def _marks(node: ast.AST) -> set[str]:
    """Tier marker names (``slow``, ``system``) written anywhere in ``node`` as
    ``pytest.mark.<name>``."""
    found = set()
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and sub.attr in TIERS
            and isinstance(sub.value, ast.Attribute)
            and sub.value.attr == "mark"
        ):
            found.add(sub.attr)
    return found


def tiered_tests(tests_dir: Path, pattern: str = "test_*.py") -> dict[str, TieredTest]:
    """Every test function of ``tests_dir/pattern`` in a slow tier, keyed
    ``file.py::name``."""
    found: dict[str, TieredTest] = {}
    for path in sorted(tests_dir.glob(pattern)):
        tree = ast.parse(path.read_text(), filename=str(path))
        module_marked = any(
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets)
            and _marks(stmt.value)
            for stmt in tree.body
        )
        for stmt in tree.body:
            if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if not stmt.name.startswith("test"):
                continue
            key = f"{path.name}::{stmt.name}"
            if module_marked:
                found[key] = TieredTest(key, True)
                continue
            whole = any(_marks(d) and not _is_parametrize(d) for d in stmt.decorator_list)
            partly = any(_marks(d) for d in stmt.decorator_list)
            if whole or partly:
                found[key] = TieredTest(key, whole)
    return found


def _is_parametrize(decorator: ast.expr) -> bool:
    call = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(call, ast.Attribute) and call.attr == "parametrize"


def all_tests(tests_dir: Path, pattern: str = "test_*.py") -> set[str]:
    """Every test function of ``tests_dir/pattern``, keyed ``file.py::name``."""
    keys = set()
    for path in sorted(tests_dir.glob(pattern)):
        tree = ast.parse(path.read_text(), filename=str(path))
        keys.update(
            f"{path.name}::{stmt.name}"
            for stmt in tree.body
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
            and stmt.name.startswith("test")
        )
    return keys


def load_table(path: Path) -> tuple[dict[str, dict], dict[str, str]]:
    """(entries by test key, reason sentences by reason id) of a twins table."""
    data = tomllib.loads(path.read_text())
    reasons = data.pop("reasons", {})
    return data, reasons


def problems(tests_dir: Path, table: Path, pattern: str = "test_*.py") -> list[str]:
    """One line per slow or system test without a valid entry, per entry naming a test
    that is not in a slow tier, per twin that does not exist or is itself slow or system
    as a whole, and per unknown reason."""
    tiered = tiered_tests(tests_dir, pattern)
    everything = all_tests(tests_dir, pattern)
    entries, reasons = load_table(table)
    out = []
    for key in sorted(tiered.keys() - entries.keys()):
        out.append(f"{key}: in a slow tier, no entry in {table.name} (a fast twin or a reason)")
    for key in sorted(entries.keys() - tiered.keys()):
        out.append(f"{key}: has an entry in {table.name} but is not in a slow tier (any more)")
    for key in sorted(entries.keys() & tiered.keys()):
        entry = entries[key]
        twins, why = entry.get("twin", []), entry.get("why")
        if bool(twins) == bool(why):
            out.append(f"{key}: needs exactly one of twin or why")
        if why and why not in reasons:
            out.append(f"{key}: unknown reason {why!r} (known: {', '.join(sorted(reasons))})")
        for twin in twins:
            if twin not in everything:
                out.append(f"{key}: twin {twin} does not exist")
            elif twin in tiered and tiered[twin].whole:
                out.append(f"{key}: twin {twin} is itself in a slow tier")
    return out
