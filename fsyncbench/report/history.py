"""Earlier runs of the same measurement, read from saved reports, whose spread widens a new
run's intervals (``run --history``; :func:`fsyncbench.measure.intervals.between_runs_interval`).

One run of ~30 s sees only its own stretch of time. On a shared or virtualized host the same
figure measured minutes or hours apart can differ more than anything inside one run shows
(this project's A/A test, README "How far to trust the intervals": 1.5-2x between runs on
its VM). Earlier reports of the same measurement are the only evidence of that spread a run
can have; this module finds them.

"The same measurement" is a report of kind "run" whose host record names the same host,
kernel, architecture, SQLite, directory, mount (filesystem, source, options) and disks
(name, model, serial, write cache) as this run, and, per configuration, the same workload
(kind, sync primitive, pragmas asked for, payload size). Anything else (another disk,
remount options, a kernel update, a redacted report) is not the same measurement and is
not used.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import between, disturbance, intervals, stats
from fsyncbench.model import EarlierRun, Host, Report, Result
from fsyncbench.report import store

#: Most report files read, newest (by modification time) first: a directory of a whole
#: fleet's reports does not make a run read them all (each takes ~0.1 s without its
#: samples). A project choice: enough matches
#: (:data:`fsyncbench.measure.intervals.MAX_EARLIER_RUNS`) among at most 64 files.
MAX_EXAMINED = 64


@dataclasses.dataclass(frozen=True)
class History:
    """The reports of the same host and storage :func:`read_history` found (file name and
    report without raw samples, oldest first), how many files it read (``examined``) and
    the names of those that were not reports (``unreadable``) and of the runs of the same
    measurement left out because their rounds stayed disturbed (``disturbed``)."""

    reports: tuple[tuple[str, Report], ...] = ()
    examined: int = 0
    unreadable: tuple[str, ...] = ()
    disturbed: tuple[str, ...] = ()

    def earlier(self, result: Result) -> tuple[EarlierRun, ...]:
        """The earlier runs of ``result`` (same workload, :func:`result_key`): the last
        :data:`fsyncbench.measure.intervals.MAX_EARLIER_RUNS`, oldest first; empty below
        :data:`fsyncbench.measure.intervals.MIN_EARLIER_RUNS`."""
        key = result_key(result)
        runs = [
            earlier_run(rep, r, name)
            for name, rep in self.reports
            for r in rep.results
            if result_key(r) == key
        ][-intervals.MAX_EARLIER_RUNS :]
        return tuple(runs) if len(runs) >= intervals.MIN_EARLIER_RUNS else ()


def host_key(host: Host) -> tuple[Any, ...]:
    """The facts two runs must share to be runs of the same measurement (module text)."""
    t = host.target
    m = t.mount
    return (
        host.hostname,
        host.os_name,
        host.os_release,
        host.machine,
        host.sqlite_version,
        t.path,
        None if m is None else (m.fs_type, m.source, m.options, m.super_options),
        tuple((d.name, d.model, d.serial, d.write_cache) for d in t.disks),
        t.declared,
    )


def result_key(r: Result) -> tuple[Any, ...]:
    """The workload facts of one result that must match (module text)."""
    return (r.name, r.kind, r.primitive, r.requested, r.payload_bytes)


def steady_earlier(r: Result, runs: Sequence[EarlierRun]) -> tuple[EarlierRun, ...]:
    """``runs`` less those whose p50 or p99 lies apart from the other runs and this one
    (:func:`fsyncbench.measure.between.outlying`: a prediction from the others rejects it at
    1 in 1,000, e.g. a regressed run saved among calm ones, which would otherwise widen the
    next runs' intervals many times over); empty when fewer than
    :data:`fsyncbench.measure.intervals.MIN_EARLIER_RUNS` remain."""
    from fsyncbench.report.compare import run_figure

    gone: set[int] = set()
    for pct in (50, 99):
        figures = [
            between.RunFigure(e.p50_ns, e.p50_round_sd_log, e.rounds, e.p50_se_log)
            if pct == 50
            else between.RunFigure(e.p99_ns, e.p99_round_sd_log, e.rounds, e.p99_se_log)
            for e in runs
        ]
        gone |= between.outlying([*figures, run_figure(r, pct)])
    kept = tuple(e for i, e in enumerate(runs) if i not in gone)
    return kept if len(kept) >= intervals.MIN_EARLIER_RUNS else ()


def earlier_run(report: Report, result: Result, file_name: str) -> EarlierRun:
    """``result`` of ``report`` as an earlier run: its p50 and p99, its own (one run's)
    standard errors of their logs (:attr:`fsyncbench.model.Interval.own_se_log`; None for
    a schema 1 report or a percentile without an interval) and the spread of its rounds'
    p50 and p99 (:func:`fsyncbench.measure.between.round_sd_log`)."""
    s = result.summary

    def own(iv: Any) -> float | None:
        return None if iv is None else iv.own_se_log

    return EarlierRun(
        report=file_name,
        created_utc=report.created_utc,
        p50_ns=s.p50_ns,
        p99_ns=s.p99_ns,
        p50_se_log=own(s.p50_interval),
        p99_se_log=own(s.p99_interval),
        p50_round_sd_log=between.round_sd_log(s.round_p50_ns),
        p99_round_sd_log=between.round_sd_log(s.round_p99_ns),
        rounds=len(s.round_p50_ns),
    )


def read_history(directory: Path, host: Host, names: Sequence[str] = ()) -> History:
    """The reports of kind "run" of ``host``'s measurement (:func:`host_key`) among the
    report files (``*.json``) directly in ``directory``. Files are read newest (by
    modification time) first, without their raw samples (a file whose text does not hold
    the hostname is not even parsed), until every result of ``names`` (the results this
    run will measure; none: any) appears in
    :data:`fsyncbench.measure.intervals.MAX_EARLIER_RUNS` of the reports found, or
    :data:`MAX_EXAMINED` files were read. Copies of one run (the same creation time) count
    once; files that are not reports this fsyncbench reads are skipped and named, and so are
    runs whose rounds stayed disturbed (:mod:`fsyncbench.measure.disturbance`). A missing
    directory has none. Raises FsyncbenchError when ``directory`` exists but cannot be
    listed (not a directory, no permission)."""
    try:
        entries = [e for e in os.scandir(directory) if e.name.lower().endswith(".json")]
        files = sorted(
            ((e.stat().st_mtime_ns, e.name) for e in entries if e.is_file()), reverse=True
        )
    except FileNotFoundError:
        return History()
    except OSError as exc:
        raise FsyncbenchError(
            f"cannot read earlier runs from {directory}: {exc.strerror} (--history DIR reads "
            "them elsewhere, --no-history measures without)"
        ) from exc
    key = host_key(host)
    same_host = re.compile(r'"hostname"\s*:\s*' + re.escape(json.dumps(host.hostname)))
    once: dict[str, tuple[str, Report]] = {}  # created_utc -> (file name, report)
    seen = dict.fromkeys(names, 0)  # how many reports found hold each result
    unreadable, examined = [], 0
    disturbed: list[str] = []
    for _, name in files[:MAX_EXAMINED]:
        if len(once) >= intervals.MAX_EARLIER_RUNS and all(
            n >= intervals.MAX_EARLIER_RUNS for n in seen.values()
        ):
            break
        examined += 1
        try:
            rep = store.load_figures_if(directory / name, same_host)
        except FsyncbenchError:
            unreadable.append(name)
            continue
        if rep is None or rep.kind != "run" or host_key(rep.host) != key:
            continue
        if disturbance.stayed_disturbed(rep.activity):
            # other processes' flushes or CPU shaped its figures: their spread is not the
            # storage's from run to run (the run said so on its own screen)
            disturbed.append(name)
            continue
        if rep.created_utc not in once:  # copies of one run: once
            once[rep.created_utc] = (name, rep)
            for r in rep.results:
                if r.name in seen:
                    seen[r.name] += 1
    return History(
        tuple(once[created] for created in sorted(once)),
        examined,
        tuple(sorted(unreadable)),
        tuple(sorted(disturbed)),
    )


def with_earlier(results: Sequence[Result], history: History) -> tuple[Result, ...]:
    """``results`` with their earlier runs (:meth:`History.earlier`) attached and their
    summaries recomputed from the same samples, so every interval includes the spread
    between runs (:func:`fsyncbench.measure.stats.summarize`); results without earlier
    runs unchanged. ``ci_target_met`` keeps saying whether this run's own interval met the
    target."""
    out = []
    for r in results:
        runs = steady_earlier(r, history.earlier(r))
        if runs and r.samples_ns:
            r = dataclasses.replace(
                r,
                earlier=runs,
                summary=stats.summarize(r.samples_ns, r.slice_counts, r.slice_rounds, earlier=runs),
            )
        out.append(r)
    return tuple(out)
