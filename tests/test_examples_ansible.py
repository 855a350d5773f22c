"""examples/ansible: the real playbook, run by ansible-playbook against aliases of localhost
(local connection), each measuring its own directory with a short run: it builds the wheel
of this checkout, installs it in a virtualenv under the test's temporary directory, measures,
fetches the reports into a fleet directory and compares the fleet with this checkout's
fsyncbench.

Runtime: the virtualenv's dependencies (numpy, scipy, matplotlib, apsw, ...) dominate. All
aliases of both playbook runs share one module-scoped virtualenv (fsyncbench_throttle=1:
they take turns, as two inventory hosts on one machine must), pip gets --no-compile, and
the second run finds the virtualenv already holding the same (reproducibly built) wheel,
which is itself checked: it installs nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from clitools import fsb, leftovers
from schemacheck import cut_samples, validator

import fsyncbench

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ansible"
PLAYBOOK = EXAMPLE / "fleet.yml"

#: one configuration, a fixed small sample count, one round: a few seconds per host
SHORT_RUN = [
    "--journal-mode", "wal", "--synchronous", "full", "--samples", "200",
    "--rounds", "1", "--warmup", "10", "--no-primitives",
]  # fmt: skip

SHM = Path("/dev/shm")
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)")


def _ansible_playbook() -> str | None:
    """ansible-playbook of the Python running the tests (the test extra installs it), else
    the one on PATH."""
    beside = Path(sys.executable).parent / "ansible-playbook"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("ansible-playbook")


ANSIBLE_PLAYBOOK = _ansible_playbook()

# ansible-playbook against localhost (a venv and a wheel build): the system tier
pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(
        sys.platform == "win32",
        reason="ansible's control node does not run on Windows ("
        "https://docs.ansible.com/ansible/latest/installation_guide/intro_installation.html"
        "#control-node-requirements)",
    ),
    pytest.mark.skipif(
        ANSIBLE_PLAYBOOK is None,
        reason=f"ansible-playbook not found next to {sys.executable} or on PATH "
        "(ansible-core is in the test extra)",
    ),
]


def _environment(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=str(EXAMPLE / "ansible.cfg"),  # as when run from examples/ansible
        ANSIBLE_HOME=str(work / "ansible-home"),  # nothing written to ~/.ansible
        ANSIBLE_REMOTE_TEMP=str(work / "ansible-home" / "remote-tmp"),
        ANSIBLE_NOCOLOR="1",
        LC_ALL="C.UTF-8",  # ansible refuses a locale whose encoding is not UTF-8
    )
    return env


def _controller_fsyncbench(work: Path) -> str:
    """This checkout's fsyncbench as the controller's: the console script beside the test's
    Python, or a wrapper that runs ``python -m fsyncbench``."""
    beside = Path(sys.executable).parent / "fsyncbench"
    if beside.is_file():
        return str(beside)
    wrapper = work / "fsyncbench"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m fsyncbench "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


class Play:
    """One ansible-playbook run: its output and where things are."""

    def __init__(self, work: Path, hosts: dict[str, dict], venv: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.work, self.venv, self.fleet = work, venv, work / "fleet"
        self.dirs = {name: Path(h["fsyncbench_dir"]) for name, h in hosts.items()}
        self.remote_tmp = {name: work / "remote" / name for name in hosts}
        for path in self.remote_tmp.values():
            path.mkdir(parents=True)
        inventory = {
            "all": {
                "vars": {
                    "ansible_connection": "local",
                    # modules and the virtualenv run on the test's Python
                    "ansible_python_interpreter": sys.executable,
                    "fsyncbench_python": sys.executable,
                    "fsyncbench_venv": str(venv),
                    "fsyncbench_pip_args": ["--no-compile"],
                    "fsyncbench_run_args": SHORT_RUN,
                },
                "hosts": {
                    name: {**h, "fsyncbench_remote_tmp": str(self.remote_tmp[name])}
                    for name, h in hosts.items()
                },
            }
        }
        (work / "inventory.json").write_text(json.dumps(inventory, indent=2))
        (work / "extra.json").write_text(
            json.dumps(
                {
                    "fsyncbench_fleet_dir": str(self.fleet),
                    "fsyncbench_controller_fsyncbench": _controller_fsyncbench(work),
                    # aliases of one machine: one virtualenv, measurements in turn
                    "fsyncbench_throttle": 1,
                }
            )
        )
        proc = subprocess.run(
            [
                ANSIBLE_PLAYBOOK,
                "-i",
                str(work / "inventory.json"),
                "-e",
                f"@{work / 'extra.json'}",
                str(PLAYBOOK),
            ],
            capture_output=True,
            text=True,
            cwd=work,
            env=_environment(work),
            timeout=900,
        )
        self.rc, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr
        self.output = proc.stdout + proc.stderr

    def recap(self) -> dict[str, dict[str, int]]:
        rows = (RECAP.match(line) for line in self.stdout.splitlines())
        return {
            m[1]: {"ok": int(m[2]), "changed": int(m[3]), "unreachable": int(m[4]),
                   "failed": int(m[5])}
            for m in rows if m
        }  # fmt: skip

    def task(self, name: str) -> dict[str, str]:
        """The output of the role's task ``name`` per host: ``ok: [h]``, ``skipping: [h]``,
        ``fatal: [h]: FAILED! =>`` with the result's (indented) lines."""
        lines = self.stdout.splitlines()
        start = next(
            i for i, ln in enumerate(lines) if ln.startswith(f"TASK [fsyncbench : {name}]")
        )
        items: dict[str, str] = {}
        host = None
        for line in lines[start + 1 :]:
            if line.startswith(("TASK [", "PLAY RECAP")):
                break
            result = re.match(r"^(?:ok|changed|skipping|fatal|failed): \[([^]\s]+)", line)
            if result:
                host = result[1]
                items[host] = items.get(host, "") + line
            elif host is not None and line.startswith(" "):
                items[host] += "\n" + line
            else:
                host = None  # ansible's [ERROR] summary and the like
        return items

    def reports(self, host: str, suffix: str = ".json") -> list[Path]:
        return sorted((self.fleet / host).glob(f"*{suffix}"))

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        # pytest shows the first lines only: what failed first, then everything
        failed = [
            line
            for line in self.output.splitlines()
            if line.startswith(("fatal:", "failed:", "ERROR!")) or "FAILED!" in line
        ]
        return (
            f"Play(rc={self.rc}) failed: {' | '.join(failed)[:2000]}\n"
            f"--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"
        )


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """The hosts' virtualenv (created by the playbook): shared by every alias and run."""
    return tmp_path_factory.mktemp("hosts-venv") / "venv"


@pytest.fixture(scope="module")
def shm_dir():
    """A directory on tmpfs (/dev/shm), or None where there is none."""
    if not SHM.is_dir():
        yield None
        return
    path = Path(tempfile.mkdtemp(prefix="fsyncbench-ansible-", dir=SHM))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, venv, shm_dir) -> Play:
    """Two aliases of localhost: a directory on the disk under the temporary directory, and
    one on tmpfs (fsyncbench's verdict there: no_flush)."""
    work = tmp_path_factory.mktemp("fleet")
    (work / "disk").mkdir()
    hosts = {"disk": {"fsyncbench_dir": str(work / "disk")}}
    if shm_dir is not None:
        hosts["shm"] = {"fsyncbench_dir": str(shm_dir)}
    return Play(work / "play", hosts, venv)


@pytest.fixture(scope="module")
def failures(tmp_path_factory, venv, fleet) -> Play:
    """After ``fleet`` (the virtualenv exists): one good host, one whose gate cannot pass
    (--max-p99 1ns), one whose directory does not exist."""
    work = tmp_path_factory.mktemp("failures")
    for name in ("good", "gated"):
        (work / name).mkdir()
    hosts = {
        "good": {"fsyncbench_dir": str(work / "good")},
        "gated": {
            "fsyncbench_dir": str(work / "gated"),
            "fsyncbench_run_args": [*SHORT_RUN, "--max-p99", "1ns", "--accept-disturbed"],
        },
        "missing": {"fsyncbench_dir": str(work / "no-such-dir")},
    }
    return Play(work / "play", hosts, venv)


def _table(markdown: str, first_header: str) -> list[dict[str, str]]:
    """The rows of the Markdown table whose first column is ``first_header``, by header."""
    lines = markdown.splitlines()
    head = next(
        i
        for i, ln in enumerate(lines)
        if ln.startswith("|") and ln.split("|")[1].strip().lstrip("\\") == first_header
    )

    def cells(line: str) -> list[str]:
        return [c.strip().replace("\\", "") for c in line.strip().strip("|").split("|")]

    names = cells(lines[head])
    rows = []
    for line in lines[head + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(names, cells(line))))
    return rows


def test_the_playbook_and_the_example_inventory_parse(tmp_path):
    env = _environment(tmp_path)
    inventory = EXAMPLE / "inventory.example.yml"
    check = subprocess.run(
        [ANSIBLE_PLAYBOOK, "--syntax-check", "-i", str(inventory), str(PLAYBOOK)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    listed = subprocess.run(
        [str(Path(ANSIBLE_PLAYBOOK).with_name("ansible-inventory")), "-i", str(inventory),
         "--list"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    hostvars = json.loads(listed.stdout)["_meta"]["hostvars"]
    assert hostvars and all("fsyncbench_dir" in v for v in hostvars.values())
    # group variables override the defaults for all (the role's defaults are lower still)
    assert hostvars["db1.example.internal"]["fsyncbench_run_args"][:2] == ["--assume", "plp"]


def test_every_host_is_measured_and_its_report_fetched_and_valid(fleet):
    assert fleet.rc == 0, fleet
    assert set(fleet.recap()) == set(fleet.dirs)
    assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in fleet.recap().values())
    check = validator()
    for host, directory in fleet.dirs.items():
        # flat per inventory host: this run's JSON and its Markdown twin
        (report,) = fleet.reports(host)
        assert [p.stem for p in fleet.reports(host, ".md")] == [report.stem]
        data = json.loads(report.read_text())
        error = next(iter(check.iter_errors(cut_samples(data))), None)
        assert error is None, f"{report}: {error.message} at {list(error.path)}"
        assert data["host"]["target"]["path"] == str(directory)
        assert [r["name"] for r in data["results"] if r["kind"] == "commit"] == ["wal/full"]


def test_the_fleet_table_is_printed_and_written(fleet):
    assert fleet.rc == 0, fleet
    text = fsb("compare", fleet.fleet)
    assert text.returncode == 0, text.stderr
    n = len(fleet.dirs)
    reports = f"{n} report{'s' if n > 1 else ''}"
    assert text.stdout.startswith(f"fsyncbench fleet: {reports} sorted by p99 of wal/full")
    # printed by the playbook (indented as a YAML block): every line of the table
    printed = {ln.strip() for ln in fleet.stdout.splitlines()}
    assert all(ln.strip() in printed for ln in text.stdout.splitlines() if ln.strip())
    # written next to the host directories: Markdown and HTML, nothing compare would read
    assert sorted(p.name for p in fleet.fleet.iterdir() if p.is_file()) == [
        "fleet.html",
        "fleet.md",
    ]
    markdown = (fleet.fleet / "fleet.md").read_text()
    assert markdown.strip() == fsb("compare", fleet.fleet, "--format", "markdown").stdout.strip()
    assert "<html" in (fleet.fleet / "fleet.html").read_text()
    # one row per report, labelled <inventory host>/<file>, with the report's own verdict
    rows = {r["report"].split("/")[0]: r for r in _table(markdown, "group")}
    assert set(rows) == set(fleet.dirs)
    for host in fleet.dirs:
        (report,) = fleet.reports(host)
        assert rows[host]["report"] == f"{host}/{report.name}"
        verdict = json.loads(report.read_text())["verdict"]["path_verdict"]
        assert rows[host]["path verdict"] == verdict
    if "shm" in fleet.dirs:
        # what fsyncbench says of tmpfs: syncs never reach stable storage
        assert rows["shm"]["path verdict"] == "no_flush"
        groups = _table(markdown, "#")
        tmpfs = [g for g in groups if g["fs"] == "tmpfs"]
        assert tmpfs and all(
            (g["wal/full verdict"], g["path verdict"]) == ("no_flush", "no_flush") for g in tmpfs
        )
        # both aliases share host and kernel; a disk under tmp_path is its own group
        (disk,) = fleet.reports("disk")
        if json.loads(disk.read_text())["host"]["target"]["disks"]:
            assert len(groups) == 2


def test_nothing_is_left_on_the_hosts(fleet):
    assert fleet.rc == 0, fleet
    for directory in fleet.dirs.values():
        assert leftovers(directory) == []
        assert list(directory.iterdir()) == []  # nothing else either
    for work in fleet.remote_tmp.values():  # the per-run work directory: wheel, reports
        assert list(work.iterdir()) == []


def test_the_wheel_was_installed_in_the_tests_virtualenv(fleet):
    assert fleet.rc == 0, fleet
    installed = fleet.task("Install the wheel and its dependencies")
    assert any(text.startswith("changed: ") for text in installed.values()), installed
    version = subprocess.run(
        [str(fleet.venv / "bin" / "fsyncbench"), "--version"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert version.stdout.strip() == f"fsyncbench {fsyncbench.__version__}"
    # from the copied wheel (not an editable install of this checkout), then removed
    (direct_url,) = fleet.venv.glob(
        "lib/python*/site-packages/fsyncbench-*.dist-info/direct_url.json"
    )
    url = json.loads(direct_url.read_text())["url"]
    assert url.startswith("file://") and url.endswith("-py3-none-any.whl")
    assert any(url.startswith(f"file://{work}/fsyncbench.") for work in fleet.remote_tmp.values())
    assert len((fleet.venv / "fsyncbench-wheel.sha256").read_text().strip()) == 64


def test_a_failing_host_fails_alone_after_the_others_are_fetched_and_compared(failures):
    # ansible-playbook's exit code when hosts failed
    assert failures.rc == 2, failures
    recap = failures.recap()
    assert {h: r["failed"] for h, r in recap.items()} == {"good": 0, "gated": 1, "missing": 1}
    # the missing directory: fsyncbench's one line, nothing fetched
    missing = failures.dirs["missing"]
    stopped = failures.task("Stop on this host when fsyncbench could not measure")
    assert sorted(stopped) == ["gated", "good", "missing"]
    assert stopped["missing"].startswith("fatal: [missing]")
    # (the YAML result format folds long lines)
    assert (
        f"fsyncbench: error: directory {missing} does not exist (fsyncbench run exited 2)"
        in " ".join(stopped["missing"].split())
    )
    assert not (failures.fleet / "missing").exists()
    # the gate: the report is fetched and compared, the host fails at the end, saying why
    assert len(failures.reports("gated")) == len(failures.reports("good")) == 1
    gate = failures.task("Fail the hosts whose gate failed")
    assert gate["good"] == "skipping: [good]"
    assert gate["gated"].startswith("fatal: [gated]")
    # failed, or (a busy machine: its rounds stayed disturbed) could not tell: both fail it
    said = " ".join(gate["gated"].split())
    assert "GATE FAILED [max-p99] wal/full: p99" in said or "CANNOT TELL [max-p99]" in said
    printed = fsb("compare", failures.fleet).stdout
    assert printed.startswith("fsyncbench fleet: 2 reports")
    assert "gated/" in printed and "good/" in printed
    assert printed.splitlines()[0] in failures.stdout
    assert (failures.fleet / "fleet.md").is_file()
    # every work directory removed, failed hosts' too
    for work in failures.remote_tmp.values():
        assert list(work.iterdir()) == []
    # the same checkout builds the same wheel: the virtualenv holds it, nothing is installed
    assert failures.task("Install the wheel and its dependencies") == {
        h: f"skipping: [{h}]" for h in ("gated", "good", "missing")
    }
