"""The suite as if on macOS and on Windows (issue 43, item 5). CI runs every tier on macOS and
Windows runners; none is at hand here, so ``pytest --simulate-platform darwin`` (or
``win32``) runs tests with the platform simulated as far as Linux can pretend
(tests/simulated_platform.py says how far): sys.platform and platform.system(), the os calls
that system lacks, no /proc, /sys, /dev/shm, Windows' chmod, fcntl, signals and code page,
macOS's fcntl commands, in this process and every Python process the tests start.

Checked here: the simulation simulates (a process started under it sees macOS or Windows,
and tests planted with Linux assumptions fail under it while they pass on Linux), and the
test files that depend on the platform pass under both (the slow tier: a few minutes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLANTED = "tests/fixtures/simulate/planted"

#: The simulations pretend from Linux: on macOS and Windows (CI) the suite meets the real
#: thing, and under a simulation these checks would simulate twice.
pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or "FSYNCBENCH_SIMULATE_PLATFORM" in os.environ,
    reason="the simulations of macOS and Windows run on Linux, not under one",
)

#: The test files whose expectations depend on the platform (the primitives, the
#: configurations, paths, signals, devices and encodings they meet): their fast tiers.
PLATFORM_DEPENDENT = [
    "tests/test_api.py",
    "tests/test_bad_inputs.py",
    "tests/test_cli_conventions.py",
    "tests/test_crash.py",
    "tests/test_gates.py",
    "tests/test_headtohead.py",
    "tests/test_host_darwin.py",
    "tests/test_host_readers.py",
    "tests/test_host_windows.py",
    "tests/test_lab_drive.py",
    "tests/test_powercut_cycle.py",
    "tests/test_powercut_secret.py",
    "tests/test_powercut_verify.py",
    "tests/test_powerloss.py",
    "tests/test_powerloss_checkpoints.py",
    "tests/test_prometheus.py",
    "tests/test_scratch.py",
    "tests/test_store.py",
    "tests/test_windows_imports.py",
    "tests/test_windows_readers.py",
    "tests/test_workloads.py",
]

PROBE = """
import json, os, platform, signal, sys
from pathlib import Path
from fsyncbench.measure import workloads
try:
    import fcntl
    has_fcntl = True
except ImportError:
    has_fcntl = False
import numpy, psutil  # libraries import as built for this system
print(json.dumps({
    "platform": sys.platform,
    "system": platform.system(),
    "fdatasync": hasattr(os, "fdatasync"),
    "fork": hasattr(os, "fork"),
    "sigkill": hasattr(signal, "SIGKILL"),
    "fcntl": has_fcntl,
    "proc": Path("/proc/self").exists(),
    "primitives": [p.name for p in workloads.sync_primitives()],
    "pids": len(psutil.pids()) > 0,
}))
"""


def _simulated(platform: str, *argv: str) -> subprocess.CompletedProcess[str]:
    from tests.simulated_platform import child_environ

    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_environ(platform),
        timeout=1800,
    )


@pytest.mark.parametrize(
    "platform,expected",
    [
        (
            "darwin",
            {
                "platform": "darwin",
                "system": "Darwin",
                "fdatasync": False,
                "fork": True,
                "sigkill": True,
                "fcntl": True,
                "proc": False,
            },
        ),
        (
            "win32",
            {
                "platform": "win32",
                "system": "Windows",
                "fdatasync": False,
                "fork": False,
                "sigkill": False,
                "fcntl": False,
                "proc": False,
            },
        ),
    ],
)
def test_a_process_started_under_the_simulation_sees_that_system(platform, expected):
    proc = _simulated(platform, "-c", PROBE)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert {k: seen[k] for k in expected} == expected
    assert seen["pids"]  # psutil still reads this system's process table
    assert (
        seen["primitives"]
        == {
            "darwin": ["none", "fsync", "O_DSYNC", "O_SYNC", "F_BARRIERFSYNC", "F_FULLFSYNC"],
            "win32": ["none", "FlushFileBuffers"],
        }[platform]
    )


def _planted(*options: str) -> dict[str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "-q"]
        + ["-o", "python_files=planted_case.py", *options, PLANTED],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    return dict(
        (name, outcome)
        for outcome, name in re.findall(r"^(PASSED|FAILED) \S+::(test_\w+)", proc.stdout, re.M)
    )


def test_tests_that_assume_linux_fail_as_if_on_macos_or_windows():
    planted = {"test_the_primitives_are_linuxs", "test_procfs_is_there"}
    planted |= {"test_the_system_is_linux", "test_fdatasync_is_there"}
    assert _planted() == dict.fromkeys(planted, "PASSED")  # this machine is Linux
    for platform in ("darwin", "win32"):
        assert _planted("--simulate-platform", platform) == dict.fromkeys(planted, "FAILED")


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_the_platform_dependent_tests_pass_as_if_on(platform):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE"]
        + ["--simulate-platform", platform, "-m", "not slow and not system"]
        + PLATFORM_DEPENDENT,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
