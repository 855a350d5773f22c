"""What the machine did besides the measurement, in words and one table: the first line of a
run's screen ("quiet" or what disturbed it, how much of the p99 it may explain, the next
step), the full report's per-round table, and the reason a gate cannot tell.

Every figure comes from ``Report.activity`` (:class:`fsyncbench.model.RoundActivity`,
judged by :mod:`fsyncbench.measure.disturbance`); reports without it (before schema 4,
audits) get nothing here.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from fsyncbench.fmt import fmt_ns
from fsyncbench.measure import disturbance
from fsyncbench.model import ProcessActivity, Report, RoundActivity
from fsyncbench.report.document import Cell, Paragraph, Section, Table

__all__ = ["machine_paragraph", "machine_section", "disturbed_reason", "stayed_disturbed"]

_WHAT = {
    disturbance.DISK: "other processes' flushes on the same disk",
    disturbance.CPU: "other processes' CPU use",
    disturbance.STEAL: "the hypervisor's steal time",
}


def stayed_disturbed(report: Report) -> tuple[RoundActivity, ...]:
    """The rounds whose samples are in the results and were disturbed (after retakes)."""
    return disturbance.stayed_disturbed(report.activity)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _all_processes(rounds: Sequence[RoundActivity]) -> list[ProcessActivity]:
    return [p for a in rounds for p in a.processes]


def _p99_effect(report: Report, disturbed: set[int]) -> str:
    """How the disturbed rounds' own p99 compare with the quiet rounds', over the rows that
    sync (the median of the per-row ratios), or "" where there is nothing to compare."""
    kept = sorted(disturbance.kept(report.activity), key=lambda a: a.round)
    if not kept or len(kept) == len(disturbed):
        return ""
    ratios = []
    for r in report.results:
        rp = r.summary.round_p99_ns
        if r.primitive == "none" or len(rp) != len(kept):
            continue
        bad = [v for a, v in zip(kept, rp) if a.round in disturbed]
        good = [v for a, v in zip(kept, rp) if a.round not in disturbed]
        if bad and good and statistics.median(good) > 0:
            ratios.append(statistics.median(bad) / statistics.median(good))
    if not ratios:
        return ""
    ratio = statistics.median(ratios)
    return (
        f"the disturbed rounds' own p99 were {ratio:.2f}x the quiet rounds' (median over "
        f"{_plural(len(ratios), 'row')} that sync), so "
        + (
            "the disturbance may explain part of each p99"
            if ratio >= 1.1
            else "it did not visibly move the p99"
        )
    )


def machine_paragraph(report: Report) -> Paragraph | None:
    """The screen's first paragraph about the machine: quiet, disturbed and retaken, or
    disturbed still (with what, how much of the p99 it may explain and the next step).
    None for a report without activity."""
    if not report.activity:
        return None
    kept = disturbance.kept(report.activity)
    rounds = len(kept)
    retakes = [a for a in report.activity if a.attempt > 1]
    still = [a for a in kept if a.disturbed]
    first_disturbed = [a for a in report.activity if a.attempt == 1 and a.disturbed]
    if not first_disturbed:
        missing = sorted({m.split(":")[0] for a in kept for m in a.not_measured})
        others = [a.other_flushes for a in kept if a.other_flushes is not None]
        cpu = [a.cpu_other_pct for a in kept if a.cpu_other_pct is not None]
        seen = []
        if others:
            seen.append(f"others' flushes {sum(others):,.0f}")
        if cpu:
            busy = max(cpu)
            who = disturbance.process_names(_all_processes(kept), "cpu")
            named = who and busy >= disturbance.CPU_OTHER_NAMED_PCT
            seen.append(f"others' CPU <= {busy:.0f} %" + (f": {who}" if named else ""))
        text = f"quiet in all {_plural(rounds, 'round')}" + (
            f" ({'; '.join(seen)})" if seen else ""
        )
        if missing:
            text += f"; not measured: {', '.join(missing)}"
        return Paragraph(text + ".", lead="Machine:", tone="good")
    what = disturbance.phrase(first_disturbed)
    effect = _p99_effect(report, {a.round for a in still})
    if not still:
        return Paragraph(
            f"{_plural(len(first_disturbed), 'round')} of {rounds} disturbed ({what}); "
            f"{'it was' if len(first_disturbed) == 1 else 'they were'} taken again on a quiet "
            f"machine ({_plural(len(retakes), 'retake')}), so every figure rests on quiet "
            "rounds.",
            lead="Machine:",
            tone="good",
        )
    budget = report.retake_budget_s
    why_left = (
        "--no-retake-disturbed"
        if budget == 0
        else "the +50 % retake budget left no time for a retake"
        if not retakes
        else f"{_plural(len(retakes), 'retake')} within the +50 % budget did not find a quiet "
        "moment"
    )
    who = disturbance.process_names(
        _all_processes(still),
        "write" if any(disturbance.DISK in a.disturbed for a in still) else "cpu",
    )
    step = (
        f"stop or pause {who.split(',')[0]} during the run, or run again at a quieter time"
        if who
        else "run again at a quieter time (nothing else writing to this disk or busy on the CPUs)"
    )
    return Paragraph(
        # what disturbed the rounds that stayed so, and whom the next step names: the same
        # rounds (the first attempts' culprits may have left by the retakes)
        f"{_plural(len(still), 'round')} of {rounds} stayed disturbed "
        f"({disturbance.phrase(still)}; {why_left})"
        + (f": {effect}" if effect else "")
        + f'. Next step: {step}. Gates (--max-p99, compare) call this run "cannot tell" '
        "unless --accept-disturbed.",
        lead="Disturbed:",
        tone="bad",
    )


def disturbed_reason(report: Report) -> str:
    """One line for a gate that cannot tell because the run stayed disturbed ("" when it
    did not)."""
    return disturbance.cannot_tell_reason(report.activity)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} %"


def machine_section(report: Report) -> Section:
    """The full report's section: one row per round and retake."""
    if not report.activity:
        return Section("machine", "The machine during the run", ())
    rows = []
    for a in report.activity:
        share = disturbance.other_share_pct(a)
        rows.append(
            (
                Cell(f"{a.round}" + ("" if a.attempt == 1 else f" (retake {a.attempt - 1})")),
                Cell("yes" if a.kept else "no"),
                Cell(", ".join(a.disturbed) or "quiet", "bad" if a.disturbed else "good"),
                Cell(fmt_ns(a.elapsed_ns)),
                Cell(
                    "-"
                    if a.other_flushes is None
                    else f"{a.other_flushes:,.0f} of {a.device_flushes or 0:,}"
                    + ("" if share is None else f" ({share:.1f} %)")
                ),
                Cell(_pct(a.cpu_other_pct)),
                Cell(_pct(a.cpu_pressure_pct)),
                Cell(_pct(a.cpu_steal_pct)),
                Cell(disturbance.process_names(a.processes, "cpu") or "-"),
            )
        )
    missing = sorted({m for a in report.activity for m in a.not_measured})
    text = (
        "What else the machine did while each round measured, read before and after it: "
        "other processes' flushes on the disk holding the bytes (estimated from the windows "
        "in which fsyncbench issued no sync), their CPU use, the share of time a runnable "
        "task waited for a CPU (pressure stall information) and the hypervisor's steal. A "
        f"round is disturbed when others' flushes reach {disturbance.TAIL_SHARE_PCT:g} % of "
        f"the disk's (and at least {disturbance.MIN_OTHER_FLUSHES}), or CPU wait or steal "
        f"{disturbance.CPU_WAIT_PCT:g} % of the time: enough to explain the slowest 1 % of "
        'the operations, the p99 (docs/method.md, "Disturbed rounds"). Disturbed rounds are '
        "taken again within +50 % of the rounds' time; 'kept' says whose samples are in the "
        "figures."
    )
    blocks: list[Paragraph | Table] = [
        Paragraph(text),
        Table(
            (
                "round",
                "kept",
                "disturbed",
                "time",
                "others' flushes",
                "others' CPU",
                "CPU wait",
                "steal",
                "busiest others",
            ),
            tuple(rows),
            frozenset({3, 4, 5, 6, 7}),
        ),
    ]
    if missing:
        blocks.append(Paragraph("Not measured: " + "; ".join(missing) + "."))
    return Section("machine", "The machine during the run", tuple(blocks))
