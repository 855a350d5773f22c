"""The parts of ``fsyncbench powercut`` in the lab (lab/powercuts.py runs the experiments):
the lab drive on an ext4 image (lab/drive.py behind nbdkit, lab/cuts.py), the writer guest
and the verify guest (lab/guest.py), each reaching the listener on this machine through
virtio-serial ports (lab/bridge.py: no guest network).

The writer guest mounts the drive at ``/srv`` and runs ``fsyncbench powercut write``; the
verify guest, booted from the image as the cut left it, mounts it (ext4 replays its
journal) and runs ``fsyncbench powercut verify`` on the same path and host name as the
writer, as the writer's own machine would after its reboot.

Run as a script, these are the commands ``fsyncbench powercut cycle`` runs in the lab
(lab/powercuts.py ``cycle_commands``): ``guest-write`` (start: a fresh drive and the writer
guest), ``power-on`` (restore: the drive, honest, on the cut image) and ``guest-verify``
(verify: the guest that runs verify), each ``python3 lab/powercut_guests.py ACTION ...``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

LAB = Path(__file__).resolve().parent
sys.path.insert(0, str(LAB))

import bridge  # noqa: E402
import cuts  # noqa: E402
import guest  # noqa: E402

#: How the guest sees the drive (lab/guest.py ``DRIVE_BUSES``): ``virtio-blk``
#: (``/dev/vda``; it advertises a volatile write cache and no FUA, so the guest's FUA
#: writes become a write and a FLUSH), or ``nvme`` (``/dev/nvme0n1``: a volatile write
#: cache with FUA). QEMU 7.2's emulated NVMe controller does not pass the FUA bit on:
#: measured here with ``-trace nbd_send_request``, ext4's journal commit blocks (FUA
#: writes) reach the drive as plain writes (NBD flags 0x0) and no FLUSH follows them, so an
#: honest drive behind it holds the last journal commit in its cache until the next FLUSH
#: (see the lab's notes).
DISKS = ("virtio-blk", "nvme")
DEFAULT_DISK = "virtio-blk"
#: The guest's view of the secret: in the results share (lab/guest.py).
GUEST_SECRET = f"{guest.GUEST_RESULTS}/secret"
#: A guest boot, its writer's start and its verify take 10-70 s under TCG on this 2-core
#: machine depending on its load (measured: first commit 25-72 s after QEMU started).
BOOT_TIMEOUT_S = 300.0
#: A powered-on drive (``power-on``) is killed after this long at the latest: longer than
#: the verify retries lab/powercuts.py's ``cycles`` allows (2 x BOOT_TIMEOUT_S).
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


def new_image(image: Path) -> None:
    """A fresh drive image holding an empty ext4 filesystem (made here, as a drive comes
    formatted; the guest only mounts it)."""
    with image.open("wb") as f:
        f.truncate(cuts.IMAGE_BYTES)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)


def start_drive(
    work: Path, mode: str, *, name: str = "drive"
) -> tuple[subprocess.Popen[bytes], Path]:
    """nbdkit serving ``work/image`` as the lab drive in ``mode`` on the unix socket
    ``work/NAME.sock`` (its flush log ``work/NAME.log``, its pid ``work/NAME.pid``); returns
    (process, socket) once it listens (lab/cuts.py ``serve``, which says what the caller
    must know of its end)."""
    sock = work / f"{name}.sock"
    return cuts.serve(work / "image", sock, mode, work / f"{name}.log"), sock


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
    dev = guest.DRIVE_DEVICE[disk]
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
    mnt, res, dev = guest.GUEST_DISK, guest.GUEST_RESULTS, guest.DRIVE_DEVICE[disk]
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
                drive_socket=sock,
                drive_bus=disk,
                extra_argv=bridge.qemu_argv(relay.path),
                console=console,
            )
    except BaseException:
        cuts.kill(drive)
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
            drive_socket=drive_socket,
            drive_bus=disk,
            extra_argv=bridge.qemu_argv(relay.path),
            timeout_s=BOOT_TIMEOUT_S,
        )
    out = results / "verify.json"
    (work / "verify-console.txt").write_text(got.console)
    return got.rc, out.read_text() if out.exists() else "", got.output


def tail(path: Path, chars: int = 600) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else "(no output)"


def _cmd_guest_write(a: argparse.Namespace) -> int:
    work: Path = a.work
    work.mkdir(parents=True, exist_ok=True)
    qemu, drive, relay = start_writer_guest(work, a.mode, a.port, a.secret_file, a.initrd, a.disk)
    (work / "pids").write_text(f"{qemu.pid} {drive.pid}\n")
    try:
        qemu.wait()
    finally:
        cuts.kill(qemu, drive)  # never a clean stop of the drive: that would write its cache back
        relay.close()
    print(tail(work / "writer" / "out.txt"))
    return 0


def _cmd_power_on(a: argparse.Namespace) -> int:
    """The drive, honest, on the cut image, left running when this command returns (for at
    most KEEP_DRIVE_S); it returns once nbdkit has written ``work/restored.pid``, which it
    does when it listens (lab/cuts.py ``serve``). nbdkit asks for SIGTERM when its parent
    exits (prctl PR_SET_PDEATHSIG, seen with strace), so a forked keeper in a session of its
    own stays its parent until the drive is killed."""
    work: Path = a.work
    pid_file = work / "restored.pid"  # nbdkit's --pidfile (start_drive)
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
            try:  # killed by the lab when its cycles end; never left running for long
                proc.wait(KEEP_DRIVE_S)
            except subprocess.TimeoutExpired:
                cuts.kill(proc)
            code = 0
        finally:
            os._exit(code)
    deadline = time.perf_counter_ns() + 30 * 10**9
    while not (pid_file.exists() and pid_file.read_text().endswith("\n")):
        done, _status = os.waitpid(keeper, os.WNOHANG)
        if done or time.perf_counter_ns() > deadline:
            print(
                f"lab: the drive did not power on: {tail(work / 'restored.err')}", file=sys.stderr
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
