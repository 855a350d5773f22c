"""The wheel and sdist (issue 16, item 5): ``python -m build`` makes both from a copy of the
tracked files, ``twine check --strict`` passes them, and the wheel alone (installed into a
directory of its own) runs the CLI on the example report. The build is real: it fetches
the build backend (flit_core) into its isolated environment, as a user's build would."""

from __future__ import annotations

import email
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: build depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

# python -m build and twine (an sdist, a wheel, a venv): the system tier
pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(
        importlib.util.find_spec("build") is None or importlib.util.find_spec("twine") is None,
        reason="build and twine are in the test extra (pip install '.[test]')",
    ),
]


def _tracked_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to know which files are the project's")
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    return [p for p in out.decode().split("\0") if p and (ROOT / p).is_file()]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """``python -m build`` of a copy of the tracked files (the checkout is not written to)."""
    src = tmp_path_factory.mktemp("src")
    for rel in _tracked_files():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # a backend may warn about deprecated metadata (a license classifier, a license table)
    assert "deprecat" not in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr
    return out


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def test_twine_check_strict_passes_both(dist):
    files = sorted(str(p) for p in dist.iterdir())
    proc = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 2, proc.stdout


def test_wheel_metadata_is_the_projects(dist):
    from fsyncbench import __version__

    wheel = _one(dist, f"fsyncbench-{__version__}-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = f"fsyncbench-{__version__}.dist-info"
        meta = email.message_from_bytes(z.read(f"{info}/METADATA"))
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    project = _project()
    assert meta["Name"] == "fsyncbench" and meta["Version"] == __version__
    assert meta["License-Expression"] == project["license"]
    assert meta["Requires-Python"] == project["requires-python"]
    requires = [r for r in meta.get_all("Requires-Dist") if "extra ==" not in r]
    assert sorted(r.replace(" ", "") for r in requires) == sorted(
        d.replace(" ", "") for d in project["dependencies"]
    )
    assert set(meta.get_all("Classifier")) == set(project["classifiers"])
    assert "fsyncbench=fsyncbench.entry:main" in entry_points.replace(" ", "")  # any backend
    assert f"{info}/licenses/LICENSE" in names
    # every module of the package, and its type marker; no tests or scripts
    package = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "fsyncbench").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert package <= names, sorted(package - names)
    assert "fsyncbench/py.typed" in names
    assert not any(n.startswith(("tests/", "scripts/")) for n in names)


def test_sdist_holds_what_a_rebuild_and_a_reader_need(dist):
    from fsyncbench import __version__

    sdist = _one(dist, f"fsyncbench-{__version__}.tar.gz")
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    # the package and its build; the tests with their helpers and fixtures; what README links
    for needed in (
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "fsyncbench/cli/__init__.py",
        "fsyncbench/cli/commands/run.py",
        "fsyncbench/py.typed",
        "tests/conftest.py",
        "tests/sampled.py",
        "tests/fixtures/reports/aws-ebs-nvme.json",
        "docs/report.schema.json",
        "docs/verdicts.md",
        "docs/method.md",
        "ARCHITECTURE.md",
        "CHANGELOG.md",
        "examples/kubernetes/job.yaml",
        "examples/ansible/fleet.yml",
    ):
        assert needed in names, needed


def test_the_wheel_alone_runs_the_cli(dist, tmp_path):
    """Installed into a directory of its own (its dependencies are this venv's), the wheel's
    package, not the checkout, renders the example report and a fleet of it."""
    wheel = _one(dist, "fsyncbench-*.whl")
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    example = next((ROOT / "examples" / "report").glob("*.json"))
    where = subprocess.run(
        [sys.executable, "-c", "import fsyncbench; print(fsyncbench.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert where.stdout.strip().startswith(str(target)), where
    for args in (["show", str(example)], ["compare", str(example.parent), "--format", "json"]):
        proc = subprocess.run(
            [sys.executable, "-m", "fsyncbench", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip(), args
