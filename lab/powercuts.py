"""``fsyncbench powercut`` end to end in the lab, with real power cuts (issue 30, items 4, 7).

The listener runs on this machine; the writer runs in a QEMU guest on ext4 on the lab
drive and reaches the listener through virtio-serial ports; the cut is a SIGKILL of QEMU
and nbdkit together: the guest stops mid-commit and the drive's volatile cache is lost.
The "machine" then powers on: nbdkit serves the image as the cut left it (an honest drive
now: its cache is empty, as after a power cut), and a second guest boots from it and runs
``fsyncbench powercut verify`` (the drive and the guests: lab/powercut_guests.py).

Two ways to run it, both here:

- :func:`cut_once`: ``fsyncbench powercut listen``, the writer guest, the cut and the
  verify guest, step by step (item 4);
- :func:`cycles`: ``fsyncbench powercut cycle`` runs the whole experiment N times with
  the lab's commands (item 7, :func:`cycle_commands`): start, the drive and the writer
  guest; cut, ``sh -c 'kill -KILL ...'`` of QEMU and nbdkit; restore, the drive, honest,
  on the cut image; verify, the guest that runs verify.

The truth: an honest drive loses no acknowledged commit; a lying drive (every FLUSH
acknowledged and dropped) loses the newest acknowledged commits, up to the last: those whose
blocks were still in its cache of 1,024 blocks of 4 KiB, the oldest dirty blocks having
been evicted to the image first (lab/drive.py). That is all of a short run's, the run's
directory included. :func:`lab_lines` gives scripts/lab.py one line per scenario.

Needs what lab/guest.py and lab/cuts.py need (``missing_parts``), mkfs.ext4, and an
``fsyncbench`` executable (lab/powercut_guests.py ``fsyncbench_exe``).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LAB = Path(__file__).resolve().parent
sys.path.insert(0, str(LAB))

import cuts  # noqa: E402
import guest  # noqa: E402
import powercut_guests as parts  # noqa: E402
from powercut_guests import BOOT_TIMEOUT_S, DEFAULT_DISK, fsyncbench_exe, tail  # noqa: E402


def missing_parts() -> str:
    """What this machine lacks for these scenarios ("" when nothing)."""
    missing = guest.missing_parts() or cuts.missing_parts()
    if missing:
        return missing
    if shutil.which("mkfs.ext4") is None:
        return "mkfs.ext4 is not installed (apt install e2fsprogs)"
    if fsyncbench_exe() is None:
        return "no fsyncbench executable (pip install -e . in a venv)"
    return ""


# --------------------------------------------------------------------------- item 4


@dataclass(frozen=True)
class Cut:
    """One cut step by step: the drive's ``mode``, the planned moment (s after the first
    recorded commit), the run, what the listener recorded (``acknowledged``), verify's
    exit code, the lost commits it named (``lost``, ranges), the drive's dropped FLUSHes,
    and verify's text lines (``said``)."""

    mode: str
    after_s: float
    run_id: str
    acknowledged: int
    verify_exit: int | None
    lost: int | None
    lost_ranges: tuple[tuple[int, int], ...]
    dropped_flushes: int
    said: str
    disk: str = DEFAULT_DISK


def _wait_listening(err_path: Path, proc: subprocess.Popen[bytes]) -> int:
    deadline = time.perf_counter_ns() + 30 * 10**9
    while time.perf_counter_ns() < deadline:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", err_path.read_text())
        if m:
            return int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"the listener did not start: {err_path.read_text()[-500:]}")


def _recorded(state: Path) -> dict[str, int]:
    """run id -> commits the listener's record holds (read-only, beside the listener)."""
    conn = sqlite3.connect(f"{state.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        return dict(conn.execute("SELECT run_id, COUNT(*) FROM acks GROUP BY run_id"))
    except sqlite3.OperationalError:
        return {}
    finally:
        conn.close()


def lost_of(report_json: str) -> tuple[int | None, tuple[tuple[int, int], ...]]:
    """(lost count, lost ranges) from a verify report's evidence; (None, ()) without one."""
    try:
        report = json.loads(report_json)
    except ValueError:
        return None, ()
    for f in (report.get("verdict") or {}).get("findings") or []:
        ev = f.get("evidence")
        if isinstance(ev, dict) and "lost" in ev and "acknowledged" in ev:
            return int(ev["lost"]), tuple((int(a), int(b)) for a, b in ev.get("lost_ranges", []))
    return None, ()


def cut_once(
    mode: str,
    seed: int,
    work: Path,
    initrd: Path,
    cut_after_s: tuple[float, float] = (1.0, 3.0),
    disk: str = DEFAULT_DISK,
) -> Cut:
    """Item 4, step by step in ``work``: ``fsyncbench powercut listen`` here, the writer
    guest on a fresh drive in ``mode``, a SIGKILL of QEMU and nbdkit a seeded moment
    (uniform in ``cut_after_s``, drawn from ``seed``) after the listener recorded the
    first commit, then the drive powered on (honest) and verify in a second guest.
    Raises RuntimeError when a part fails (not a verdict)."""
    fsb = fsyncbench_exe()
    assert fsb is not None
    after_s = round(random.Random(seed).uniform(*cut_after_s), 3)
    work.mkdir(parents=True, exist_ok=True)
    state, err_path = work / "listener.db", work / "listener.log"
    with err_path.open("wb") as err:
        listener = subprocess.Popen(
            [fsb, "powercut", "listen", "--port", "0", "--state", str(state)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # where the secret is and the command lines: not kept
            stderr=err,
        )
    try:
        port = _wait_listening(err_path, listener)
        secret = Path(f"{state}.secret")
        qemu, drive, relay = parts.start_writer_guest(work, mode, port, secret, initrd, disk)
        try:
            deadline = time.perf_counter_ns() + int(BOOT_TIMEOUT_S * 1e9)
            while not (runs := {r: n for r, n in _recorded(state).items() if n}):
                if qemu.poll() is not None or time.perf_counter_ns() > deadline:
                    raise RuntimeError(
                        "the writer guest recorded no commit: " + tail(work / "writer" / "out.txt")
                    )
                time.sleep(0.05)
            time.sleep(after_s)
        finally:
            cuts.kill(qemu, drive)  # the cut: both at once
            relay.close()
        (run_id,) = runs
        acked = _recorded(state).get(run_id, 0)
        dropped = (work / "drive.log").read_text().count(" dropped ")
        on, sock = parts.start_drive(work, "honest", name="restored")  # the power comes back
        try:
            rc, report, said = parts.verify_in_guest(work, port, secret, run_id, initrd, sock, disk)
        finally:
            cuts.kill(on)
    finally:
        listener.send_signal(signal.SIGINT)
        try:
            listener.wait(30)
        except subprocess.TimeoutExpired:
            cuts.kill(listener)
    lost, spans = lost_of(report)
    return Cut(mode, after_s, run_id, acked, rc, lost, spans, dropped, said, disk)


# --------------------------------------------------------------------------- item 7


@dataclass(frozen=True)
class Cycles:
    """``fsyncbench powercut cycle`` run on the lab: its exit code and summary JSON."""

    mode: str
    exit_code: int
    summary: dict[str, object]
    stderr: str


def cycle_commands(work: Path, mode: str, initrd: Path, disk: str = DEFAULT_DISK) -> dict[str, str]:
    """The four commands ``powercut cycle`` runs for the lab drive in ``mode``, each cycle in
    ``work/<cycle>`` (the cycle's placeholders {cycle}, {port}, {secret_file}, {run_id})."""
    me = f"{shlex.quote(sys.executable)} {shlex.quote(str(LAB / 'powercut_guests.py'))}"
    w = shlex.quote(str(work))
    return {
        "start": f"{me} guest-write --work {w}/{{cycle}} --mode {mode} --port {{port}} "
        f"--secret-file {{secret_file}} --initrd {shlex.quote(str(initrd))} --disk {disk}",
        # QEMU and nbdkit in one kill(1): the guest and the drive's cache go together
        "cut": f"sh -c 'kill -KILL $(cat {w}/{{cycle}}/pids)'",
        "restore": f"{me} power-on --work {w}/{{cycle}}",
        "verify": f"{me} guest-verify --work {w}/{{cycle}} --port {{port}} "
        f"--secret-file {{secret_file}} --run-id {{run_id}} --initrd {shlex.quote(str(initrd))} "
        f"--disk {disk}",
    }


def cycles(
    mode: str,
    n: int,
    seed: int,
    work: Path,
    initrd: Path,
    cut_after: str = "1..3",
    disk: str = DEFAULT_DISK,
) -> Cycles:
    """Item 7: ``fsyncbench powercut cycle --cycles n --seed seed`` with the lab's commands
    for a drive in ``mode`` (:func:`cycle_commands`); every drive it powered on is killed
    afterwards."""
    fsb = fsyncbench_exe()
    assert fsb is not None
    work.mkdir(parents=True, exist_ok=True)
    c = cycle_commands(work, mode, initrd, disk)
    argv = [
        fsb,
        "powercut",
        "cycle",
        "--port",
        "0",
        "--state",
        str(work / "listener.db"),
        "--cycles",
        str(n),
        "--seed",
        str(seed),
        "--cut-after",
        cut_after,
        "--start",
        c["start"],
        "--cut",
        c["cut"],
        "--restore",
        c["restore"],
        "--verify",
        c["verify"],
        "--start-timeout-seconds",
        str(BOOT_TIMEOUT_S),
        "--command-timeout-seconds",
        str(BOOT_TIMEOUT_S),
        "--verify-timeout-seconds",
        str(2 * BOOT_TIMEOUT_S),
        "--retry-every-seconds",
        "2",
        "--format",
        "json",
    ]
    try:
        got = subprocess.run(argv, capture_output=True, text=True, check=False)
    finally:
        for pid_file in work.glob("*/restored.pid"):
            with contextlib.suppress(ValueError, OSError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    try:
        summary = json.loads(got.stdout)
    except ValueError:
        summary = {}
    return Cycles(mode, got.returncode, summary, got.stderr)


# --------------------------------------------------------------------------- the lab lines

HONEST, LYING = "honest", "lying"
TRUTH = {
    HONEST: "no acknowledged commit lost",
    LYING: "the newest acknowledged commits lost, up to the last (every FLUSH dropped: they "
    "were still in its 1,024-block cache)",
}


def cut_agrees(c: Cut) -> bool:
    """Does verify's answer match the drive's truth? Honest: exit 0, nothing lost; lying:
    exit 1 and at least one acknowledged commit named lost."""
    if c.mode == HONEST:
        return c.verify_exit == 0 and c.lost == 0 and c.acknowledged > 0
    return c.verify_exit == 1 and (c.lost or 0) > 0


def nvme_cut_agrees(c: Cut) -> bool:
    """The truth of an honest drive behind QEMU's NVMe, which drops the FUA bit (lab/powercut_guests.py DISKS):
    nothing lost (exit 0), or exactly the last acknowledged commit, whose journal commit
    block was still in the drive's cache (exit 1)."""
    if c.verify_exit == 0:
        return c.lost == 0 and c.acknowledged > 0
    return c.verify_exit == 1 and c.lost_ranges == ((c.acknowledged, c.acknowledged),)


def cycles_agree(c: Cycles) -> bool:
    """Does ``powercut cycle`` match the truth in every cycle? Honest: exit 0, each cycle
    verified with nothing lost; lying: exit 1, each cycle lost the newest acknowledged
    commits, up to the last (one range ending at the last acknowledged commit: the drive
    evicts its oldest dirty blocks to the image first, and SQLite keeps a WAL's frames only
    up to the first one missing)."""
    results = c.summary.get("results") or []
    assert isinstance(results, list)
    planned = c.summary.get("planned")
    if len(results) != planned or not results:
        return False
    if c.mode == HONEST:
        return c.exit_code == 0 and all(r["outcome"] == "pass" and r["lost"] == 0 for r in results)
    return c.exit_code == 1 and all(
        r["outcome"] == "fail"
        and (r["lost"] or 0) > 0
        and len(r["lost_ranges"]) == 1
        and r["lost_ranges"][0][1] == r["acknowledged"]
        for r in results
    )


def describe_cut(c: Cut) -> str:
    lost = "?" if c.lost is None else f"{c.lost:,}"
    spans = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in c.lost_ranges[:3])
    return (
        f"verify exit {c.verify_exit}: {c.acknowledged:,} acknowledged, {lost} lost"
        + (f" ({spans})" if spans else "")
        + f"; cut {c.after_s:.2f} s after the first, drive dropped {c.dropped_flushes} FLUSHes"
    )


def describe_cycles(c: Cycles) -> str:
    results = c.summary.get("results") or []
    assert isinstance(results, list)
    acked = ", ".join(f"{int(r['acknowledged']):,}" for r in results)
    lost = ", ".join("?" if r["lost"] is None else f"{r['lost']:,}" for r in results)
    exits = ", ".join(str(r["verify_exit"]) for r in results)
    return (
        f"cycle exit {c.exit_code}: {len(results)} cycles, acknowledged {acked or '-'}, lost "
        f"{lost or '-'}, verify exit {exits or '-'}; "
        + str(c.summary.get("verdict", c.stderr[-300:])).split(":")[0]
    )


def lab_lines(seed: int, n_cycles: int = 2, nvme_cuts: int = 0) -> list[tuple[str, str, str, bool]]:
    """(scenario, truth, what fsyncbench said, agree) for scripts/lab.py: ``powercut
    cycle`` with ``n_cycles`` real cuts on an honest and on a lying drive, and, when
    ``nvme_cuts``, that many cuts step by step of an honest drive attached as NVMe (each
    cut: the writer guest, the cut, the verify guest; about a minute or two each here)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="fsb-powercut-") as tmp:
        root = Path(tmp)
        initrd = guest.build_initramfs(root / "initrd.gz")
        for i, mode in enumerate((HONEST, LYING)):
            c = cycles(mode, n_cycles, seed + i, root / mode, initrd)
            name = f"powercut cycle, {mode} drive, {n_cycles} real cuts (writer in a guest)"
            out.append((name, TRUTH[mode], describe_cycles(c), cycles_agree(c)))
        if nvme_cuts:
            done = [
                cut_once(HONEST, seed + 10 + k, root / f"nvme-{k}", initrd, disk="nvme")
                for k in range(nvme_cuts)
            ]
            lost_last = sum(c.verify_exit == 1 for c in done)
            out.append(
                (
                    f"powercut, honest drive behind QEMU's NVMe (FUA dropped), {nvme_cuts} cuts",
                    "nothing lost, or exactly the last acknowledged commit",
                    f"verify named the last acknowledged commit lost in {lost_last} of "
                    f"{nvme_cuts} cuts; " + "; ".join(describe_cut(c).split(";")[0] for c in done),
                    all(nvme_cut_agrees(c) for c in done),
                )
            )
    return out
