"""The other processes the calibration scripts plant beside a run, as a shared machine has
them (imported by scripts/bench_ab.py and scripts/disturbance.py; not part of fsyncbench).

- ``disk``: a second process overwriting 4 KiB of one file in the directory under test and
  calling fsync, in a loop (pausing ``pause_s`` between calls; 0: none), so its flushes
  reach the same disk;
- ``cpuN``: N processes each burning a CPU.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DISK_LOOP = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
pause = float(sys.argv[2])
block = b"x" * 4096
while True:
    os.pwrite(fd, block, 0)
    os.fsync(fd)
    if pause:
        time.sleep(pause)
"""
CPU_LOOP = "while True: pass"


def disk(path: Path, pause_s: float = 0.0) -> subprocess.Popen[bytes]:
    """A process fsyncing ``path`` (created) in a loop, ``pause_s`` seconds apart."""
    return subprocess.Popen([sys.executable, "-c", DISK_LOOP, str(path), str(pause_s)])


def cpu(count: int = 1) -> list[subprocess.Popen[bytes]]:
    """``count`` processes each burning a CPU."""
    return [subprocess.Popen([sys.executable, "-c", CPU_LOOP]) for _ in range(count)]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Kill ``procs`` and wait for them."""
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()
