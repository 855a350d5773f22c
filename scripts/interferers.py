#!/usr/bin/env python3
"""The other processes the calibration scripts plant beside a run, as a shared machine has
them (imported by scripts/bench_ab.py and scripts/disturbance.py; not part of fsyncbench).
Run alone, it keeps them going until Ctrl-C, to try a change as users live:

    python3 scripts/interferers.py disk DIR/busy-file [PAUSE_S]   # fsync loop on DIR's disk
    python3 scripts/interferers.py cpu [N]                        # N CPU burners (default 1)

- ``disk``: a second process overwriting 4 KiB of one file in the directory under test and
  calling fsync, in a loop (pausing ``pause_s`` between calls; 0: none), so its flushes
  reach the same disk;
- ``cpuN``: N processes each burning a CPU.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
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


def main(argv: list[str]) -> int:
    """``disk PATH [PAUSE_S]`` or ``cpu [N]`` until Ctrl-C; 2 with a usage line otherwise."""
    if argv[:1] == ["disk"] and len(argv) in (2, 3):
        procs = [disk(Path(argv[1]), float(argv[2]) if len(argv) == 3 else 0.0)]
    elif argv[:1] == ["cpu"] and len(argv) in (1, 2):
        procs = cpu(int(argv[1]) if len(argv) == 2 else 1)
    else:
        print("usage: interferers.py disk PATH [PAUSE_S] | cpu [N]", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # finally: stop them
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        return 0
    finally:
        stop(procs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
