"""``powercut cycle``'s results: one :class:`CycleResult` per cycle (its outcome read from
verify's exit code and, when verify printed its report JSON, from the report), the
:class:`CycleSummary` with its exit code and verdict, and their text and JSON."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from fsyncbench.powercut import ranges as R


@dataclass(frozen=True)
class CycleResult:
    """One cycle. ``outcome``: verify's ``pass``, ``fail`` or ``inconclusive``, or
    ``error`` when the cycle could not finish (``error`` says why). ``acknowledged``: the
    commits the listener recorded for the run (``at_cut``: when the cut command started);
    ``lost`` the acknowledged commits verify found missing (None: verify's output was not
    its report JSON, only its exit code counted). Times in seconds: ``cut_after_s`` the
    planned moment after the first acknowledged commit, ``back_after_s`` from the end of the
    restore (or cut) to verify's verdict."""

    cycle: int
    cut_after_s: float
    outcome: str
    run_id: str | None = None
    acknowledged: int = 0
    acknowledged_at_cut: int = 0
    lost: int | None = None
    lost_ranges: tuple[tuple[int, int], ...] = ()
    verify_exit: int | None = None
    decided_by: str | None = None
    verify_attempts: int = 0
    back_after_s: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class CycleSummary:
    """The experiment: the plan's seed, cycle count and moments range, and each cycle run
    (fewer than planned when an error or Ctrl-C stopped it: ``error``)."""

    planned: int
    seed: int
    cut_after_s: tuple[float, float]
    listener: str
    results: tuple[CycleResult, ...]
    error: str | None = None
    started_utc: str = ""
    elapsed_s: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def lost_cycles(self) -> int:
        return sum(r.outcome == "fail" for r in self.results)

    @property
    def exit_code(self) -> int:
        """1 a cycle failed; 2 an error stopped it; 4 a cycle could not tell; else 0."""
        if self.lost_cycles:
            return 1
        if self.error:
            return 2
        if any(r.outcome == "inconclusive" for r in self.results):
            return 4
        return 0

    @property
    def verdict(self) -> str:
        n = len(self.results)
        done = sum(r.outcome != "error" for r in self.results)
        if self.lost_cycles:
            lost = sum(r.lost or 0 for r in self.results)
            return (
                f"FAIL: {self.lost_cycles} of {done} cycles lost acknowledged commits"
                + (f" ({lost:,} in all)" if lost else "")
                + ": the storage acknowledged writes it did not keep"
            )
        if self.error:
            return f"ERROR after {done} of {self.planned} cycles: {self.error}"
        blind = [r for r in self.results if r.outcome == "inconclusive"]
        if blind:
            why = {
                "powercut-no-reboot": "verify saw no reboot: the cut did not cut the writer's power",
                "powercut-clean-stop": "the writer had stopped before the cut",
            }
            reasons = sorted({why.get(r.decided_by or "", r.decided_by or "?") for r in blind})
            return (
                f"CANNOT TELL: {len(blind)} of {n} cycles proved nothing ({'; '.join(reasons)})"
                + (", the others lost nothing" if len(blind) < n else "")
            )
        return (
            f"PASS: {n} cycles, no acknowledged commit lost (a pass is evidence, not proof: "
            "a lying cache may drain in time; repeat)"
        )


def format_summary(s: CycleSummary) -> str:
    """The summary as ``powercut cycle`` prints it: one line per cycle, then totals and the
    verdict."""
    lo, hi = s.cut_after_s
    lines = [
        f"fsyncbench powercut cycle: {len(s.results)} of {s.planned} cycles, seed {s.seed}, "
        f"cut {lo:g}..{hi:g} s after the first acknowledged commit; listener {s.listener}",
    ]
    for r in s.results:
        head = f"  cycle {r.cycle}: cut at {r.cut_after_s:.3f} s"
        if r.outcome == "error":
            lines.append(f"{head}: ERROR: {r.error}")
            continue
        lost = (
            "lost ?"
            if r.lost is None
            else f"lost {r.lost:,}"
            + (f" ({R.format_ranges(list(r.lost_ranges), 5)})" if r.lost else "")
        )
        back = "" if r.back_after_s is None else f", back after {r.back_after_s:.1f} s"
        lines.append(
            f"{head}: run {r.run_id}: {r.acknowledged:,} acknowledged "
            f"({r.acknowledged_at_cut:,} at the cut), {lost}; verify exit {r.verify_exit}"
            f" ({r.outcome}{', ' + r.decided_by if r.decided_by else ''}), "
            f"{r.verify_attempts} attempt{'s' if r.verify_attempts != 1 else ''}{back}"
        )
    acked = sum(r.acknowledged for r in s.results)
    lost_total = sum(r.lost or 0 for r in s.results)
    lines.append(
        f"Total: {len(s.results)} cycles, {acked:,} acknowledged, {lost_total:,} lost"
        + (
            f"; lost per cycle: {', '.join('?' if r.lost is None else str(r.lost) for r in s.results)}"
            if s.results
            else ""
        )
    )
    lines.extend(f"note: {n}" for n in s.notes)
    lines.append(f"Result: {s.verdict}")
    return "\n".join(lines) + "\n"


_NOTE = re.compile(r"^powercut (pass|fail|inconclusive): run ([0-9a-f]{32}) ")


def judge_verify(r: CycleResult, rc: int, stdout: str) -> CycleResult:
    """The cycle's outcome from verify's exit code and, when it printed its report JSON,
    the report: the run it judged (must be this cycle's), the lost commits, the deciding
    rule. A verify that saw no reboot or a clean stop proved nothing: inconclusive."""
    outcome = "fail" if rc == 1 else "pass"
    try:
        report = json.loads(stdout)
    except ValueError:
        report = None
    if not isinstance(report, dict) or report.get("kind") != "powercut":
        return replace(r, outcome=outcome)
    notes = report.get("notes") or [""]
    m = _NOTE.match(str(notes[0]))
    verdict = report.get("verdict") or {}
    decided = verdict.get("decided_by")
    if m is None:
        return replace(r, outcome=outcome, decided_by=decided)
    if m.group(2) != r.run_id:
        return replace(
            r,
            outcome="error",
            decided_by=decided,
            error=f"verify judged run {m.group(2)}, not this cycle's run {r.run_id}: give it "
            "--run-id {run_id}",
        )
    evidence: dict[str, Any] = {}
    for finding in verdict.get("findings") or []:
        ev = finding.get("evidence") if isinstance(finding, dict) else None
        if isinstance(ev, dict) and "lost" in ev and "acknowledged" in ev:
            evidence = ev
            break
    lost = evidence.get("lost")
    spans = tuple(
        (int(a), int(b))
        for a, b in (evidence.get("lost_ranges") or [])
        if isinstance(a, int) and isinstance(b, int)
    )
    outcome = m.group(1)
    if outcome == "pass" and decided in ("powercut-no-reboot", "powercut-clean-stop"):
        outcome = "inconclusive"
    return replace(
        r,
        outcome=outcome,
        decided_by=decided,
        lost=lost if isinstance(lost, int) else None,
        lost_ranges=spans,
    )


def summary_json(s: CycleSummary) -> str:
    """The summary as JSON (the dataclass's fields, with ``exit_code`` and ``verdict``)."""
    from fsyncbench.jsonable import to_jsonable

    data = to_jsonable(s)
    data.update(exit_code=s.exit_code, verdict=s.verdict, lost_cycles=s.lost_cycles)
    return json.dumps(data, indent=1) + "\n"
