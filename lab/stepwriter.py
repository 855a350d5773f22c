"""Commit the step journal in a loop and record ``ACK n`` after each COMMIT returned: the
writer of the simulator's real cuts (lab/simcheck.py), run inside the lab guest.

``python3 lab/stepwriter.py [--max-commits N] [--wait-mount S] DIR,JOURNAL_MODE,SYNCHRONOUS,ACKS ...``
(``PYTHONPATH`` must reach fsyncbench). One thread per spec, all in one process (an
interpreter that imports fsyncbench takes 3-4 s to start in the TCG guest, measured
here, so one process for all drives, not one each; SQLite releases the GIL while it
syncs, so the threads commit concurrently). Each thread opens fsyncbench's own workload
(:class:`fsyncbench.measure.workloads.JournalCommit`: ``DIR/journal-<mode>-<sync>.db``,
one BEGIN; INSERT one step row of 512 payload bytes; COMMIT per commit, as ``run``,
``powercut write`` and ``powerloss`` commit it), makes that setup (the pragmas, CREATE
TABLE) durable with ``sync()``, as ``powerloss`` takes it to be (its trace's ``barrier``:
WAL with synchronous=NORMAL would otherwise leave even the table unsynced), writes
``PRAGMAS <label>`` (the pragmas SQLite put in force, read back) to ``ACKS``, and commits
seq 1, 2, ... After each COMMIT
returned it appends ``ACK n`` to ``ACKS`` with one unbuffered ``os.write`` on an
``O_APPEND`` descriptor. ``ACKS`` lives on the guest's results share (9p to this machine,
not a drive under test), whose writes QEMU has made to the host file when ``write``
returns: an ACK line in the file was written after its commit returned and before the
cut. A thread runs until ``--max-commits`` (default 1,000,000), its drive fills or the
guest dies. Exit 0 when every thread reached the limit, 1 when one failed (its error on
stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path


def commit_loop(
    directory: Path, mode: str, sync: str, acks: Path, max_commits: int, wait_mount_s: float
) -> None:
    """One spec's loop (module docstring); with ``wait_mount_s`` > 0 it first waits that
    long at most for ``directory`` to become a mount point. Raises FsyncbenchError (SQLite
    or OS errors, ENOSPC named) or OSError (the ACK file; a mount that did not come)."""
    from fsyncbench.measure.workloads import JournalCommit
    from fsyncbench.model import Pragmas

    deadline = time.monotonic() + wait_mount_s
    while wait_mount_s > 0 and not os.path.ismount(directory):
        if time.monotonic() > deadline:
            raise OSError(f"{directory} was not mounted within {wait_mount_s:g} s")
        time.sleep(0.02)
    fd = os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        work = JournalCommit(directory, Pragmas(mode.upper(), sync.upper()), 512)
        os.sync()  # the setup durable, as powerloss's trace takes it (its "barrier")
        os.write(fd, f"PRAGMAS {work.effective.label}\n".encode())
        for seq in range(1, max_commits + 1):
            work.run(work.prepare(seq))
            os.write(fd, f"ACK {seq}\n".encode())
        work.close()
    finally:
        os.close(fd)


def main() -> int:
    from fsyncbench.errors import FsyncbenchError

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="+", help="DIR,JOURNAL_MODE,SYNCHRONOUS,ACKS")
    ap.add_argument("--max-commits", type=int, default=1_000_000)
    ap.add_argument(
        "--wait-mount",
        type=float,
        default=0.0,
        metavar="S",
        help="wait up to S seconds for each DIR to be mounted (so the mounts and this "
        "interpreter's start overlap)",
    )
    args = ap.parse_args()
    failed: list[str] = []

    def one(spec: str) -> None:
        directory, mode, sync, acks = spec.split(",")
        try:
            commit_loop(Path(directory), mode, sync, Path(acks), args.max_commits, args.wait_mount)
        except (FsyncbenchError, OSError) as exc:
            failed.append(f"stepwriter: {mode}/{sync}: {exc}")

    threads = [threading.Thread(target=one, args=(spec,)) for spec in args.specs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for line in failed:
        sys.stderr.write(line + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
