"""CI gates over a report: pure functions, the CLI turns failures into exit code 1.

- ``--max-p99 10ms``: a configuration's p99 is above the limit. etcd's hardware guide asks
  for p99 WAL fdatasync below 10 ms (https://etcd.io/docs/v3.5/op-guide/hardware/); users
  pick their own number. A p99 whose 95 % interval straddles the limit is named in a note:
  the next run of the same machine may land on the other side. ``--max-p99-strict`` judges
  the interval's upper bound instead (pass only where p99 is shown to be below the limit),
  and a p99 without an interval is then "cannot tell". With ``run --writers`` each
  concurrent-writers point's p99 over its commits is gated the same way (named ``wal/full
  x4``), and a note names a point whose oldest commit in progress was older than the limit
  1 % of the time or more (a starved writer, whom the p99 over commits hides).
  A run whose rounds stayed disturbed after their retakes (other processes' flushes, CPU
  wait or steal that could explain its tail, :mod:`fsyncbench.measure.disturbance`) is
  "cannot tell" for ``--max-p99``, naming the disturbance, unless ``accept_disturbed``.
- ``--fail-on volatile_cache,no_flush``: a configuration's path verdict is one of these.
- ``--config wal/full,write+fdatasync``: which results the gates look at (default: every
  result except the no-sync write baseline, which never syncs).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fsyncbench.errors import FsyncbenchError, did_you_mean
from fsyncbench.model import PATH_VERDICTS, Interval, Report, Result

_UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|μs|ms|s)\s*$", re.IGNORECASE)


def parse_duration(text: str, option: str = "duration") -> int:
    """``"10ms"`` -> 10_000_000 ns. Units ns, us (or µs), ms, s; a unit is required.
    Raises FsyncbenchError naming ``option``."""
    m = _DURATION.match(text or "")
    if not m:
        raise FsyncbenchError(
            f"invalid {option} {text!r}: give a number with a unit, e.g. 10ms, 500us, 2s"
        )
    unit = m.group(2).lower()
    ns = int(round(float(m.group(1)) * _UNITS_NS[unit]))
    if ns <= 0:  # after rounding: "0.4ns" is no limit either
        raise FsyncbenchError(f"invalid {option} {text!r}: must be at least 1 ns")
    return ns


def parse_verdicts(text: str) -> tuple[str, ...]:
    """``"volatile_cache,no_flush"`` -> the path verdicts; dashes are accepted for
    underscores. Raises FsyncbenchError listing the allowed values."""
    values = tuple(
        v.strip().lower().replace("-", "_") for v in (text or "").split(",") if v.strip()
    )
    bad = [v for v in values if v not in PATH_VERDICTS]
    if bad or not values:
        raise FsyncbenchError(
            f"invalid --fail-on {', '.join(bad) or repr(text)}: allowed values are "
            f"{', '.join(PATH_VERDICTS)}" + did_you_mean(bad, PATH_VERDICTS)
        )
    return tuple(dict.fromkeys(values))


def parse_names(values: Sequence[str] | None) -> tuple[str, ...]:
    """``--config`` values (each may be a comma list) -> names, in order, without repeats."""
    names = [n.strip() for v in values or () for n in v.split(",") if n.strip()]
    return tuple(dict.fromkeys(names))


def check_names(names: Sequence[str], known: Sequence[str], where: str = "this report has") -> None:
    """Every name must be one of ``known`` (case-insensitive). Raises FsyncbenchError."""
    lower = {k.lower() for k in known}
    bad = [n for n in names if n.lower() not in lower]
    if bad:
        raise FsyncbenchError(
            f"unknown configuration {', '.join(bad)}: {where} {', '.join(known) or 'none'}"
            + did_you_mean(bad, known)
        )


def select(report: Report, names: Sequence[str] = ()) -> list[Result]:
    """The results the gates look at: those named (case-insensitive; FsyncbenchError for an
    unknown name), or every result except the no-sync write baseline."""
    if not names:
        return [r for r in report.results if r.kind != "write"]
    check_names(names, [r.name for r in report.results])
    wanted = {n.lower() for n in names}
    return [r for r in report.results if r.name.lower() in wanted]


@dataclass(frozen=True)
class GateFailure:
    """``subject`` (a configuration) failed ``gate`` (``max-p99`` or ``fail-on``)."""

    subject: str
    gate: str
    message: str


def check(
    report: Report,
    max_p99_ns: int | None = None,
    fail_on: Sequence[str] = (),
    names: Sequence[str] = (),
    max_p99_strict: bool = False,
    accept_disturbed: bool = False,
) -> list[GateFailure]:
    """Every gate failure of ``report``, in result order (module text)."""
    return review(report, max_p99_ns, fail_on, names, max_p99_strict, accept_disturbed)[0]


def _what_settles(iv: Interval | None) -> str:
    """What would give a p99 without an interval one, by the reason it has none
    (:func:`fsyncbench.fmt.short_reason`)."""
    from fsyncbench.fmt import short_reason

    why = short_reason(iv)
    if why.endswith("disagree"):
        return (
            f"its {why.split()[0]} disagree too much, so more samples alone may not settle "
            "it; a quieter machine (nothing else writing to the disk) would"
        )
    return "more samples would settle it (a longer --run-budget-seconds, or fewer configurations)"


def _upper_bound(r: Result) -> float | None:
    """The order-statistic upper bound of ``r``'s p99 (ns), raised to its slowest round's."""
    from fsyncbench.measure import intervals

    if not r.samples_ns:
        return None
    return intervals.quantile_upper_bound(r.samples_ns, 0.99, r.summary.round_p99_ns)


def review(
    report: Report,
    max_p99_ns: int | None = None,
    fail_on: Sequence[str] = (),
    names: Sequence[str] = (),
    max_p99_strict: bool = False,
    accept_disturbed: bool = False,
) -> tuple[list[GateFailure], list[str], list[str]]:
    """(failures, notes, cannot-tell lines) of the gates over ``report`` (module text):
    notes name each p99 whose interval straddles ``max_p99_ns`` (default mode); in strict
    mode a p99 without an interval is judged by its order-statistic upper bound
    (:func:`fsyncbench.measure.intervals.quantile_upper_bound`) and cannot be told below the
    limit only where that bound is above it. A run that stayed disturbed cannot be told for
    ``max_p99_ns`` (one line) unless ``accept_disturbed``."""
    from fsyncbench.fmt import fmt_ns
    from fsyncbench.measure import disturbance

    verdicts = {v.subject: v for v in report.verdict.results}
    failures: list[GateFailure] = []
    notes: list[str] = []
    untold: list[str] = []
    disturbed = "" if accept_disturbed else disturbance.cannot_tell_reason(report.activity)
    if max_p99_ns is not None and disturbed:
        untold.append(f"--max-p99 {fmt_ns(max_p99_ns)}: cannot tell: {disturbed}")
        max_p99_ns = None
    for r in select(report, names):
        s = r.summary
        if max_p99_ns is not None:
            _p99_check(
                r.name,
                s.p99_ns,
                s.p99_ci_ns,
                s.p99_interval,
                s.count,
                functools.partial(_upper_bound, r),
                max_p99_ns,
                max_p99_strict,
                (failures, notes, untold),
            )
        v = verdicts.get(r.name)
        if fail_on and v is not None and v.path_verdict in fail_on:
            failures.append(
                GateFailure(
                    r.name,
                    "fail-on",
                    f"{r.name}: path verdict {v.path_verdict} (decided by {v.decided_by}) is in "
                    f"--fail-on {','.join(fail_on)}",
                )
            )
    if max_p99_ns is not None:
        wanted = {n.lower() for n in names}  # matched as select() matches results
        for p in report.writers:
            if wanted and p.requested.label.lower() not in wanted:
                continue
            if p.activity is not None and p.activity.disturbed and not accept_disturbed:
                untold.append(
                    f"{p.name}: --max-p99 {fmt_ns(max_p99_ns)}: cannot tell: the machine was "
                    f"disturbed while it ran ({disturbance.phrase([p.activity])}); run again "
                    "on a quiet machine, or give --accept-disturbed"
                )
                continue
            w = p.summary
            iv = w.p99_interval
            _p99_check(
                p.name,
                iv.estimate_ns,
                iv.bounds,
                iv,
                w.commits,
                lambda: None,
                max_p99_ns,
                max_p99_strict,
                (failures, notes, untold),
            )
            if w.oldest_wait_p99_ns > max_p99_ns:
                notes.append(
                    f"{p.name}: over time a commit in progress had waited longer than "
                    f"--max-p99 {fmt_ns(max_p99_ns)} 1 % of the time or more (oldest commit, "
                    f"p99 over time {fmt_ns(w.oldest_wait_p99_ns)}; longest "
                    f"{fmt_ns(w.max_ns)})"
                    + (
                        f": writer{'s' if len(w.starved) > 1 else ''} "
                        f"{', '.join(map(str, w.starved))} starved"
                        if w.starved
                        else ""
                    )
                )
    return failures, notes, untold


def _p99_check(
    name: str,
    p99_ns: float,
    ci: tuple[float, float] | None,
    interval: Interval | None,
    count: int,
    upper_bound: Callable[[], float | None],
    max_p99_ns: int,
    strict: bool,
    out: tuple[list[GateFailure], list[str], list[str]],
) -> None:
    """``--max-p99`` on one p99 (a result's, or a concurrent-writers point's over its
    commits): appends to ``out`` = (failures, notes, cannot-tell lines) as :func:`review`
    says; ``upper_bound`` gives the order-statistic bound strict mode uses where there is
    no interval (None: none)."""
    from fsyncbench.fmt import fmt_interval, fmt_ns

    failures, notes, untold = out
    shown = f"p99 {fmt_ns(p99_ns)} (95% CI {fmt_interval(ci, interval)}, n={count})"
    limit = fmt_ns(max_p99_ns)
    if strict and ci is None and p99_ns > max_p99_ns:
        # strict never passes what the default mode fails: the estimate is above
        failures.append(
            GateFailure(
                name,
                "max-p99",
                f"{name}: {shown} is above --max-p99 {limit} (no interval; --max-p99-strict)",
            )
        )
    elif strict and ci is None and (bound := upper_bound()) is not None and bound <= max_p99_ns:
        notes.append(
            f"{name}: {shown} has no interval, but its order-statistic upper bound "
            f"{fmt_ns(bound)} (95 %, one-sided, at least the slowest round's own p99) "
            f"is below --max-p99 {limit}: passes"
        )
    elif strict and ci is None:
        untold.append(
            f"{name}: {shown} has no interval, so it cannot be shown below "
            f"--max-p99 {limit}: {_what_settles(interval)}"
        )
    elif strict and ci is not None and ci[1] > max_p99_ns:
        failures.append(
            GateFailure(
                name,
                "max-p99",
                f"{name}: {shown} is not shown to be below --max-p99 {limit} "
                "(the interval's upper bound is above it; --max-p99-strict)",
            )
        )
    elif not strict and p99_ns > max_p99_ns:
        failures.append(GateFailure(name, "max-p99", f"{name}: {shown} is above --max-p99 {limit}"))
    if not strict and ci is not None and ci[0] <= max_p99_ns < ci[1]:
        side = "fails" if p99_ns > max_p99_ns else "passes"
        notes.append(
            f"{name}: {shown} straddles --max-p99 {limit}: it {side} on the estimate, "
            "and another run of the same machine may land on the other side "
            "(--max-p99-strict passes only where p99 is shown to be below)"
        )
