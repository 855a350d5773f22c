"""What the machine is doing besides fsyncbench: a snapshot read before and after a round.

One interface for every platform, through psutil where it has the figure and the kernel's
own files where psutil does not:

- CPU time per state (user, system, idle, iowait, steal, ...): ``psutil.cpu_times()``, which
  reads ``/proc/stat`` on Linux (proc(5): the steal field is "time spent in other operating
  systems when running in a virtualized environment"), ``host_statistics(HOST_CPU_LOAD_INFO)``
  on macOS (what ``vm_stat``/``top`` read) and ``GetSystemTimes`` on Windows.
- The 1-minute load average: ``psutil.getloadavg()`` (``/proc/loadavg``, ``getloadavg(3)``;
  on Windows psutil emulates it from the processor queue length, sampled every 5 s by a
  thread of its own, https://psutil.readthedocs.io/en/latest/#psutil.getloadavg).
- Pressure stall information (Linux >= 4.20 with PSI enabled):
  ``/proc/pressure/{cpu,io}``, whose ``total=`` fields are the microseconds during which at
  least one task ("some") or all tasks ("full") waited for the resource
  (https://docs.kernel.org/accounting/psi.html).
- Each process's CPU time and the bytes it caused to be written to storage, kernel threads
  left out (they work for every process, fsyncbench's own I/O included)
  (``psutil.Process.cpu_times()``, ``io_counters().write_bytes``: ``/proc/<pid>/io``
  ``write_bytes``, proc(5); Windows counts all write bytes; macOS gives no per-process I/O).

Nothing here raises: a figure that cannot be read is None, with the reason in
``not_measured``.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

import psutil

from ._common import read_text, under_root

#: CPU states that are not work: idle, and iowait (idle with I/O outstanding, proc(5)).
IDLE_STATES = ("idle", "iowait")
#: Time the hypervisor ran something else on this VM's CPUs (proc(5), /proc/stat "steal").
STEAL_STATE = "steal"
#: States counted neither as busy nor idle: "guest" and "guest_nice" are already inside
#: "user"/"nice" in /proc/stat (proc(5)).
DOUBLE_COUNTED = ("guest", "guest_nice")


@dataclass(frozen=True)
class ProcessSample:
    """One process at one moment: ``name``, CPU seconds so far (user + system),
    bytes written to storage so far (None: not readable)."""

    name: str
    cpu_s: float
    write_bytes: int | None


@dataclass(frozen=True)
class ActivitySnapshot:
    """The machine at one moment (monotonic ``t_ns``): CPU seconds per state
    (``cpu_s``, summed over all CPUs; None: unreadable), ``cpu_count``, ``load_avg_1m``,
    pressure stall totals in µs (``psi_us``: keys "cpu_some", "io_some", "io_full"; empty
    where the kernel has none), every process readable (``processes``, by pid) and
    ``not_measured``: what could not be read and why; ``kernel_cpu_s`` the CPU seconds of
    Linux kernel threads so far (they work for every process: left out of others' use)."""

    t_ns: int
    cpu_s: dict[str, float] | None
    cpu_count: int | None
    load_avg_1m: float | None
    psi_us: dict[str, int] = field(default_factory=dict)
    processes: dict[int, ProcessSample] = field(default_factory=dict)
    not_measured: tuple[str, ...] = ()
    kernel_cpu_s: float = 0.0


def parse_psi(text: str | None, resource: str) -> dict[str, int]:
    """``{"<resource>_some": µs, "<resource>_full": µs}`` from the text of
    ``/proc/pressure/<resource>`` (lines ``some avg10=0.00 avg60=0.00 avg300=0.00
    total=123``; https://docs.kernel.org/accounting/psi.html). Lines without a numeric
    ``total=`` are skipped."""
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        words = line.split()
        if not words or words[0] not in ("some", "full"):
            continue
        for word in words[1:]:
            if word.startswith("total="):
                try:
                    out[f"{resource}_{words[0]}"] = int(word[6:])
                except ValueError:
                    pass
    return out


def read_psi(root: str = "/") -> tuple[dict[str, int], str | None]:
    """(pressure totals in µs, None) from ``<root>/proc/pressure/{cpu,io}``, or ({}, the
    reason) where the files are missing (not Linux, a kernel before 4.20 or booted with
    ``psi=0``)."""
    if root == "/" and not sys.platform.startswith("linux"):
        return {}, "pressure stall information is Linux's (/proc/pressure)"
    out: dict[str, int] = {}
    for resource in ("cpu", "io"):
        out.update(parse_psi(read_text(under_root(root, f"/proc/pressure/{resource}")), resource))
    if not out:
        return {}, "no /proc/pressure (Linux < 4.20, or PSI disabled: psi=0 / CONFIG_PSI)"
    return out, None


def parse_proc_stat_cpu(text: str | None, ticks_per_s: float = 100.0) -> dict[str, float] | None:
    """CPU seconds per state from the ``cpu`` line of ``/proc/stat`` (proc(5): user nice
    system idle iowait irq softirq steal guest guest_nice, in USER_HZ ticks); None when the
    line is missing or not numeric."""
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest")
    for line in (text or "").splitlines():
        words = line.split()
        if words and words[0] == "cpu":
            try:
                values = [int(w) for w in words[1:]]
            except ValueError:
                return None
            return {n: v / ticks_per_s for n, v in zip((*names, "guest_nice"), values)}
    return None


def _cpu_times(root: str) -> dict[str, float] | None:
    if root != "/":
        return parse_proc_stat_cpu(read_text(under_root(root, "/proc/stat")))
    try:
        return {k: float(v) for k, v in psutil.cpu_times()._asdict().items()}
    except (OSError, RuntimeError):
        return None


def _load_avg(root: str) -> float | None:
    if root != "/":
        text = read_text(under_root(root, "/proc/loadavg"))
        try:
            return float((text or "").split()[0])
        except (IndexError, ValueError):
            return None
    try:
        return float(psutil.getloadavg()[0])
    except (OSError, AttributeError, RuntimeError):
        return None


def _processes() -> tuple[dict[int, ProcessSample], float, str | None]:
    """Every process psutil can read but kernel threads, the kernel threads' CPU seconds,
    and the reason when write bytes could not be read."""
    out: dict[int, ProcessSample] = {}
    kernel = 0.0
    denied = 0
    no_io = not hasattr(psutil.Process, "io_counters")
    for proc in psutil.process_iter(["name", "cpu_times", "ppid"]):
        try:
            info = proc.info
            times = info.get("cpu_times")
            if times is None:
                continue
            if _kernel_thread(proc.pid, info.get("ppid")):
                kernel += float(times.user + times.system)
                continue
            written = None
            if not no_io:
                try:
                    # absent on macOS (no_io): looked up by name for every platform's types
                    written = int(getattr(proc, "io_counters")().write_bytes)  # noqa: B009
                except (psutil.AccessDenied, OSError):
                    denied += 1
            out[proc.pid] = ProcessSample(
                str(info.get("name") or "?"), float(times.user + times.system), written
            )
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    if no_io:
        return out, kernel, "this platform gives psutil no per-process I/O counters (macOS)"
    if denied > max(3, len(out) // 10):
        return out, kernel, f"{denied} processes' I/O counters are not readable by this user"
    return out, kernel, None


def _kernel_thread(pid: int, ppid: int | None) -> bool:
    """Linux kernel threads (kthreadd, pid 2, and its children) work for every process (the
    block layer's and filesystem's workers among them): left out of "other processes"."""
    return sys.platform.startswith("linux") and (pid == 2 or ppid == 2)


def run_queue_wait_ns(root: str = "/") -> int | None:
    """Nanoseconds this thread has waited on a run queue for a CPU since it started: the
    second field of ``/proc/self/schedstat`` (https://docs.kernel.org/scheduler/sched-stats.html,
    "time spent waiting on a runqueue"; Linux with CONFIG_SCHED_INFO). None elsewhere."""
    if root == "/" and not sys.platform.startswith("linux"):
        return None
    words = (read_text(under_root(root, "/proc/thread-self/schedstat")) or "").split()
    try:
        return int(words[1])
    except (IndexError, ValueError):
        return None


def snapshot(root: str = "/", processes: bool = True) -> ActivitySnapshot:
    """The machine now (:class:`ActivitySnapshot`). ``root`` other than ``/`` reads a
    recorded ``/proc`` tree (``proc/stat``, ``proc/loadavg``, ``proc/pressure``) and no
    processes. Cost: one read of each file plus one pass over the process table (about
    10 ms for 100 processes). Never raises."""
    reasons: list[str] = []
    cpu = _cpu_times(root)
    if cpu is None:
        reasons.append("cpu: CPU times not readable")
    psi, why = read_psi(root)
    if why:
        reasons.append(f"pressure: {why}")
    procs: dict[int, ProcessSample] = {}
    kernel = 0.0
    if processes and root == "/":
        procs, kernel, why = _processes()
        if why:
            reasons.append(f"processes' writes: {why}")
    count = os.cpu_count() if root == "/" else None
    if root != "/":
        count = (
            sum(
                1
                for line in (read_text(under_root(root, "/proc/stat")) or "").splitlines()
                if line.startswith("cpu") and line[3:4].isdigit()
            )
            or None
        )
    return ActivitySnapshot(
        time.monotonic_ns(), cpu, count, _load_avg(root), psi, procs, tuple(reasons), kernel
    )
