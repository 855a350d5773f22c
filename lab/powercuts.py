"""``fsyncbench powercut`` end to end in the lab, with real power cuts (issue 30, items 4, 7).

The listener runs on this machine; the writer runs in a QEMU guest (lab/guest.py) on ext4
on the lab drive (lab/drive.py behind nbdkit) and reaches the listener through
virtio-serial ports (lab/bridge.py: no guest network). The cut is a SIGKILL of QEMU and
nbdkit together: the guest stops mid-commit and the drive's volatile cache is lost. The
"machine" then powers on: nbdkit serves the image as the cut left it (an honest drive
now: its cache is empty, as after a power cut), and a second guest boots from it, mounts
the filesystem (ext4 replays its journal) and runs ``fsyncbench powercut verify`` through
the same bridge, on the same path (``/srv``) and host name as the writer, as the writer's
own machine would after its reboot.

Two ways to run it, both here:

- :func:`cut_once`: ``fsyncbench powercut listen``, the writer guest, the cut and the
  verify guest, step by step (item 4);
- :func:`cycles`: ``fsyncbench powercut cycle`` runs the whole experiment N times with
  this module's commands (item 7): ``guest-write`` (start: the drive and the writer
  guest), ``sh -c 'kill -KILL ...'`` (cut: QEMU and nbdkit), ``power-on`` (restore: the
  drive, honest, on the cut image) and ``guest-verify`` (verify: the guest that runs
  verify), each ``python3 lab/powercuts.py ACTION ...``.

The truth: an honest drive loses no acknowledged commit; a lying drive (every FLUSH
acknowledged and dropped) loses the newest acknowledged commits, up to the last: those whose
blocks were still in its cache of 1,024 blocks of 4 KiB, the oldest dirty blocks having
been evicted to the image first (lab/drive.py). That is all of a short run's, the run's
directory included. :func:`lab_lines` gives scripts/lab.py one line per scenario.

Needs what lab/guest.py and lab/cuts.py need (``missing_parts``), mkfs.ext4, and an
``fsyncbench`` executable (:func:`fsyncbench_exe`).
"""

from __future__ import annotations

import argparse
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LAB = Path(__file__).resolve().parent
sys.path.insert(0, str(LAB))

import bridge  # noqa: E402
import guest  # noqa: E402

#: How the guest sees the drive: ``virtio-blk`` (``/dev/vda``; it advertises a volatile
#: write cache and no FUA, so the guest's FUA writes become a write and a FLUSH), or
#: ``nvme`` (``/dev/nvme0n1``, lab/guest.py's own: a volatile write cache with FUA). QEMU
#: 7.2's emulated NVMe controller does not pass the FUA bit on: measured here with
#: ``-trace nbd_send_request``, ext4's journal commit blocks (FUA writes) reach the drive
#: as plain writes (NBD flags 0x0) and no FLUSH follows them, so an honest drive behind it
#: holds the last journal commit in its cache until the next FLUSH (see the lab's notes).
DISKS = {
    "virtio-blk": ("/dev/vda", "virtio-blk-pci,drive=lab0,serial=fsblab0"),
    "nvme": ("/dev/nvme0n1", "nvme,serial=fsblab0,drive=lab0"),
}
DEFAULT_DISK = "virtio-blk"
#: The lab drive's image: 64 MiB, as lab/cuts.py's (IMAGE_BYTES).
IMAGE_BYTES = 64 << 20
#: The guest's view of the results share and the drive's mount point (lab/guest.py).
GUEST_SECRET = f"{guest.GUEST_RESULTS}/secret"
#: A guest boot, its writer's start and its verify take 10-70 s under TCG on this 2-core
#: machine depending on its load (measured: first commit 25-72 s after QEMU started).
BOOT_TIMEOUT_S = 300.0
#: A powered-on drive (``power-on``) is killed after this long at the latest: longer than
#: the verify retries :func:`cycles` allows (2 x BOOT_TIMEOUT_S).
KEEP_DRIVE_S = 3 * BOOT_TIMEOUT_S


def fsyncbench_exe() -> str | None:
    """The ``fsyncbench`` executable to run here and in the guest (the guest sees this
    machine's root): the one beside this Python, on PATH, or in the repository's .venv."""
    for candidate in (
        Path(sys.executable).with_name("fsyncbench"),
        Path(shutil.which("fsyncbench") or "/nonexistent"),
        LAB.parent / ".venv" / "bin" / "fsyncbench",
    ):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def missing_parts() -> str:
    """What this machine lacks for these scenarios ("" when nothing)."""
    import cuts

    missing = guest.missing_parts() or cuts.missing_parts()
    if missing:
        return missing
    if shutil.which("mkfs.ext4") is None:
        return "mkfs.ext4 is not installed (apt install e2fsprogs)"
    if fsyncbench_exe() is None:
        return "no fsyncbench executable (pip install -e . in a venv)"
    return ""


# --------------------------------------------------------------------------- the parts


def new_image(image: Path) -> None:
    """A fresh drive image holding an empty ext4 filesystem (made here, as a drive comes
    formatted; the guest only mounts it)."""
    with image.open("wb") as f:
        f.truncate(IMAGE_BYTES)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)


@contextlib.contextmanager
def _quiet_file(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        yield fd
    finally:
        os.close(fd)


def start_drive(
    work: Path, mode: str, *, name: str = "drive"
) -> tuple[subprocess.Popen[bytes], Path]:
    """nbdkit serving ``work/image`` as the lab drive in ``mode`` on the unix socket
    ``work/NAME.sock`` (its flush log ``work/NAME.log``); returns (process, socket) once
    it listens. The caller ends it with SIGKILL (a cut); RuntimeError if it does not start.
    nbdkit asks for SIGTERM when its parent exits (prctl PR_SET_PDEATHSIG, seen with
    strace), and a SIGTERM is a clean stop that writes the drive's cache back: the caller
    must outlive the cut."""
    import cuts

    sock, log = work / f"{name}.sock", work / f"{name}.log"
    sock.unlink(missing_ok=True)  # a killed nbdkit leaves its socket behind
    with _quiet_file(work / f"{name}.err") as err:
        proc = subprocess.Popen(
            [
                "nbdkit",
                "--foreground",
                "--unix",
                str(sock),
                "python",
                str(cuts.DRIVE),
                f"image={work / 'image'}",
                f"mode={mode}",
                f"log={log}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    deadline = time.perf_counter_ns() + 10 * 10**9
    while not sock.exists():
        if proc.poll() is not None or time.perf_counter_ns() > deadline:
            _kill(proc)
            raise RuntimeError(f"nbdkit did not start: {(work / f'{name}.err').read_text()}")
        time.sleep(0.01)
    return proc, sock


def _kill(*procs: subprocess.Popen[bytes]) -> None:
    """SIGKILL each (a power cut), then reap them."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
    for p in procs:
        p.wait()


def disk_argv(drive_socket: Path, disk: str) -> list[str]:
    """QEMU arguments attaching the drive at ``drive_socket`` as ``disk`` (:data:`DISKS`),
    through QEMU's own NBD client as lab/guest.py does."""
    return [
        "-drive",
        f"driver=nbd,server.type=unix,server.path={drive_socket},if=none,id=lab0,cache.direct=off",
        "-device",
        DISKS[disk][1],
    ]


def _bridge_script(port: int) -> str:
    return (
        f"python3 {shlex.quote(str(LAB / 'bridge.py'))} {port} > /tmp/bridge.out 2>&1 &\n"
        "i=0; until grep -q ready /tmp/bridge.out 2>/dev/null; do i=$((i+1)); "
        '[ $i -gt 600 ] && { echo "lab: no bridge"; cat /tmp/bridge.out; exit 3; }; '
        "sleep 0.1; done\n"
    )


def writer_script(port: int, disk: str = DEFAULT_DISK) -> str:
    """The writer guest's command: mount the drive, start the bridge, run the writer on
    ``/srv`` (again, up to 3 times, when it could not reach the listener: exit 2 before
    its run began, e.g. in a port's reconnect gap, lab/bridge.py)."""
    fsb = shlex.quote(fsyncbench_exe() or "fsyncbench")
    dev = DISKS[disk][0]
    return (
        f'mount {dev} {guest.GUEST_DISK} || {{ echo "lab: cannot mount"; exit 3; }}\n'
        + _bridge_script(port)
        + "for try in 1 2 3; do\n"
        f"  {fsb} powercut write --to 127.0.0.1:{port} --secret-file {GUEST_SECRET} "
        f"{guest.GUEST_DISK}; rc=$?\n"
        '  [ "$rc" -ne 2 ] && break; sleep 2\n'
        "done\n"
        "exit $rc\n"
    )


def verify_script(port: int, run_id: str, disk: str = DEFAULT_DISK) -> str:
    """The verify guest's command: mount the drive (as a boot does: e2fsck first when the
    mount fails), start the bridge, run verify on ``/srv`` for ``run_id``; its JSON in
    ``/mnt/verify.json``, its exit code the command's."""
    fsb = shlex.quote(fsyncbench_exe() or "fsyncbench")
    mnt, res, dev = guest.GUEST_DISK, guest.GUEST_RESULTS, DISKS[disk][0]
    return (
        f"mount {dev} {mnt} 2>/dev/null || {{ e2fsck -fy {dev} > {res}/fsck.txt "
        f'2>&1; mount {dev} {mnt} || {{ echo "lab: cannot mount"; exit 3; }}; }}\n'
        + _bridge_script(port)
        + f"{fsb} powercut verify --from 127.0.0.1:{port} --secret-file {GUEST_SECRET} "
        f"--run-id {run_id} --format json --report-dir {res}/reports {mnt} "
        f"> {res}/verify.json 2> {res}/verify.err\n"
        "rc=$?; cat " + f"{res}/verify.err >&2; exit $rc\n"
    )


def start_writer_guest(
    work: Path, mode: str, port: int, secret_file: Path, initrd: Path, disk: str = DEFAULT_DISK
) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes], bridge.HostRelay]:
    """A fresh ext4 drive in ``mode`` in ``work`` and a guest writing to it, reporting to
    the listener on this machine's ``port`` through a bridge: returns (QEMU, nbdkit, the
    bridge's relay here) at once, to be cut (close the relay after the cut)."""
    results = work / "writer"
    results.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(secret_file, results / "secret")
    new_image(work / "image")
    drive, sock = start_drive(work, mode)
    relay = bridge.HostRelay(("127.0.0.1", port))
    try:
        with (work / "writer-console.txt").open("wb") as console:
            qemu = guest.start(
                writer_script(port, disk),
                initrd,
                results,
                extra_argv=disk_argv(sock, disk) + bridge.qemu_argv(relay.path),
                console=console,
            )
    except BaseException:
        _kill(drive)
        relay.close()
        raise
    return qemu, drive, relay


def verify_in_guest(
    work: Path,
    port: int,
    secret_file: Path,
    run_id: str,
    initrd: Path,
    drive_socket: Path,
    disk: str = DEFAULT_DISK,
) -> tuple[int | None, str, str]:
    """Boot a guest on the drive at ``drive_socket`` (``work``'s image after the cut) that
    runs verify for ``run_id``: (its exit code, None when the guest did not finish; verify's
    JSON; its stderr and the guest's output)."""
    results = work / "verifier"
    if results.exists():
        shutil.rmtree(results)
    results.mkdir(parents=True)
    shutil.copyfile(secret_file, results / "secret")
    with bridge.HostRelay(("127.0.0.1", port)) as relay:
        got = guest.run(
            verify_script(port, run_id, disk),
            initrd,
            results,
            extra_argv=disk_argv(drive_socket, disk) + bridge.qemu_argv(relay.path),
            timeout_s=BOOT_TIMEOUT_S,
        )
    out = results / "verify.json"
    (work / "verify-console.txt").write_text(got.console)
    return got.rc, out.read_text() if out.exists() else "", got.output


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
            stdout=subprocess.DEVNULL,  # the secret and the command lines: not kept
            stderr=err,
        )
    try:
        port = _wait_listening(err_path, listener)
        secret = Path(f"{state}.secret")
        qemu, drive, relay = start_writer_guest(work, mode, port, secret, initrd, disk)
        try:
            deadline = time.perf_counter_ns() + int(BOOT_TIMEOUT_S * 1e9)
            while not (runs := {r: n for r, n in _recorded(state).items() if n}):
                if qemu.poll() is not None or time.perf_counter_ns() > deadline:
                    raise RuntimeError(
                        "the writer guest recorded no commit: " + _tail(work / "writer" / "out.txt")
                    )
                time.sleep(0.05)
            time.sleep(after_s)
        finally:
            _kill(qemu, drive)  # the cut: both at once
            relay.close()
        (run_id,) = runs
        acked = _recorded(state).get(run_id, 0)
        dropped = (work / "drive.log").read_text().count(" dropped ")
        on, sock = start_drive(work, "honest", name="restored")  # the power comes back
        try:
            rc, report, said = verify_in_guest(work, port, secret, run_id, initrd, sock, disk)
        finally:
            _kill(on)
    finally:
        listener.send_signal(signal.SIGINT)
        try:
            listener.wait(30)
        except subprocess.TimeoutExpired:
            _kill(listener)
    lost, spans = lost_of(report)
    return Cut(mode, after_s, run_id, acked, rc, lost, spans, dropped, said, disk)


def _tail(path: Path, chars: int = 600) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else "(no output)"


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
    me = f"{shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__).resolve()))}"
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
    """The truth of an honest drive behind QEMU's NVMe, which drops the FUA bit (DISKS):
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


# --------------------------------------------------------------------------- the commands


def _cmd_guest_write(a: argparse.Namespace) -> int:
    work: Path = a.work
    work.mkdir(parents=True, exist_ok=True)
    qemu, drive, relay = start_writer_guest(work, a.mode, a.port, a.secret_file, a.initrd, a.disk)
    (work / "pids").write_text(f"{qemu.pid} {drive.pid}\n")
    try:
        qemu.wait()
    finally:
        _kill(qemu, drive)  # never a clean stop of the drive: that would write its cache back
        relay.close()
    print(_tail(work / "writer" / "out.txt"))
    return 0


def _cmd_power_on(a: argparse.Namespace) -> int:
    """The drive, honest, on the cut image, left running when this command returns (for at
    most KEEP_DRIVE_S). nbdkit asks for SIGTERM when its parent exits (prctl
    PR_SET_PDEATHSIG, seen with strace), so a forked keeper in a session of its own stays
    its parent until the drive is killed."""
    work: Path = a.work
    pid_file = work / "restored.pid"
    pid_file.unlink(missing_ok=True)
    keeper = os.fork()
    if keeper == 0:  # the keeper
        code = 1
        try:
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            proc, _sock = start_drive(work, "honest", name="restored")
            pid_file.write_text(f"{proc.pid}\n")
            try:  # killed by the lab when its cycles end; never left running for long
                proc.wait(KEEP_DRIVE_S)
            except subprocess.TimeoutExpired:
                _kill(proc)
            code = 0
        finally:
            os._exit(code)
    deadline = time.perf_counter_ns() + 30 * 10**9
    while not pid_file.exists():
        done, _status = os.waitpid(keeper, os.WNOHANG)
        if done or time.perf_counter_ns() > deadline:
            print(
                f"lab: the drive did not power on: {_tail(work / 'restored.err')}", file=sys.stderr
            )
            return 1
        time.sleep(0.02)
    return 0


def _cmd_guest_verify(a: argparse.Namespace) -> int:
    work: Path = a.work
    sock = work / "restored.sock"
    if not sock.exists():
        print("lab: the drive is not powered on", file=sys.stderr)
        return 2
    rc, report, said = verify_in_guest(
        work, a.port, a.secret_file, a.run_id, a.initrd, sock, a.disk
    )
    sys.stdout.write(report)
    sys.stderr.write(said[-2000:])
    return 2 if rc is None else rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="the lab's commands for fsyncbench powercut cycle")
    sub = ap.add_subparsers(dest="action", required=True)
    w = sub.add_parser("guest-write", help="start: a fresh drive and the writer guest")
    w.add_argument("--mode", required=True)
    p = sub.add_parser("power-on", help="restore: the drive, honest, on the cut image")
    v = sub.add_parser("guest-verify", help="verify: a guest that runs verify")
    v.add_argument("--run-id", required=True)
    for s in (w, p, v):
        s.add_argument("--work", type=Path, required=True)
    for s in (w, v):
        s.add_argument("--port", type=int, required=True)
        s.add_argument("--secret-file", type=Path, required=True)
        s.add_argument("--initrd", type=Path, required=True)
        s.add_argument("--disk", choices=sorted(DISKS), default=DEFAULT_DISK)
    a = ap.parse_args(argv)
    run = {
        "guest-write": _cmd_guest_write,
        "power-on": _cmd_power_on,
        "guest-verify": _cmd_guest_verify,
    }
    return run[a.action](a)


if __name__ == "__main__":
    sys.exit(main())
