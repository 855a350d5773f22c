"""``fsyncbench audit`` against the truth (issue 30, item 3): a guest (lab/guest.py) with the
hypervisor hidden runs ``fsyncbench audit`` on a freshly made ext4 on the lab drive
(lab/drive.py behind nbdkit, lab/cuts.py), and its verdict is checked against the drive's
mode.

Two kinds of scenario:

- **latency can tell**: the drive is presented as a 7,200 rpm SATA disk (``sata-hdd``),
  whose honest flush waits for the platter: fsyncbench's spinning-disk floor is 2 ms
  (fsyncbench.judge.devices.SPINNING_FLOOR_NS, docs/verdicts.md "Latency bands by device
  class"). A lying drive acknowledges FLUSH at the pace of QEMU's TCG (about 0.8 ms here)
  and must be called ``volatile_cache`` or ``no_flush``; the ``slow`` honest drive
  (``flush_latency_ms`` 10, like a platter) must be called ``honest_flush``.
- **latency cannot tell**: the drive as an NVMe SSD with a volatile cache (floor 150 µs),
  its model shown as ``LAB NVME SSD`` (QEMU's ``QEMU NVMe Ctrl`` is an emulated disk's to
  fsyncbench, whose VM rule would decide: lab/guest.py HIDE_NVME_MODEL),
  honest and lying both at about 1 ms under TCG. Audit agrees when it does not give a clean
  bill: ``honest_flush`` for the honest drive, and for the lying one either a risk verdict
  or an answer that defers to a power cut (fsyncbench.report.answer.TRUST_UNPROVEN: "a drive
  that drops flushes at the pace of real ones looks the same until a power cut").

Whether latency told is measured per run (:func:`latency_told`): the lying drive's
fdatasync median against the floor audit held it to. On a machine loaded far beyond its
cores the lying "spinning disk" can be slowed past its floor; it is then judged as the
NVMe pair is.

The fsyncbench that runs (in the guest, over the 9p root, and on this machine for
``fsyncbench show``) is the one installed next to ``sys.executable``, else the one on PATH
(:func:`fsyncbench_path`); the guest sees this machine's root, so it is the same file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

LAB = Path(__file__).resolve().parent

#: Audit options that keep one guest audit near a minute under TCG (a default audit there
#: takes about two): fewer samples and a shorter budget per primitive and configuration,
#: a smaller dirty-size sweep, fewer traced commits. The fdatasync primitive still issues
#: well over the 50 syncs the counter rules need to judge (docs/verdicts.md, signal 3).
QUICK_AUDIT = (
    "--samples",
    "80",
    "--budget-seconds",
    "2",
    "--compare-syncs",
    "40",
    "--sweep-repeats",
    "2",
    "--sweep-max-mib",
    "4",
    "--trace-commits",
    "3",
)
#: Verdicts that say the flush is not made durable (fsyncbench.model).
RISK_VERDICTS = ("volatile_cache", "no_flush")


def _lab_module(name: str) -> ModuleType:
    """lab/NAME.py, loaded once (as ``lab_NAME``, as tests/labtools.py names them)."""
    key = f"lab_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, LAB / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


guest = _lab_module("guest")
cuts = _lab_module("cuts")


def fsyncbench_path() -> Path | None:
    """The installed ``fsyncbench`` console script: next to ``sys.executable`` (a venv),
    else on PATH; None when neither exists."""
    beside = Path(sys.executable).with_name("fsyncbench")
    if beside.exists():
        return beside
    found = shutil.which("fsyncbench")
    return Path(found) if found else None


def missing_parts() -> str:
    """What this machine lacks for a guest audit ("" when nothing): a guest's parts
    (lab/guest.py), the drive's (lab/cuts.py), or an installed fsyncbench."""
    missing: str = guest.missing_parts() or cuts.missing_parts()
    if missing:
        return missing
    if fsyncbench_path() is None:
        return "no installed fsyncbench next to this Python or on PATH (pip install -e .)"
    return ""


@dataclass(frozen=True)
class Scenario:
    """One audit scenario: the drive's ``mode`` and options (lab/drive.py), how the guest
    sees it (``bus``: lab/guest.py DRIVE_BUSES), the truth (``honest``: every acknowledged
    flush reaches the image), and whether latency can tell this drive from its opposite
    (``latency_tells``: module docstring). ``hide_model``: the guest shows the NVMe drive
    as ``LAB NVME SSD`` (lab/guest.py HIDE_NVME_MODEL), since QEMU's own model string,
    ``QEMU NVMe Ctrl``, is an emulated disk's to fsyncbench and the VM rule would decide
    before latency is weighed."""

    name: str
    mode: str
    bus: str
    honest: bool
    latency_tells: bool
    options: dict[str, object] = field(default_factory=dict)
    hide_model: bool = False

    @property
    def truth(self) -> str:
        """The truth in words."""
        what = (
            "honest: every FLUSH reaches the image" if self.honest else "lying: every FLUSH dropped"
        )
        if self.options.get("flush_latency_ms"):
            what += f", {self.options['flush_latency_ms']} ms per flush"
        return what + ("" if self.latency_tells else "; latency cannot tell")


#: The scenarios of scripts/lab.py, latency-can-tell first.
SCENARIOS = (
    Scenario("lying drive as a 7,200 rpm disk", "lying", "sata-hdd", False, True),
    Scenario(
        "slow honest drive (10 ms flush) as a 7,200 rpm disk",
        "slow",
        "sata-hdd",
        True,
        True,
        {"flush_latency_ms": 10},
    ),
    # these two rely on a disk the judge does not recognise as emulated: the model is hidden
    Scenario("honest drive as an NVMe SSD", "honest", "nvme", True, False, hide_model=True),
    Scenario("lying drive as an NVMe SSD", "lying", "nvme", False, False, hide_model=True),
)


@dataclass(frozen=True)
class Outcome:
    """What audit said about one scenario's drive.

    ``verdict``, ``strength``, ``decided_by``: the report's path verdict, how it was
    established and its deciding finding's code; ``fdatasync_p50_ns``: the write+fdatasync
    primitive's median (ns, None when not measured); ``flushes_per_sync``: device flushes
    per fdatasync counted on the disk (None when not read); ``device_class`` and
    ``floor_ns``: the class and honest-flush floor (ns) the deciding finding names, when it
    names them; ``trust``: the answer's "Trust the storage?" sentence as ``fsyncbench show``
    prints it; ``next_step``: its "Next step:" paragraph; ``flushes_received`` and
    ``flushes_dropped``: the FLUSH commands the drive logged, and how many it dropped;
    ``took_s``: the guest's wall time (s); ``load``: this machine's 1-minute load average
    when the guest ended, and ``cores`` its CPU count (os.getloadavg, os.cpu_count): TCG
    adds the host's scheduling delays to every flush the guest times."""

    verdict: str
    strength: str
    decided_by: str
    fdatasync_p50_ns: float | None
    flushes_per_sync: float | None
    device_class: str | None
    floor_ns: float | None
    trust: str
    next_step: str
    flushes_received: int
    flushes_dropped: int
    took_s: float
    load: float = 0.0
    cores: int = 1

    def said(self) -> str:
        """What fsyncbench said, in one line: the verdict, how, the fdatasync median against
        the floor the deciding finding names, and the answer's first words."""
        p50 = "-" if self.fdatasync_p50_ns is None else f"{self.fdatasync_p50_ns / 1e6:.2f} ms"
        floor = (
            ""
            if self.floor_ns is None
            else f" ({self.device_class}: floor {self.floor_ns / 1e6:g} ms)"
        )
        return (
            f"{self.verdict} ({self.strength}, {self.decided_by}), fdatasync p50 {p50}{floor}, "
            f"trust the storage? {self.trust.split(':')[0]} (load {self.load:.1f} on "
            f"{self.cores} cores)"
        )


def latency_told(o: Outcome) -> bool:
    """Whether latency could tell on this run: the fdatasync median was below the floor of
    the device class audit held the disk to (fsyncbench.judge.devices), so no honest flush
    to that medium is that fast. A scenario meant to show it (``latency_tells``) may not on
    a machine loaded far beyond its cores: TCG adds the host's scheduling delays to every
    flush (the lying drive as a spinning disk measured 0.7-1.8 ms against its 2 ms floor
    here, at load 3-6.5 on 2 cores)."""
    return (
        o.fdatasync_p50_ns is not None
        and o.floor_ns is not None
        and o.fdatasync_p50_ns < o.floor_ns
    )


def agrees(s: Scenario, o: Outcome) -> bool:
    """Whether audit's outcome ``o`` matches scenario ``s``'s truth (module docstring): an
    honest drive must be ``honest_flush``; a lying one a risk verdict where latency told
    (:func:`latency_told`), else either a risk verdict or an answer that is no clean bill
    (a ``Trust the storage?`` that is not "Yes" and names a power cut)."""
    if s.honest:
        return o.verdict == "honest_flush"
    if o.verdict in RISK_VERDICTS:
        return True
    defers = "power cut" in o.trust.lower() and not o.trust.lower().startswith("yes")
    return not latency_told(o) and defers


def _between(text: str, start: str, end: str) -> str:
    """The words of ``text`` after ``start`` and before ``end`` ("" without ``start``)."""
    flat = " ".join(text.split())
    if start not in flat:
        return ""
    return flat.split(start, 1)[1].split(end, 1)[0].strip()


def parse(report: dict[str, Any], shown: str) -> dict[str, Any]:
    """The fields of :class:`Outcome` a saved audit report (its JSON, as a dict) and its
    ``fsyncbench show`` text give (all but the drive's counts and the time). Raises
    KeyError when the report has no verdict."""
    v = report["verdict"]
    fdatasync = next(
        (r for r in report.get("results", []) if r.get("name") == "write+fdatasync"), None
    )
    p50 = None if fdatasync is None else fdatasync["summary"]["p50_ns"]
    deciding: dict[str, Any] = next(
        (
            f
            for f in v.get("findings", [])
            if f.get("code") == v["decided_by"] and f.get("stance") == "decides"
        ),
        {},
    )
    ev = deciding.get("evidence") or {}
    ratio = ev.get("flushes_per_sync")
    if ratio is None and fdatasync is not None and fdatasync.get("syncs_issued"):
        flushes = [d.get("flushes") for d in fdatasync.get("device_flushes") or []]
        counted = [n for n in flushes if n is not None]
        ratio = min(counted) / fdatasync["syncs_issued"] if counted else None
    return {
        "verdict": v["path_verdict"],
        "strength": v["strength"],
        "decided_by": v["decided_by"],
        "fdatasync_p50_ns": p50,
        "flushes_per_sync": ratio,
        "device_class": ev.get("device_class"),
        "floor_ns": ev.get("floor_ns"),
        "trust": _between(shown, "Trust the storage?", " Path verdict:").rstrip("."),
        "next_step": _between(shown, "Next step:", " Latency ("),
    }


def run_audit(
    scenario: Scenario,
    initrd: Path,
    workdir: Path,
    audit_args: tuple[str, ...] = QUICK_AUDIT,
    timeout_s: float = 300.0,
) -> Outcome:
    """Run ``scenario``: a fresh drive in ``workdir`` (lab/cuts.py drive), a guest with the
    hypervisor hidden that makes ext4 on it and runs ``fsyncbench audit --format json`` with
    ``audit_args``; then ``fsyncbench show`` of the report here. Returns the outcome; raises
    RuntimeError (with the guest's output and console tail) when the guest or audit fails,
    and when fsyncbench is not installed."""
    fsb = fsyncbench_path()
    if fsb is None:
        raise RuntimeError(missing_parts())
    results, drive_dir = workdir / "results", workdir / "drive"
    results.mkdir(parents=True, exist_ok=True)
    drive_dir.mkdir(parents=True, exist_ok=True)
    dev = guest.DRIVE_DEVICE[scenario.bus]
    # a SCSI disk's command timeout is 30 s (SD_TIMEOUT, drivers/scsi/sd.h): as with the
    # NVMe io_timeout lab/guest.py raises, a loaded host must not turn a slow FLUSH into EIO
    timeout = (
        f"echo 600 > /sys/block/{Path(dev).name}/device/timeout && "
        if dev.startswith("/dev/sd")
        else ""
    )
    hide = guest.HIDE_NVME_MODEL if scenario.hide_model else ""
    command = (
        f"{hide}{timeout}mkfs.ext4 -q {dev} && mount {dev} {guest.GUEST_DISK} && "
        f"{fsb} audit {guest.GUEST_DISK} --no-report --quiet --format json "
        f"-o {guest.GUEST_RESULTS}/audit.json {' '.join(audit_args)}"
    )
    with cuts.drive(drive_dir, scenario.mode, **scenario.options) as (sock, _image, log):
        got = guest.run(
            command,
            initrd,
            results,
            drive_socket=sock,
            hide_vm=True,
            timeout_s=timeout_s,
            drive_bus=scenario.bus,
        )
        drive_log = log.read_text() if log.exists() else ""
    report_file = results / "audit.json"
    if got.rc != 0 or not report_file.exists():
        raise RuntimeError(
            f"{scenario.name}: the guest's audit failed (rc {got.rc}): "
            f"{got.output[-2000:]}\n--- console\n{got.console[-1500:]}"
        )
    shown = subprocess.run(
        [str(fsb), "show", str(report_file)], capture_output=True, text=True, check=True
    ).stdout
    fields = parse(json.loads(report_file.read_text()), shown)
    flushes = [w for w in (line.split() for line in drive_log.splitlines()) if w[1:2] == ["flush"]]
    return Outcome(
        **fields,
        flushes_received=sum(w[3:4] == ["received"] for w in flushes),
        flushes_dropped=sum(w[3:4] == ["dropped"] for w in flushes),
        took_s=got.took_s,
        load=os.getloadavg()[0],
        cores=os.cpu_count() or 1,
    )


def lab_line(s: Scenario, o: Outcome) -> tuple[str, str, str, bool]:
    """(scenario, truth, what fsyncbench said, agree) for scenario ``s`` and its outcome
    ``o``. Where latency cannot tell the drive from its opposite (an honest NVMe drive from a
    lying one; a liar not measured faster than its floor) and audit agrees without a risk
    verdict, the line says "cannot tell, and audit says so"."""
    ok = agrees(s, o)
    said = o.said()
    untold = not s.latency_tells if s.honest else not latency_told(o)
    if ok and untold and o.verdict not in RISK_VERDICTS:
        said = f"cannot tell, and audit says so: {said}"
        if s.latency_tells:  # it should have: the machine's load hid the lie
            said = f"latency could not tell on this run (a loaded machine); {said}"
    truth = f"{s.truth} (the drive dropped {o.flushes_dropped} of {o.flushes_received})"
    return (f"audit: {s.name}", truth, said, ok)


def lab_lines(
    seed: int, scenarios: tuple[Scenario, ...] = SCENARIOS
) -> list[tuple[str, str, str, bool]]:
    """(scenario, truth, what fsyncbench said, agree) per scenario, for scripts/lab.py.
    ``seed`` is unused: an audit has no random moment (the signature is the lab's).
    Raises RuntimeError when a part is missing or a guest fails."""
    del seed
    missing = missing_parts()
    if missing:
        raise RuntimeError(missing)
    out = []
    with tempfile.TemporaryDirectory(prefix="fsb-lab-audit-") as tmp:
        work = Path(tmp)
        initrd = guest.build_initramfs(work / "initrd.gz")
        for i, s in enumerate(scenarios):
            out.append(lab_line(s, run_audit(s, initrd, work / f"s{i}")))
    return out
