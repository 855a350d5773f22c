"""The simulator against real cuts (issue 30, item 5): ``fsyncbench powerloss`` predicts,
per pragma combination, how many acknowledged commits a power loss can lose; here the same
step journal is committed in a QEMU guest on ext4 on the honest lab drive, cut for real, and
the losses counted.

**One cut.** Four lab drives (lab/drive.py behind nbdkit, ``honest`` mode, one per pragma in
:data:`PRAGMAS`), each with ext4 made on this machine (``mkfs.ext4`` defaults), are
attached to one guest (lab/guest.py) as four virtio disks (:data:`DRIVE_BUS`), so one cut
cuts all four (a guest boots in about 9 s under TCG; four guests per cut would take four
times as long). The guest mounts them with the defaults (``data=ordered``, barriers on)
and runs lab/stepwriter.py: one thread per drive committing fsyncbench's own step journal
under that drive's pragmas and writing ``ACK n`` to the results share after each COMMIT
returned. Once every drive has acknowledged its first commit, this process waits a seeded
random time (:data:`CUT_AFTER_S`) and SIGKILLs QEMU, then (within milliseconds) every
nbdkit: the drives' volatile caches are lost, the images keep what the drives made durable
(the guest is dead first, so no write and no ACK follows the cut).

**The check** (:func:`check_image`, root: a loop mount). A copy of each image is mounted
read-write on this machine, so ext4 replays its journal as a reboot would; SQLite opens
the database as an application would (a hot journal rolled back, a WAL recovered), then
``PRAGMA integrity_check``, and every acknowledged step row must be there with the content
its commit wrote (:func:`fsyncbench.measure.workloads.step_row`).

**The prediction** (:func:`predict`): ``fsyncbench powerloss --semantics linux --model
synced-only,prefix,subset --format json`` on this machine for the same pragmas (its SQLite
is apsw's, the guest's that of the system Python: 3.54.1 and 3.40.1 here). The bound per
pragma is the worst any of the three models allows; ``powerloss`` records 10 commits, so a
worst of 10 of 10 means "every commit since the last sync" (no bound on a longer run).

**Agreement** (:func:`agrees`): the real losses never exceed the bound (a pragma predicted
to lose nothing lost nothing), and a database was corrupt after a cut only where some model
has corrupt states.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib.util
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

LAB = Path(__file__).resolve().parent
ROOT = LAB.parent
WRITER = LAB / "stepwriter.py"
#: The pragma combinations of issue 30 item 5, one drive each, in drive order.
PRAGMAS: tuple[tuple[str, str], ...] = (
    ("wal", "full"),
    ("wal", "normal"),
    ("delete", "full"),
    ("delete", "extra"),
)
#: ``powerloss``'s models compared (docs/powerloss.md); ``torn`` is left out: ext4 on a
#: 4 KiB-block drive writes whole blocks, and torn needs psow off, which the guest's
#: SQLite does not set.
MODELS = ("synced-only", "prefix", "subset")
#: The step journal's payload (``run``'s and ``powerloss``'s default, bytes).
PAYLOAD_BYTES = 512
#: The cut falls this long (s, uniform, seeded) after every drive's first ACK: a range that
#: spans tens of commits of each pragma under TCG (wal/full 20-50 commits/s here, delete
#: 10-25) and keeps a cut near 20 s in all.
CUT_AFTER_S = (0.05, 2.0)
#: Guard on a guest that never acknowledges (s); a boot and the writer's start take 13-20 s
#: here (10-13 s of it the boot).
FIRST_ACK_TIMEOUT_S = 150.0
#: How the drives are attached (lab/guest.py qemu_argv): virtio-blk, because behind QEMU
#: 7.2's NVMe controller the guest's FUA writes reach the drive as plain writes (measured
#: here, lab/README.md), which makes the honest drive lose the last acknowledged commit.
DRIVE_BUS = "virtio-blk"


def _load(name: str) -> ModuleType:
    """lab/NAME.py as ``lab_NAME`` (the one tests/labtools.py registers, if loaded)."""
    if f"lab_{name}" in sys.modules:
        return sys.modules[f"lab_{name}"]
    spec = importlib.util.spec_from_file_location(f"lab_{name}", LAB / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[f"lab_{name}"] = mod
    spec.loader.exec_module(mod)
    return mod


guest = _load("guest")
cuts = _load("cuts")


def label(pragma: tuple[str, str]) -> str:
    """``wal/full`` for ("wal", "full"): fsyncbench's Pragmas.label."""
    return f"{pragma[0]}/{pragma[1]}"


def fsyncbench_python() -> str | None:
    """A Python that imports fsyncbench and apsw (``powerloss`` needs both): this one, or
    the repository's ``.venv``; None when neither does."""
    for python in (sys.executable, str(ROOT / ".venv" / "bin" / "python")):
        if not Path(python).exists():
            continue
        probe = subprocess.run(
            [python, "-c", "import fsyncbench.powerloss.sqlite"],
            capture_output=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
        if probe.returncode == 0:
            return python
    return None


def missing_parts() -> str:
    """What this machine lacks for the real cuts ("" when nothing): the guest's parts, the
    drive's, root (loop mounts), or a Python with fsyncbench and apsw."""
    missing = str(guest.missing_parts() or cuts.missing_parts())
    if missing:
        return missing
    if os.geteuid() != 0:
        return "the check mounts each cut image on a loop device, which needs root"
    if shutil.which("mount") is None or shutil.which("mkfs.ext4") is None:
        return "mount or mkfs.ext4 is missing (apt install util-linux e2fsprogs)"
    if fsyncbench_python() is None:
        return "no Python here imports fsyncbench and apsw (pip install -e . in .venv)"
    return ""


# ----------------------------------------------------------------------------- the guest


def guest_command(python: str, pragmas: Sequence[tuple[str, str]] = PRAGMAS) -> str:
    """The guest's shell command: drive ``fsblab<i>`` (found by serial; its ext4 made
    beforehand) mounted on ``/tmp/d<i>`` for each pragma, in the background, while one
    stepwriter for all (``/mnt/acks-<i>.txt``) starts and waits for the mounts."""
    n = len(pragmas)
    # shell builtins only in the loop (a fork costs ~0.1 s under TCG); NVMe pads its serial
    # with spaces, which read strips
    lines = [
        "export PYTHONDONTWRITEBYTECODE=1",
        f"mkdir {' '.join(f'/tmp/d{i}' for i in range(n))}",
        "for s in /sys/block/nvme* /sys/block/vd*; do",
        "  f=$s/serial; [ -e $f ] || f=$s/device/serial; [ -e $f ] || continue",
        "  read ser < $f",
        "  case $ser in fsblab*) mount -t ext4 /dev/${s##*/} /tmp/d${ser#fsblab} & ;; esac",
        "done",
    ]
    specs = [
        f"/tmp/d{i},{mode},{sync},{guest.GUEST_RESULTS}/acks-{i}.txt"
        for i, (mode, sync) in enumerate(pragmas)
    ]
    lines.append(
        f"cd /tmp && PYTHONPATH={ROOT} {python} {WRITER} --wait-mount 60 {' '.join(specs)}"
    )
    return "\n".join(lines)


_ACK = re.compile(r"ACK (\d+)\n")


def read_acks(path: Path) -> tuple[str, int]:
    """(the pragmas the writer put in force, the highest step acknowledged: 0 for none) from
    an ACK file; a line the cut left unfinished does not count. Raises ValueError when the
    acknowledgements are not 1, 2, ... in order."""
    text = path.read_text() if path.exists() else ""
    head = text.split("\n", 1)[0]
    in_force = head.removeprefix("PRAGMAS ") if head.startswith("PRAGMAS ") else ""
    acked = [int(n) for n in _ACK.findall(text)]
    if acked != list(range(1, len(acked) + 1)):
        raise ValueError(f"{path}: acknowledgements out of order")
    return in_force, len(acked)


@dataclass(frozen=True)
class Outcome:
    """One pragma's drive after one cut: ``acked`` steps acknowledged (1..acked), the
    acknowledged ones the database lacks or holds damaged (``lost``), and ``problem``: ""
    for a sound database, else why not (integrity_check's first line, SQLite's error, a
    file system that did not mount, a missing database)."""

    label: str
    acked: int
    lost: tuple[int, ...]
    problem: str


@dataclass(frozen=True)
class CutRun:
    """One cut of all drives: when it fell (s after every drive's first ACK), each
    pragma's outcome in :data:`PRAGMAS` order, the cut's wall time (s: the drives started
    to the images checked) and how much of it passed before every drive's first ACK (s)."""

    after_s: float
    outcomes: tuple[Outcome, ...]
    took_s: float
    first_ack_s: float


def open_steps(db: Path) -> tuple[dict[int, tuple[Any, ...]], str]:
    """Open the step journal ``db`` with SQLite as an application would (a hot journal
    rolled back, a WAL recovered), ``PRAGMA integrity_check``, and read every step row.
    Returns (seq -> row, problem): problem "" when the database is sound, else why not."""
    if not db.exists():
        return {}, "no database file"
    try:
        conn = sqlite3.connect(str(db), isolation_level=None)
        try:
            check = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
            rows = {int(r[1]): tuple(r) for r in conn.execute("SELECT * FROM steps")}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return {}, f"{type(exc).__name__}: {exc}"
    return rows, "" if check == ["ok"] else f"integrity_check: {check[0]}"


def lost_steps(rows: Mapping[int, tuple[Any, ...]], acked: int) -> tuple[int, ...]:
    """The steps 1..``acked`` that ``rows`` lacks or holds with other content than the
    commit wrote (each row checked against step_row of its own run id)."""
    from fsyncbench.measure.workloads import step_row

    return tuple(
        n
        for n in range(1, acked + 1)
        if (row := rows.get(n)) is None or row != step_row(str(row[0]), n, PAYLOAD_BYTES)
    )


def check_image(image: Path, pragma_label: str, acked: int, work: Path) -> Outcome:
    """Mount a copy of ``image`` read-write on a loop device (ext4 replays its journal),
    open its step journal (:func:`open_steps`) and count the acknowledged steps missing.
    Needs root; ``work`` holds the copy and the mount point (removed again)."""
    copy, mnt = work / "check.img", work / "check.mnt"
    shutil.copyfile(image, copy)
    mnt.mkdir(exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "ext4", "-o", "loop,rw", str(copy), str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        if mounted.returncode != 0:
            return Outcome(
                pragma_label,
                acked,
                tuple(range(1, acked + 1)),
                f"ext4 did not mount: {mounted.stderr.strip()}",
            )
        db = mnt / f"journal-{pragma_label.replace('/', '-')}.db"
        rows, problem = open_steps(db)
        return Outcome(pragma_label, acked, lost_steps(rows, acked), problem)
    finally:
        if mounted.returncode == 0:
            subprocess.run(["umount", str(mnt)], capture_output=True, check=True)
        copy.unlink()
        mnt.rmdir()


def _mkfs(image: Path) -> None:
    """ext4 with mkfs.ext4's defaults on ``image``. Raises CalledProcessError."""
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], capture_output=True, check=True)


def _wait_first_acks(proc: subprocess.Popen[bytes], acks: list[Path], console: list[bytes]) -> None:
    """Return once every ACK file holds ``ACK 1``; RuntimeError when the guest ends first or
    :data:`FIRST_ACK_TIMEOUT_S` passes."""
    deadline = time.monotonic() + FIRST_ACK_TIMEOUT_S
    while not all(p.exists() and "ACK 1\n" in p.read_text() for p in acks):
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = b"".join(console).decode(errors="replace")[-1500:]
            raise RuntimeError(f"the guest acknowledged no commit on some drive:\n{tail}")
        time.sleep(0.02)


def cut_once(
    initrd: Path, rng: random.Random, python: str, workdir: Path, bus: str = DRIVE_BUS
) -> CutRun:
    """One real cut of the four-drive guest (module docstring), checked; ``workdir`` is
    an empty scratch directory; ``bus`` as :data:`DRIVE_BUS`. Raises RuntimeError when the
    guest never acknowledges."""
    start = time.perf_counter_ns()
    after_s = rng.uniform(*CUT_AFTER_S)
    results = workdir / "results"
    results.mkdir()
    acks = [results / f"acks-{i}.txt" for i in range(len(PRAGMAS))]
    console: list[bytes] = []
    with contextlib.ExitStack() as stack:
        drives = []
        for i in range(len(PRAGMAS)):
            (workdir / f"drive{i}").mkdir()
            drives.append(stack.enter_context(cuts.drive(workdir / f"drive{i}", "honest")))
            # ext4 made here, not in the guest (2 s of TCG per cut saved): the drive has
            # cached nothing yet, so the image is what the guest will read
            _mkfs(drives[-1][1])
        proc = guest.start(
            guest_command(python),
            initrd,
            results,
            drive_sockets=[d[0] for d in drives],
            drive_bus=bus,
        )
        stack.callback(proc.wait)
        stack.callback(proc.kill)  # SIGKILL; runs first, then the drives' SIGKILLs
        assert proc.stdout is not None
        drain = threading.Thread(target=lambda: console.extend(proc.stdout or ()), daemon=True)
        drain.start()
        _wait_first_acks(proc, acks, console)
        acked_ns = time.perf_counter_ns()
        time.sleep(after_s)
    # the cut: QEMU, then every nbdkit, killed (ExitStack unwinds in reverse)
    outcomes = []
    for (mode, sync), ack_file, (_sock, image, _log) in zip(PRAGMAS, acks, drives, strict=True):
        in_force, acked = read_acks(ack_file)
        if in_force != label((mode, sync)):
            raise RuntimeError(f"the guest's SQLite kept {in_force!r}, not {mode}/{sync}")
        outcomes.append(check_image(image, label((mode, sync)), acked, workdir))
    end = time.perf_counter_ns()
    return CutRun(after_s, tuple(outcomes), (end - start) / 1e9, (acked_ns - start) / 1e9)


def real_cuts(seed: int, n: int, python: str) -> Iterator[CutRun]:
    """``n`` cuts (seeded moments), each in a scratch directory removed afterwards."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="fsb-simcheck-") as tmp:
        initrd = guest.build_initramfs(Path(tmp) / "initrd.gz")
        for i in range(n):
            work = Path(tmp) / f"cut{i}"
            work.mkdir()
            yield cut_once(initrd, rng, python, work)
            shutil.rmtree(work)


# ---------------------------------------------------------------------- the prediction


@dataclass(frozen=True)
class Prediction:
    """What ``powerloss`` allows for one pragma: ``bound`` acknowledged commits lost at most
    per cut (None: every commit since the last sync), ``corrupt_states`` over the models,
    and per model (name, worst lost, corrupt states) of ``commits`` recorded."""

    label: str
    bound: int | None
    corrupt_states: int
    by_model: tuple[tuple[str, int, int], ...]
    commits: int


def parse_prediction(report: Mapping[str, Any]) -> dict[str, Prediction]:
    """Predictions per pragma label from a ``powerloss`` JSON report. Raises KeyError or
    ValueError on a report of another shape."""
    pl = report["powerloss"]
    out = {}
    for config in pl["configs"]:
        p = config["pragmas"]
        name = f"{p['journal_mode']}/{p['synchronous']}".lower()
        models = tuple(
            (str(m["model"]), int(m["worst_lost"]), int(m["corrupt_states"]))
            for m in config["models"]
            if not m["invalid"]
        )
        if not models:
            raise ValueError(f"powerloss judged no model valid for {name}")
        worst = max(m[1] for m in models)
        commits = int(config["commits"])
        out[name] = Prediction(
            name, None if worst >= commits else worst, sum(m[2] for m in models), models, commits
        )
    return out


def predict(
    python: str, seed: int, pragmas: Sequence[tuple[str, str]] = PRAGMAS
) -> dict[str, Prediction]:
    """Run ``fsyncbench powerloss`` here (linux semantics, :data:`MODELS`, ``seed`` for
    the sampled subset states) once per journal mode; predictions by label. Raises
    RuntimeError when it fails."""
    by_mode: dict[str, list[str]] = {}
    for mode, sync in pragmas:
        by_mode.setdefault(mode, []).append(sync)
    out: dict[str, Prediction] = {}
    with tempfile.TemporaryDirectory(prefix="fsb-simcheck-pl-") as tmp:
        for mode, syncs in by_mode.items():
            argv = [python, "-m", "fsyncbench", "powerloss", tmp, "--journal-mode", mode]
            argv += ["--synchronous", ",".join(syncs), "--model", ",".join(MODELS)]
            argv += ["--semantics", "linux", "--seed", str(seed), "--format", "json"]
            got = subprocess.run(
                [*argv, "--no-report", "--quiet"],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                check=False,
            )
            if got.returncode != 0:
                raise RuntimeError(f"fsyncbench powerloss failed: {got.stderr.strip()}")
            out.update(parse_prediction(json.loads(got.stdout)))
    return {label(p): out[label(p)] for p in pragmas}


# ------------------------------------------------------------------------- the comparison


@dataclass(frozen=True)
class Tally:
    """One pragma over all cuts: ``cuts``, ``acknowledged`` steps (summed), the most lost in
    one cut and in all, the cuts that lost something, the cuts whose database was not
    sound (``corrupt``), and the cuts whose loss was not the newest acknowledged steps
    (``not_newest``: SQLite's commits are atomic and in order, so a sound database that
    kept a step but lost an earlier one would be a finding of its own)."""

    label: str
    cuts: int
    acknowledged: int
    lost_max: int
    lost_total: int
    cuts_with_loss: int
    corrupt: int
    not_newest: int = 0


def tally(pragma_label: str, runs: Sequence[CutRun]) -> Tally:
    """The :class:`Tally` of ``pragma_label`` over ``runs``."""
    got = [o for r in runs for o in r.outcomes if o.label == pragma_label]
    return Tally(
        pragma_label,
        len(got),
        sum(o.acked for o in got),
        max((len(o.lost) for o in got), default=0),
        sum(len(o.lost) for o in got),
        sum(1 for o in got if o.lost),
        sum(1 for o in got if o.problem),
        sum(1 for o in got if o.lost and o.lost != tuple(range(o.lost[0], o.acked + 1))),
    )


def agrees(t: Tally, p: Prediction) -> bool:
    """Whether the real cuts stay within the prediction: no cut lost more than the bound
    (so a pragma predicted to lose nothing lost nothing), and a database was corrupt only
    where some model has corrupt states."""
    return (p.bound is None or t.lost_max <= p.bound) and (t.corrupt == 0 or p.corrupt_states > 0)


def line(t: Tally, p: Prediction) -> tuple[str, str, str, bool]:
    """(scenario, truth, what powerloss predicted, agree) for scripts/lab.py."""
    scenario = f"powerloss vs real cuts, {t.label} on ext4, honest drive"
    truth = (
        f"{t.cuts} cuts, {t.acknowledged} acknowledged, lost max {t.lost_max} "
        f"(total {t.lost_total}, in {t.cuts_with_loss} cuts"
        + (f", {t.not_newest} not the newest" if t.not_newest else "")
        + f"), {t.corrupt} corrupt"
    )
    bound = "every commit since the last sync" if p.bound is None else str(p.bound)
    models = ", ".join(f"{m} {w}" for m, w, _ in p.by_model)
    said = f"lost at most {bound} ({models} of {p.commits}), {p.corrupt_states} corrupt states"
    return scenario, truth, said, agrees(t, p)


def experiment(
    seed: int, cuts: int = 20
) -> tuple[list[Tally], dict[str, Prediction], list[CutRun]]:
    """The whole experiment: the prediction, then ``cuts`` real cuts (module docstring).
    Raises RuntimeError when a part is missing (:func:`missing_parts`) or a step fails."""
    missing = missing_parts()
    if missing:
        raise RuntimeError(missing)
    python = fsyncbench_python()
    assert python is not None
    # the prediction (5-20 s here) runs beside the first cuts
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        predicted = pool.submit(predict, python, seed)
        runs = list(real_cuts(seed, cuts, python))
        predictions = predicted.result()
    return [tally(label(p), runs) for p in PRAGMAS], predictions, runs


def lab_lines(seed: int, cuts: int = 20) -> list[tuple[str, str, str, bool]]:
    """One line per pragma of :data:`PRAGMAS`: (scenario, truth = what the real cuts
    showed, what ``fsyncbench powerloss`` predicted, agree). Raises RuntimeError as
    :func:`experiment`."""
    tallies, predictions, _runs = experiment(seed, cuts)
    return [line(t, predictions[t.label]) for t in tallies]


if __name__ == "__main__":  # a quick look: two cuts
    for row in lab_lines(0, 2):
        print(row)
