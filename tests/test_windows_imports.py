"""The test suite imports on Windows (issue 29, item 14), checked here: every test module and
helper, and every module of the package, imported in one process with what Windows lacks
taken away (tests/fixtures/windows/import_as_windows.py says what and why). A test that needs
a POSIX call skips on Windows instead of failing to import. And the check can fail: a module
planted with a top-level ``import resource`` or ``signal.SIGHUP`` is caught."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
HARNESS = TESTS / "fixtures" / "windows" / "import_as_windows.py"


def _import_as_windows(directory: Path, modules: list[str]) -> dict[str, str]:
    proc = subprocess.run(
        [sys.executable, str(HARNESS), str(directory), *modules],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_test_module_and_package_module_imports_as_on_windows() -> None:
    tests = sorted(p.stem for p in TESTS.glob("*.py"))
    package = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "fsyncbench").rglob("*.py")
        if p.name != "__main__.py"
    )
    assert len(tests) > 40 and len(package) > 80
    assert _import_as_windows(TESTS, tests + package) == {}


def test_a_posix_only_module_is_caught(tmp_path: Path) -> None:
    (tmp_path / "uses_resource.py").write_text("import resource\n")
    (tmp_path / "uses_sighup.py").write_text("import signal\nS = signal.SIGHUP\n")
    (tmp_path / "uses_geteuid.py").write_text("import os\nROOT = os.geteuid() == 0\n")
    (tmp_path / "portable.py").write_text("import os, signal\nS = signal.SIGTERM\n")
    failed = _import_as_windows(
        tmp_path, ["uses_resource", "uses_sighup", "uses_geteuid", "portable"]
    )
    assert sorted(failed) == ["uses_geteuid", "uses_resource", "uses_sighup"]
    assert "SIGHUP" in failed["uses_sighup"]
