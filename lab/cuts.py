"""Real power cuts of the lab drive (lab/drive.py) without a guest: nbdkit serves the drive
on a unix socket, lab/cutcheck.py appends acknowledged records to it, and a SIGKILL of
nbdkit at a seeded random moment is the cut; the image then shows what the drive kept.

Needs nbdkit with its Python plugin and the system Python's libnbd binding (Debian:
nbdkit, nbdkit-plugin-python, python3-libnbd); :func:`missing_parts` says what is absent.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

LAB = Path(__file__).resolve().parent
DRIVE = LAB / "drive.py"
CUTCHECK = LAB / "cutcheck.py"
#: The Python that has libnbd's binding and runs inside nbdkit (Debian's).
SYSTEM_PYTHON = "/usr/bin/python3"
IMAGE_BYTES = 64 << 20
#: How long nbdkit gets to listen on its socket (s); it takes well under one here, a
#: loaded machine may take a few.
READY_TIMEOUT_S = 30.0


def _load_cutcheck() -> ModuleType:
    """lab/cutcheck.py (its checker needs no libnbd), loaded once."""
    spec = importlib.util.spec_from_file_location("lab_cutcheck", CUTCHECK)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_CUTCHECK = _load_cutcheck()


def missing_parts() -> str:
    """What this machine lacks for a cut ("" when nothing): nbdkit, its Python plugin, or
    libnbd's Python binding."""
    if shutil.which("nbdkit") is None:
        return "nbdkit is not installed (apt install nbdkit nbdkit-plugin-python)"
    probe = subprocess.run(
        ["nbdkit", "python", "--version"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        return "nbdkit's Python plugin is not installed (apt install nbdkit-plugin-python)"
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import nbd"], capture_output=True, check=False)
    if probe.returncode != 0:
        return "the system Python lacks libnbd's binding (apt install python3-libnbd)"
    return ""


@dataclass(frozen=True)
class Cut:
    """One cut: the drive's ``mode``, how long the client ran before the kill
    (``after_s``), the records acknowledged (``acked``: the highest, 0 for none), the
    acknowledged ones the image lacks (``lost``), and the drive's flush log lines."""

    mode: str
    after_s: float
    acked: int
    lost: tuple[int, ...]
    log: tuple[str, ...]


def truth_holds(mode: str, c: Cut, cache_blocks: int = 1024) -> bool:
    """Whether cut ``c`` kept exactly what a drive in ``mode`` must keep (lab/drive.py),
    for records of one block each acknowledged one by one (batch 1) or, for the honest
    modes, any batch:

    - honest, write-through, slow: no acknowledged record lost;
    - lying: the acknowledged records still in its cache are lost, the older ones were
      evicted to the media: the newest ``cache_blocks`` writes (or one fewer, when the
      client had written its next, unacknowledged record);
    - lying-sometimes (batch 1, flush k after record k): the last acknowledged record is
      lost exactly when its flush was dropped, unless the cut came while the next flush
      was being honoured (the log says ``received`` without an outcome): then maybe not.
    """
    if mode in ("honest", "write-through", "slow"):
        return c.lost == ()
    if mode == "lying":
        newest = [
            tuple(range(max(1, c.acked - k + 1), c.acked + 1))
            for k in (cache_blocks, cache_blocks - 1)
        ]
        return c.lost in newest
    done = {int(w[2]): w[3] for w in (line.split() for line in c.log) if w[1] == "flush"}
    expected = (c.acked,) if c.acked and done.get(c.acked) == "dropped" else ()
    # under load the log may trail the cut; what must hold: only the last acknowledged
    # record can be lost, and only when its own flush was dropped
    return c.lost == expected or (c.lost == () and done.get(c.acked) != "honoured")


def serve(
    image: Path, sock: Path, mode: str, log: Path, **options: object
) -> subprocess.Popen[bytes]:
    """nbdkit serving ``image`` as the lab drive in ``mode`` (``options``: the drive's other
    settings, lab/drive.py) on the unix socket ``sock``, its flush log ``log``; returned
    once it accepts connections, never before. The caller ends it with :func:`kill` (a
    cut). nbdkit asks for SIGTERM when its parent exits (prctl PR_SET_PDEATHSIG, seen with
    strace), and a SIGTERM is a clean stop that writes the drive's cache back: the caller
    must outlive the cut.

    Whatever an earlier run left at ``sock`` (a killed nbdkit leaves its socket behind) is
    removed first: nbdkit cannot bind while it is there, and a client would connect to the
    stale file. Ready means nbdkit wrote its ``--pidfile`` (``sock`` with ``.pid``), which
    it does "after nbdkit becomes ready to accept connections" (nbdkit(1)); its stderr goes
    to ``sock`` with ``.err``. Raises RuntimeError, with nbdkit's own words, when it exits
    first or is not ready within :data:`READY_TIMEOUT_S` (then it is killed)."""
    pidfile, err_path = sock.with_suffix(".pid"), sock.with_suffix(".err")
    for stale in (sock, pidfile):
        stale.unlink(missing_ok=True)
    settings = [f"{k}={v}" for k, v in options.items()]
    with err_path.open("wb") as err:
        proc = subprocess.Popen(
            ["nbdkit", "--foreground", "--pidfile", str(pidfile), "--unix", str(sock)]
            + ["python", str(DRIVE), f"image={image}", f"mode={mode}", f"log={log}", *settings],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not _listening(pidfile, proc.pid):
        if proc.poll() is not None:
            raise RuntimeError(
                f"nbdkit exited (exit {proc.returncode}) before it listened on {sock}: "
                + _said(err_path)
            )
        if time.monotonic() >= deadline:
            kill(proc)
            raise RuntimeError(
                f"nbdkit did not listen on {sock} within {READY_TIMEOUT_S:g} s (killed): "
                + _said(err_path)
            )
        time.sleep(0.01)
    return proc


def _listening(pidfile: Path, pid: int) -> bool:
    """Has nbdkit ``pid`` written its whole pidfile (it writes it once it listens)?"""
    try:
        return pidfile.read_text() == f"{pid}\n"
    except FileNotFoundError:
        return False


def _said(err_path: Path) -> str:
    text = err_path.read_text(errors="replace").strip() if err_path.exists() else ""
    return text[-1000:] or "nothing on stderr"


def kill(*procs: subprocess.Popen[bytes]) -> None:
    """SIGKILL each (a power cut), then reap them."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
    for p in procs:
        p.wait()


@contextlib.contextmanager
def drive(workdir: Path, mode: str, **options: object) -> Iterator[tuple[Path, Path, Path]]:
    """A running lab drive in ``workdir`` on a fresh image, listening (:func:`serve`):
    yields (socket, image, log); killed with SIGKILL (a power cut) when the block ends if
    still running."""
    image, sock, log = workdir / "image", workdir / "nbd.sock", workdir / "drive.log"
    with image.open("wb") as f:
        f.truncate(IMAGE_BYTES)
    proc = serve(image, sock, mode, log, **options)
    try:
        yield sock, image, log
    finally:
        kill(proc)


def cut(
    mode: str,
    rng: random.Random,
    *,
    batch: int = 1,
    sync: str = "flush",
    max_after_s: float = 0.4,
    **options: object,
) -> Cut:
    """Run the client against a fresh drive in ``mode`` and kill nbdkit a random
    0.02-``max_after_s`` s (drawn from ``rng``) after the drive acknowledged the first
    record, so every cut falls while records are being written however slowly the
    processes start; returns what the image kept."""
    after_s = rng.uniform(0.02, max_after_s)
    seed = rng.randrange(1 << 30)
    with tempfile.TemporaryDirectory(prefix="fsb-lab-") as tmp:
        work = Path(tmp)
        with drive(work, mode, **options) as (sock, image, log):
            client = subprocess.Popen(
                [
                    SYSTEM_PYTHON,
                    str(CUTCHECK),
                    str(sock),
                    "--batch",
                    str(batch),
                    "--sync",
                    sync,
                    "--seed",
                    str(seed),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            assert client.stdout is not None
            first = client.stdout.readline()  # the first acknowledgement (or EOF)
            time.sleep(after_s)
        # the drive is dead (SIGKILL); the client sees the connection end
        out, _ = client.communicate(timeout=30)
        lines = (first + out).splitlines()
        acked = [int(line.split()[1]) for line in lines if line.startswith("ACK ")]
        lost = _CUTCHECK.check(str(image), acked, 4096, seed)
        lines = tuple(log.read_text().splitlines()) if log.exists() else ()
        return Cut(mode, after_s, max(acked, default=0), tuple(lost), lines)


if __name__ == "__main__":  # a quick look: one cut per mode
    r = random.Random(1)
    for m in ("honest", "lying", "lying-sometimes", "write-through"):
        c = cut(m, r)
        print(m, f"after {c.after_s:.2f} s: acked {c.acked}, lost {len(c.lost)}", os.linesep)
