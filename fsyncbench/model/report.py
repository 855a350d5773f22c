"""The saved report's top level: :class:`Report` (every stage's records), its
:data:`SCHEMA_VERSION`, the kinds that hold no latency results, and the options a recorded
command line was given (:func:`recorded_options`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fsyncbench.model.crash import CrashExperiment, PowerLossExperiment
from fsyncbench.model.evidence import Evidence
from fsyncbench.model.host import Host
from fsyncbench.model.powerloss import PowerlossResult
from fsyncbench.model.results import Result, RoundActivity
from fsyncbench.model.verdict import Verdict
from fsyncbench.model.writers import WritersPoint

#: Version of the report format written by this fsyncbench (these dataclasses); the store
#: (:mod:`fsyncbench.report.store`) refuses to load a newer one.
#: 5: raw-sample lists of 4,096 samples or more packed into one string each
#: (:func:`fsyncbench.report.store.pack_samples`: a default run's report 1.3 MB, was ~10 MB);
#: 4: what the machine did besides the measurement in each round (``Report.activity``:
#: CPU, pressure, other processes' I/O and flushes) and which rounds were retaken for it;
#: 3: earlier runs of the same measurement per result (``Result.earlier``) and intervals
#: that include the spread between runs (``Interval.runs``); 2: slice boundaries and rounds
#: per result, intervals valid for dependent samples (``Interval``; still read: one run's
#: intervals); 1: intervals that assume independent samples (still read: their
#: ``ci_method`` is "bootstrap" or "order-statistic" and renderers say what that means).
SCHEMA_VERSION = 5


def recorded_options(command_line: Sequence[str]) -> dict[str, str]:
    """The long options of a recorded ``command_line`` with their values, as argparse
    reads them (``--flag VALUE`` or ``--flag=VALUE``; a repeated one's last value, as
    argparse keeps; "" for a flag that ends the line). Report renderers read what a run was
    asked from here."""
    args = list(command_line)
    out: dict[str, str] = {}
    for i, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if flag.startswith("--"):
            out[flag] = value if eq else (args[i + 1] if i + 1 < len(args) else "")
    return out


@dataclass(frozen=True)
class Report:
    """A saved run: the JSON file's top level. ``schema_version`` guards the format.

    ``evidence`` holds what ``fsyncbench audit`` measured beyond the results (None in reports
    written by ``run`` or by fsyncbench versions before the audit; schema 1 either way).
    ``floors`` are the tool's own floor measurements (kind "floor": the empty timing loop,
    an in-memory commit, an in-memory write); results within 2x of theirs are labelled "at
    the tool's floor" (``stats.at_tool_floor``). Empty in older reports. ``elapsed_ns`` is
    the wall time of the whole command (None in reports written before it was recorded).
    ``powerloss`` holds ``run --powerloss``'s simulated power cuts (None without it; older
    fsyncbench versions ignore the field), and the whole result of ``fsyncbench powerloss``
    in a report of kind "powerloss". A report of kind "crash" (``fsyncbench crash``) keeps
    its kill matrix in ``crash``, or with ``--powerloss`` in ``crash_power_loss``. Reports
    of these two kinds hold no ``results`` and judge no storage path (their verdict is
    unverifiable, decided by nothing): ``compare`` and fleets leave them out.
    ``activity`` is what the machine did besides the measurement in each round and each
    retake of a disturbed round (schema 4; empty in older reports and in audits), and
    ``retake_budget_s`` the extra time retakes were allowed (0: ``--no-retake-disturbed``;
    None: not recorded). ``writers`` holds ``run --writers``'s concurrent writers
    (:class:`WritersPoint`; empty without it, and in reports before it existed).
    """

    schema_version: int
    tool_version: str
    kind: str
    created_utc: str
    command_line: tuple[str, ...]
    host: Host
    results: tuple[Result, ...]
    verdict: Verdict
    notes: tuple[str, ...] = ()
    evidence: Evidence | None = None
    floors: tuple[Result, ...] = ()
    elapsed_ns: int | None = None
    powerloss: PowerlossResult | None = None
    crash: CrashExperiment | None = None
    crash_power_loss: PowerLossExperiment | None = None
    activity: tuple[RoundActivity, ...] = ()
    retake_budget_s: float | None = None
    writers: tuple[WritersPoint, ...] = ()


#: Report kinds without latency results: what ``fsyncbench crash`` and ``fsyncbench
#: powerloss`` save (``compare`` and fleets leave them out).
EXPERIMENT_KINDS = ("crash", "powerloss")
