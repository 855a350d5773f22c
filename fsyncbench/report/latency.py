"""The latency tables of a run or audit report: the compact one the terminal summary, the
HTML page and the Markdown report open with (configuration, durable, sync, p50, p99 with its
interval, ops/s), and the full one with every statistic of every result."""

from __future__ import annotations

from fsyncbench.fmt import fmt_interval, fmt_ns, fmt_precision, fmt_spread
from fsyncbench.measure import stats
from fsyncbench.model import Report, Result, ResultVerdict
from fsyncbench.report.document import Cell, Table
from fsyncbench.report.vocabulary import PROMISE_HEADER, promise, promise_tone

__all__ = ["P999_MIN_SAMPLES", "compact_table", "results_table"]

#: Fewest samples for which p99.9 is printed: with fewer it is within a sample or two of the
#: maximum (the 99.9th percentile needs 1,000 samples to have one above it).
P999_MIN_SAMPLES = 1000

_FLOOR_MARK = " *"


def p99_precision(r: Result) -> str:
    """``+-4.2%`` (or ``+25.1/-16.3%`` when lopsided): how far p99's 95 % interval reaches
    from p99, rounded up (:func:`fsyncbench.fmt.fmt_precision`); ``(not met)`` when
    the run's CI target was not reached by its own interval, ``(4 runs)`` when earlier runs
    widened the interval (the target applies to one run's samples; more of them cannot
    narrow the spread between runs)."""
    s = r.summary
    text = fmt_precision(s.p99_ns, s.p99_ci_ns) if s.p99_ci_ns else "none"
    runs = s.p99_interval.runs if s.p99_interval is not None else 1
    marks = ["not met"] if r.ci_target_met is False else []
    if runs > 1:
        marks.append(f"{runs} runs")
    return text + (f" ({', '.join(marks)})" if marks else "")


def result_label(r: Result) -> str:
    if r.kind != "commit" or r.requested is None:
        return r.name
    label = r.name
    if r.effective and r.effective != r.requested:
        label += f" (effective {r.effective.label})"
    return label


def _durable(v: ResultVerdict | None, r: Result, os_name: str) -> Cell:
    """What a result's pragmas promise after a power cut (:func:`promise`): durable, not
    durable, not stated, or - (not a commit)."""
    word = promise(None if v is None else v.config_durable, r, os_name)
    return Cell(word, promise_tone(word))


def compact_table(report: Report) -> Table:
    """One row per result: configuration (``*`` at the tool's floor), whether its pragmas
    promise a durable commit, sync primitive, p50, p99 with its 95 % interval (the header
    says "(5 runs)" where earlier runs of the same measurement entered the intervals, "(this
    run)" where they rest on this run alone), ops/s;
    a path-verdict column only where the results' verdicts differ."""
    verdicts = {v.subject: v for v in report.verdict.results}
    shown = {
        verdicts[r.name].path_verdict
        for r in report.results
        if r.name in verdicts and r.primitive != "none"
    }
    with_verdict = len(shown) > 1
    # how many runs the p99 intervals rest on, where earlier runs entered them (the reader
    # of a wide interval sees why; the full report says which runs)
    runs = sorted(
        {
            r.summary.p99_interval.runs
            for r in report.results
            if r.summary.p99_interval is not None and r.summary.p99_interval.runs > 1
        }
    )
    # a single run's interval says so: it holds within this run, not necessarily the next
    spread = (
        f" ({runs[0]}{'' if len(runs) == 1 else f'-{runs[-1]}'} runs)" if runs else " (this run)"
    )
    headers = (
        "configuration",
        PROMISE_HEADER,
        *(("path verdict",) if with_verdict else ()),
        "sync",
        "p50",
        "p99",
        "p99 95% interval" + spread,
        "ops/s",
    )
    rows = []
    floor = False
    for r in report.results:
        s = r.summary
        v = verdicts.get(r.name)
        at_floor = stats.at_tool_floor(r, report.floors)
        floor = floor or at_floor
        durable = _durable(v, r, report.host.os_name)
        verdict = Cell("-" if v is None or r.primitive == "none" else v.path_verdict)
        rows.append(
            (
                Cell(result_label(r) + (_FLOOR_MARK if at_floor else "")),
                durable,
                *((verdict,) if with_verdict else ()),
                Cell(r.primitive),
                Cell(fmt_ns(s.p50_ns)),
                Cell(fmt_ns(s.p99_ns)),
                Cell(fmt_interval(s.p99_ci_ns, s.p99_interval)),
                Cell(f"{s.ops_per_s:,.0f}"),
            )
        )
    numeric = frozenset(
        i
        for i, h in enumerate(headers)
        if h in ("p50", "p99", "ops/s") or h.startswith("p99 95% interval")
    )
    # one line of at most 100 columns, so the terminal summary keeps to 40 lines
    caption = (
        "Latency (durable: SQLite's promise for a power cut; sync: the primitive timed"
        + ("; * tool's floor" if floor else "")
        + "):"
    )
    return Table(headers, tuple(rows), numeric, caption)


def results_table(report: Report) -> Table:
    """One row per result: configuration, kind, whether its pragmas promise a durable commit,
    the path verdict (``-`` for what issues no sync; its strength where it differs from the
    report's), sync primitive, n, p50 and p99 with
    their 95 % intervals, p90, the p99 precision, each round's p99 (with rounds), the
    range of earlier runs' p99 (with earlier runs), p99.9, max, ops/s."""
    verdicts = {v.subject: v for v in report.verdict.results}
    rounds = any(r.summary.round_p99_ns for r in report.results)
    earlier = any(r.earlier for r in report.results)
    headers = (
        "configuration",
        "kind",
        PROMISE_HEADER,
        "path verdict",
        "sync primitive",
        "n",
        "p50",
        "p50 95% CI",
        "p90",
        "p99",
        "p99 95% CI",
        "p99 +-",
        *(("p99 of each round",) if rounds else ()),
        *(("p99 of earlier runs",) if earlier else ()),
        "p99.9",
        "max",
        "ops/s",
    )
    rows = []
    for r in report.results:
        s = r.summary
        v = verdicts.get(r.name)
        durable = _durable(v, r, report.host.os_name)
        label = result_label(r)
        if stats.at_tool_floor(r, report.floors):
            label += " (at the tool's floor)"
        # the strength where it differs from the report's (said once in the bottom line)
        other = v is not None and v.strength and v.strength != report.verdict.strength
        verdict = (
            Cell("-")
            if v is None or r.primitive == "none"
            else Cell(v.path_verdict + (f" ({v.strength})" if other else ""))
        )
        rows.append(
            (
                Cell(label),
                Cell(r.kind),
                durable,
                verdict,
                Cell(r.primitive),
                Cell(f"{s.count}" + ("" if r.target_reached else f" (<{r.target_samples})")),
                Cell(fmt_ns(s.p50_ns)),
                Cell(fmt_interval(s.p50_ci_ns, s.p50_interval)),
                Cell(fmt_ns(s.p90_ns)),
                Cell(fmt_ns(s.p99_ns)),
                Cell(fmt_interval(s.p99_ci_ns, s.p99_interval)),
                Cell(p99_precision(r), "caution" if r.ci_target_met is False else ""),
                *((Cell(fmt_spread(s.round_p99_ns)),) if rounds else ()),
                *((Cell(fmt_spread([e.p99_ns for e in r.earlier], "runs")),) if earlier else ()),
                Cell(fmt_ns(s.p999_ns) if s.count >= P999_MIN_SAMPLES else "-"),
                Cell(fmt_ns(s.max_ns)),
                Cell(f"{s.ops_per_s:,.0f}"),
            )
        )
    # every column from n on is a figure (the headers above list them in that order)
    numeric = frozenset(range(headers.index("n"), len(headers)))
    return Table(headers, tuple(rows), numeric)
