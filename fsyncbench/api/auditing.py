"""The ``audit`` command of the API (:mod:`fsyncbench.api`): :func:`audit` measures only
what the verdict needs, gathers the evidence beyond latency
(:mod:`fsyncbench.measure.evidence`) and judges it, or judges a saved report again."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

from fsyncbench import options
from fsyncbench.api.common import (
    Measuring,
    Notes,
    PathLike,
    Progress,
    check_extras,
    command_line_of,
    declare,
    host_at,
    redacted,
    sweep_leftovers,
)
from fsyncbench.api.measuring import build_report
from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import rounds as _rounds
from fsyncbench.model import EXPERIMENT_KINDS, Report
from fsyncbench.options import Outputs
from fsyncbench.report import store


def audit(
    target: PathLike | None = None,
    *,
    from_report: PathLike | None = None,
    samples: int = 200,
    budget_seconds: float = 5.0,
    compare_syncs: int = 200,
    sweep_repeats: int = 3,
    sweep_max_mib: int = 64,
    trace_commits: int = 20,
    trace: bool = True,
    assume: str | Sequence[str] = (),
    redact: bool = False,
    outputs: Outputs | None = None,
    progress: Progress | None = None,
    notes: Notes | None = None,
    command_line: Sequence[str] | None = None,
) -> Report:
    """``fsyncbench audit``: measure in ``target`` (default ".") only what the verdict needs
    (``samples`` per flush primitive and commit configuration, at most ``budget_seconds``
    each), gather the evidence (``compare_syncs`` syncs per side of libc vs raw syscall,
    ``sweep_repeats`` syncs per dirty size up to ``sweep_max_mib`` MiB, ``trace_commits``
    commits traced with strace unless ``trace`` is False) and return the judged report
    (kind "audit"). With ``from_report`` (a saved run or audit report, not with ``target``)
    nothing is measured: its verdict is derived again from its recorded facts. Other
    arguments as for :func:`run`."""
    started = time.monotonic_ns()
    options.check_path(target, "target", optional=True)
    options.check_path(from_report, "from_report", optional=True)
    options.audit_types(
        samples, budget_seconds, compare_syncs, sweep_repeats, sweep_max_mib, trace_commits
    )
    check_extras(assume, outputs, progress, notes, command_line)
    if from_report is not None:
        if target is not None:
            raise FsyncbenchError("give a directory to audit or --from REPORT, not both")
        facts = options.assumed(assume)
        if outputs is not None:
            outputs.check()
        loaded = store.load_report(Path(from_report))
        if loaded.kind in (*EXPERIMENT_KINDS, "powercut"):
            # a crash, powerloss or powercut report holds no timings to judge the path from
            raise FsyncbenchError(
                f"{from_report} is a {loaded.kind} report: audit --from re-judges the "
                "timings of a run or audit report (show prints this one)"
            )
        if facts:
            loaded = dataclasses.replace(loaded, host=declare(loaded.host, facts))
        from fsyncbench.judge import engine

        return redacted(engine.rejudge(loaded), redact)
    from fsyncbench.measure import evidence

    path = options.target_dir(target if target is not None else ".")
    plan, ev_plan = options.audit_plans(
        path,
        samples=samples,
        budget_seconds=budget_seconds,
        compare_syncs=compare_syncs,
        sweep_repeats=sweep_repeats,
        sweep_max_mib=sweep_max_mib,
        trace_commits=trace_commits,
        trace=trace,
    )
    facts = options.assumed(assume)
    if outputs is not None:
        outputs.check()
    host = declare(host_at(path), facts)
    sweep_leftovers(path, notes)
    with Measuring(progress) as where:
        results = _rounds.run_plan(plan, host, where)
        where.label = "audit evidence"

        def step(name: str, _index: int, _total: int) -> None:
            where.label = f"audit evidence ({name})"

        ev = evidence.collect(path, host, ev_plan, progress=step)
    report = build_report(
        "audit",
        host,
        results,
        command_line_of(command_line),
        evidence=ev,
        elapsed_ns=time.monotonic_ns() - started,
    )
    return redacted(report, redact)
