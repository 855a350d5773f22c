"""Two configurations head to head (``run --vs A,B``, ``show --vs``; default: the
recommended configuration against its nearest rival): one sentence saying how many times
faster one ran at p50 and at p99 with 95 % intervals over the paired rounds
(:func:`fsyncbench.measure.headtohead.paired_ratio`), what each loses in a power cut, and
one small table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from fsyncbench.errors import FsyncbenchError
from fsyncbench.fmt import fmt_ns
from fsyncbench.measure.headtohead import RatioInterval, paired_ratio, rival
from fsyncbench.model import PowerlossConfig, Report, Result, recorded_options
from fsyncbench.report.answer import bottom_line
from fsyncbench.report.document import Cell, Paragraph, Section, Table
from fsyncbench.report.loss import loss_phrase
from fsyncbench.report.vocabulary import (
    DURABLE,
    LOSES_FLUSHES,
    NOT_DURABLE,
    NOT_STATED,
    PROMISE_HEADER,
    promise_of,
    promise_tone,
)

KEY = "head-to-head"
TITLE = "Head to head"


def _commits(report: Report) -> dict[str, Result]:
    return {r.name: r for r in report.results if r.kind == "commit" and r.summary.count}


def vs_of(command_line: Sequence[str]) -> tuple[str, ...]:
    """The ``--vs`` a run was given, from its recorded command line (() without one)."""
    text = recorded_options(command_line).get("--vs", "")
    return tuple(n.strip().lower() for n in text.split(",") if n.strip())


def pair(report: Report, names: Sequence[str] = ()) -> tuple[Result, Result] | None:
    """The two commit configurations to set against each other: ``names`` (two labels
    this report measured), else the recommended one (the fastest whose pragmas promise a
    durable commit) against its nearest rival (the durable one closest to it in p50, else
    any other). None when the report has fewer than two. Raises FsyncbenchError when
    ``names`` are not two measured configurations."""
    commits = _commits(report)
    names = tuple(names) or vs_of(report.command_line)
    if names:
        if len(names) != 2 or names[0] == names[1]:
            raise FsyncbenchError(
                f"--vs takes two different configurations, e.g. wal/full,truncate/full; got "
                f"{','.join(names)}"
            )
        missing = [n for n in names if n not in commits]
        if missing:
            raise FsyncbenchError(
                f"--vs: {' and '.join(missing)} {'was' if len(missing) == 1 else 'were'} not "
                "measured here; configurations: " + ", ".join(commits)
            )
        return commits[names[0]], commits[names[1]]
    best = bottom_line(report).durable
    if best is None or best.name not in commits:
        return None
    chosen = commits[best.name]
    durable_of = {v.subject: v.config_durable for v in report.verdict.results}
    durable = [r for r in commits.values() if durable_of.get(r.name) is True]
    other = rival(chosen, durable) or rival(chosen, list(commits.values()))
    return None if other is None else (chosen, other)


def ratio_phrase(r: RatioInterval) -> str:
    """``5.26x [4.91, 5.64] faster at p50`` from A's view: A faster when the ratio A/B is
    below 1; "not measurably different" when the interval holds 1 (its figure still from
    A's view: ``4.50x faster, but [0.92, 20.00] holds 1``); the interval's absence named."""
    at = f"p{r.percentile:g}"
    b = r.bounds
    if r.ratio <= 0 or r.ratio == float("inf"):
        return f"at {at}: no ratio (a figure is 0)"
    faster = r.ratio < 1
    factor = 1 / r.ratio if faster else r.ratio
    word = "faster" if faster else "slower"
    if b is None:
        said = f"{factor:.2f}x {word}" if f"{factor:.2f}" != "1.00" else "1.00x, the same"
        return f"{said} at {at}" + (f" (no interval: {r.reason})" if r.reason else "")
    lo, hi = (1 / b[1], 1 / b[0]) if faster else b
    if not r.separated:
        # the same direction as every other figure of the sentence (it printed A/B here)
        return (
            f"not measurably different at {at} ({factor:.2f}x {word}, but [{lo:.2f}, "
            f"{hi:.2f}] holds 1)"
        )
    return f"{factor:.2f}x [{lo:.2f}, {hi:.2f}] {word} at {at}"


def _loss(report: Report, name: str) -> tuple[str, str]:
    """(the documented promise, the simulated loss or "")."""
    documented = promise_of(report, name)
    simulated = ""
    if report.powerloss is not None:
        config: PowerlossConfig | None = next(
            (c for c in report.powerloss.configs if c.pragmas.label == name), None
        )
        if config is not None:
            simulated = "; ".join(loss_phrase(m, config.commits) for m in config.models)
    return documented, simulated


def _keeps(documented: str, both: bool = False, lost_here: str = "") -> str:
    """What a configuration keeps in a power cut by what its pragmas promise; ``lost_here``
    (a path verdict: syncs do not reach stable media) turns a promise into what it would
    keep on storage that honoured it."""
    if lost_here and documented == DURABLE:
        return (
            f"would keep every acknowledged commit as {'their' if both else 'its'} pragmas "
            f"promise, but syncs here do not reach stable media ({lost_here})"
        )
    if both:
        return {
            DURABLE: "keep every acknowledged commit (as their pragmas promise)",
            NOT_DURABLE: "may lose acknowledged commits (their pragmas do not promise them)",
            NOT_STATED: "may lose acknowledged commits (SQLite's documentation does not "
            "promise them)",
        }.get(documented, "were not judged for durability")
    return {
        DURABLE: "keeps every acknowledged commit (its pragmas promise it)",
        NOT_DURABLE: "may lose acknowledged commits (its pragmas do not promise them)",
        NOT_STATED: "may lose acknowledged commits (SQLite's documentation does not promise them)",
    }.get(documented, "was not judged for durability")


def _lost_here(report: Report, name: str) -> str:
    """The path verdict under ``name`` when syncs there do not reach stable media, else ""."""
    v = next((v for v in report.verdict.results if v.subject == name), None)
    return v.path_verdict if v is not None and v.path_verdict in LOSES_FLUSHES else ""


def brief_sentence(report: Report, names: Sequence[str] = ()) -> str:
    """The head-to-head in one sentence for the terminal's "Choose" paragraph: against
    whom, the p50 and p99 ratios with their intervals, and the power-cut difference when
    the two differ ("" with fewer than two configurations). Raises FsyncbenchError as
    :func:`pair`."""
    chosen = pair(report, names)
    if chosen is None:
        return ""
    a, b = chosen
    p50, p99 = paired_ratio(a, b, 50.0), paired_ratio(a, b, 99.0)
    asked = tuple(names) or vs_of(report.command_line)
    whom = b.name if asked else f"{b.name}, its nearest rival"
    rounds = f" (95 % intervals, {p50.rounds} paired rounds)" if p50.bounds else ""
    doc_a, _sim_a = _loss(report, a.name)
    doc_b, _sim_b = _loss(report, b.name)
    loss = (
        ""
        if doc_a == doc_b
        else f"; in a power cut {a.name} {_keeps(doc_a, lost_here=_lost_here(report, a.name))}"
        f", {b.name} {_keeps(doc_b, lost_here=_lost_here(report, b.name))}"
    )
    lead = f"Head to head, {a.name} against {whom}" if asked else f"Against {whom}"
    if p50.bounds is None and p99.bounds is None and p50.reason == p99.reason:
        # one reason for both: said once ("1.50x slower at p50 and 1.20x at p99 (no ...)")
        p50 = dataclasses.replace(p50, reason="")
        p99 = dataclasses.replace(p99, reason="")
        rounds = f" (no intervals: {paired_ratio(a, b, 50.0).reason})"
    first, second = ratio_phrase(p50), ratio_phrase(p99)
    word = next((w for w in (" faster at ", " slower at ") if w in first and w in second), "")
    if word:  # "2.76x [...] faster at p50 and 1.70x [...] at p99"
        second = second.replace(word, " at ")
    return f"{lead}: {first} and {second}{rounds}{loss}."


def in_answer(answer: Section, report: Report, names: Sequence[str] = ()) -> Section:
    """``answer`` (the bottom line's section) with :func:`brief_sentence` appended to its
    "Choose" paragraph: the head to head where the choice is made, in every format."""
    head = brief_sentence(report, names)
    if not head:
        return answer
    return dataclasses.replace(
        answer,
        blocks=tuple(
            dataclasses.replace(b, text=f"{b.text} {head}")
            if isinstance(b, Paragraph) and b.lead == "Choose:"
            else b
            for b in answer.blocks
        ),
    )


def head_to_head_sections(report: Report, names: Sequence[str] = ()) -> tuple[Section, ...]:
    """The head-to-head section of a run ``report`` (none with fewer than two commit
    configurations). Raises FsyncbenchError for ``names`` that are not two of them."""
    chosen = pair(report, names)
    if chosen is None:
        return ()
    a, b = chosen
    p50, p99 = paired_ratio(a, b, 50.0), paired_ratio(a, b, 99.0)
    doc_a, sim_a = _loss(report, a.name)
    doc_b, sim_b = _loss(report, b.name)
    rounds = f"95 % intervals, {p50.rounds} paired rounds" if p50.bounds else ""
    asked = tuple(names) or vs_of(report.command_line)
    why = "" if asked else " (the recommended one and its nearest rival; --vs A,B to choose)"
    text = (
        f"{a.name} against {b.name}{why}: {ratio_phrase(p50)}, {ratio_phrase(p99)}"
        + (f" ({rounds})" if rounds else "")
        + "; in a power cut "
        + (
            f"both {_keeps(doc_a, both=True, lost_here=_lost_here(report, a.name))}"
            if doc_a == doc_b and not (sim_a or sim_b)
            else f"{a.name} {_keeps(doc_a, lost_here=_lost_here(report, a.name))}"
            + (f" (simulated: {sim_a})" if sim_a else "")
            + f", {b.name} {_keeps(doc_b, lost_here=_lost_here(report, b.name))}"
            + (f" (simulated: {sim_b})" if sim_b else "")
        )
        + "."
    )
    simulated = report.powerloss is not None
    rows = tuple(
        (
            Cell(r.name),
            Cell(fmt_ns(r.summary.p50_ns)),
            Cell(fmt_ns(r.summary.p99_ns)),
            Cell(f"{r.summary.ops_per_s:,.0f}"),
            Cell(doc, promise_tone(doc)),
            *((Cell(sim or "-"),) if simulated else ()),
        )
        for r, doc, sim in ((a, doc_a, sim_a), (b, doc_b, sim_b))
    )
    table = Table(
        (
            "configuration",
            "p50",
            "p99",
            "ops/s",
            PROMISE_HEADER,
            *(("power cut (simulated)",) if simulated else ()),
        ),
        rows,
        frozenset({1, 2, 3}),
    )
    return (Section(KEY, TITLE, (Paragraph(text), table)),)
