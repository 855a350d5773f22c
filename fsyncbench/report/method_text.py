"""How a report was measured, in words: the method paragraph (:func:`methodology`), how its
95 % intervals were made and what they cannot see (:func:`interval_method_text`,
:func:`interval_caveat`), what each "none (...)" interval means
(:func:`no_interval_legend`), the tool's floor (:func:`floor_line`), and the method and
provenance section of a description (:func:`method_section`).
"""

from __future__ import annotations

from collections.abc import Sequence

from fsyncbench.fmt import fmt_ns
from fsyncbench.model import Report, Result
from fsyncbench.report.document import Block, Cell, Paragraph, Section, Table
from fsyncbench.report.latency import P999_MIN_SAMPLES
from fsyncbench.report.vocabulary import STRENGTH_DEFINITION

__all__ = [
    "NO_INTERVAL_MEANS",
    "floor_line",
    "interval_caveat",
    "interval_method_text",
    "method_section",
    "methodology",
    "no_interval_legend",
    "provenance_table",
]


def floor_line(report: Report) -> str:
    """The tool's floor measurements and what "at the tool's floor" means ("" if none)."""
    from fsyncbench.measure import stats

    if not report.floors:
        return ""
    parts = ", ".join(f"{f.name} {fmt_ns(f.summary.p50_ns)}" for f in report.floors)
    return (
        f"Tool floor (p50): {parts}. A result within {stats.FLOOR_FACTOR:g}x of the floor "
        'for its kind is marked "at the tool\'s floor": it measures Python and SQLite, '
        "not the storage."
    )


def methodology(report: Report) -> str:
    """A paragraph saying what was timed and how the statistics were made."""
    commits = [r for r in report.results if r.kind == "commit"]
    any_r = report.results[0] if report.results else None
    parts = []
    if commits:
        parts.append(
            "Each commit is one SQLite transaction (BEGIN; INSERT of one row into "
            "`steps(run_id, seq, name, input_hash, output)`; COMMIT) on a fresh database "
            f"file per configuration, with a {commits[0].payload_bytes}-byte JSON output; "
            "`time.perf_counter_ns()` wraps the transaction only."
        )
    if any(r.kind in ("flush", "write") for r in report.results):
        parts.append(
            "Raw primitives overwrite 4 KiB at offset 0 of one preallocated file and then "
            "call the named sync primitive (queue depth 1); `none` is the write alone."
        )
    rounds = max((len(r.summary.round_p99_ns) for r in report.results), default=0)
    if any_r is not None and any_r.ci_target_pct is not None and rounds > 1:
        counts = sorted({r.summary.count for r in report.results})
        met = sum(1 for r in report.results if r.ci_target_met)
        parts.append(
            f"Warmup operations are not counted. The run had {rounds} rounds, one after the "
            "other, each a fresh process with fresh files that sampled every configuration "
            "for its share of the time budget, round-robin in short slices with the "
            "filesystem synced (untimed) between slices: the rounds are the replicates the "
            "run-to-run spread is read from, so none stops early. The p99 precision target "
            f"(+-{any_r.ci_target_pct:g} %) was checked once over all rounds and met by {met} "
            f"of {len(report.results)} configurations (only an interval on at least "
            f"{_min_target_df()} degrees of freedom can meet it). They got "
            f"{counts[0]}-{counts[-1]} samples."
        )
    elif any_r is not None and any_r.ci_target_pct is not None:
        from fsyncbench.measure import plan
        from fsyncbench.measure import timing as measure

        counts = sorted({r.summary.count for r in report.results})
        parts.append(
            "Warmup operations are not counted. Each configuration was sampled until the 95 % "
            f"interval of its p99 (below) lay within +-{any_r.ci_target_pct:g} % of p99 on at "
            f"least {_min_target_df()} degrees of freedom, "
            f"checked outside the timed region after every slice and met at "
            f"{measure.CONFIRM_CHECKS} checks in a row, with at least {any_r.target_samples} "
            f"samples from at least {plan.MIN_PHASES} slices, or its time budget ran out. "
            "Configurations were measured round-robin in short slices, so each one's samples "
            "spread over the whole run, with the filesystem synced (untimed) between slices; "
            "time one did not need went to those still short of the target. "
            f"They got {counts[0]}-{counts[-1]} samples."
        )
    elif any_r is not None:
        counts = sorted({r.summary.count for r in report.results})
        got = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        parts.append(
            f"Warmup operations are not counted; each configuration aimed at "
            f"{any_r.target_samples} samples within {any_r.budget_s:g} s and got {got}."
        )
    if any_r is not None:
        parts.append(
            "Percentiles use numpy's linear method on the raw samples (kept in the JSON). "
            + interval_method_text(report.results)
        )
    if report.results:
        parts.append(
            "ops/s is 1e9 / mean operation time, the rate of one writer at queue depth 1; "
            f"p99.9 is shown only from {P999_MIN_SAMPLES:,} samples on (below that it is "
            "little more than the maximum)."
        )
    if report.floors:
        parts.append(floor_line(report))
    return " ".join(parts)


#: What each "none (...)" of an interval cell means, in the words :func:`fsyncbench.fmt.short_reason` gives it.
NO_INTERVAL_MEANS = {
    "n too small": "too few samples for an interval of that percentile",
    "tail in too few slices": "the slowest 1 % came from one or two slices of the run, so "
    "how much it varies cannot be estimated",
    "tail in too few rounds": "the slowest 1 % came from one or two of the rounds, so how "
    "much it varies from round to round cannot be estimated",
    "slices disagree": "the slices' own p99s differ so much that an interval would reach "
    "beyond the samples measured",
    "rounds disagree": "the rounds' own p99s differ so much that an interval would reach "
    "beyond the samples measured",
}


def no_interval_legend(results: Sequence[Result], skip: Sequence[str] = ()) -> str:
    """One line saying what each "none (...)" among ``results``' p50 and p99 intervals
    means ("" when there is none), so a reader of the table is not left to guess; the
    reasons in ``skip`` (e.g. the self-explaining "n too small") left out."""
    from fsyncbench.fmt import short_reason

    seen = dict.fromkeys(
        short_reason(iv)
        for r in results
        for iv in (r.summary.p50_interval, r.summary.p99_interval)
        if iv is not None and iv.bounds is None
    )
    said = [
        f"none ({k}): {NO_INTERVAL_MEANS[k]}"
        for k in seen
        if k in NO_INTERVAL_MEANS and k not in skip
    ]
    return ("No interval: " + "; ".join(said) + ".") if said else ""


def interval_caveat(results: Sequence[Result]) -> str:
    """One line for the terminal report on what its intervals cannot see ("" when they
    rest on several rounds): schema 1 intervals assume independent samples; one round
    cannot see run-to-run variation."""
    from fsyncbench.measure import intervals

    methods = {r.summary.ci_method for r in results}
    if not methods:
        return ""
    if not methods & {intervals.METHOD_BLOCKS, intervals.METHOD_ROUNDS}:
        return (
            "Intervals: this report (schema 1) has intervals that assume independent "
            "samples; samples close in time move together, so they are narrower than the "
            "spread from run to run."
        )
    runs = _runs_behind(results)
    if runs:
        widened = sum(1 for r in results if _widened(r))
        return (
            f"Intervals: those of {widened} of {len(results)} configurations include the spread "
            f"between this run and {_count_range(runs)} earlier runs of the same measurement "
            "(same host, directory, storage and workload; their p99 is shown), so they aim "
            "to cover the figure at another time, not only during this run; from that few "
            "runs the spread itself is known only roughly."
        )
    if not any(r.slice_counts for r in results):
        return ""
    if not any(r.summary.round_p99_ns for r in results):
        return (
            "Intervals: one round and this run alone: they rest on its slices and cannot "
            "see how much a separate run (new files, another process, later) would differ "
            "(`fsyncbench run` measures in 8 rounds by default)."
        )
    return (
        f"Intervals: this run alone (fewer than {intervals.MIN_EARLIER_RUNS} earlier runs of the "
        "same measurement were read, or none of its intervals could take them in): its "
        "rounds are seconds apart, and a run at another "
        f"time can differ by more than they show. Once {intervals.MIN_EARLIER_RUNS} earlier runs "
        "are saved in the --report-dir (or --history DIR), intervals include the spread "
        "between runs."
    )


def _widened(r: Result) -> bool:
    """Whether earlier runs entered an interval of ``r`` (p50 or p99)."""
    s = r.summary
    return any(iv is not None and iv.runs > 1 for iv in (s.p50_interval, s.p99_interval))


def _runs_behind(results: Sequence[Result]) -> list[int]:
    """Sorted earlier-run counts of the results whose intervals earlier runs entered."""
    return sorted(len(r.earlier) for r in results if _widened(r))


def _count_range(counts: Sequence[int]) -> str:
    """``5`` or ``5-9``: a count, or the range of counts, of sorted ``counts``; "its" for
    none (a report whose raw samples were left out)."""
    if not counts:
        return "its"
    return str(counts[0]) if counts[0] == counts[-1] else f"{counts[0]}-{counts[-1]}"


def _min_target_df() -> str:
    from fsyncbench.measure import intervals

    return f"{intervals.MIN_TARGET_DF:g}"


def interval_method_text(results: Sequence[Result]) -> str:
    """How the report's 95 % intervals were made, and what they do not cover."""
    from fsyncbench.measure import intervals

    methods = {r.summary.ci_method for r in results}
    if methods & {intervals.METHOD_BLOCKS, intervals.METHOD_ROUNDS}:
        slices = sorted(len(r.slice_counts) for r in results if r.slice_counts)
        rounds = max((len(r.summary.round_p99_ns) for r in results), default=0)
        by_rounds = sum(
            1
            for r in results
            for iv in (r.summary.p50_interval, r.summary.p99_interval)
            if iv is not None and iv.method == intervals.METHOD_ROUNDS and iv.bounds is not None
        )
        shown = sum(
            1
            for r in results
            for iv in (r.summary.p50_interval, r.summary.p99_interval)
            if iv is not None and iv.bounds is not None
        )
        text = (
            "Samples close in time move together (stalls and write-back come in bursts), so "
            "the 95 % intervals of p50 and p99 rest on blocks of samples, not on single "
            f"samples: each configuration's {_count_range(slices)} slices, a rotation of the "
            "others apart"
            + (f", and its {rounds} rounds" if rounds else "")
            + ". An interval is the delete-a-block jackknife of log(percentile) (Kuensch 1989; "
            "Busing et al. 1999), over the slices, or over the rounds where they disagree "
            f"more ({by_rounds} of the {shown} intervals given here), with Student's t on "
            "the effective number of blocks holding samples at or beyond the percentile, "
            "less one (Kish's effective count; for a p50 about blocks - 1, for a p99 often "
            "fewer): as wide as the blocks disagree, wider up than down, and never narrower "
            "than one tick of the clock. No interval is given from fewer than "
            f"{intervals.MIN_BLOCKS} slices, fewer than {intervals.MIN_TAIL_SAMPLES} samples beyond "
            'the percentile, or a tail held by one block ("none").'
        )
        if rounds:
            text += (
                f" Each of the {rounds} rounds had fresh files, its own process and warmup; "
                "each round's p99 is shown."
            )
        else:
            text += (
                " One round: variation between separate runs (new files, another process, "
                "minutes later) is seen only as far as it shows within this run; "
                "`fsyncbench run --rounds N` repeats the measurement to expose it."
            )
        runs = _runs_behind(results)
        if runs:
            text += (
                f" Each interval then includes the spread between this run and the "
                f"{_count_range(runs)} earlier runs of the same measurement recorded with it "
                f"(same host, directory, storage and workload; the last {intervals.MAX_EARLIER_RUNS}): "
                "the interval is the estimate x exp(+-t x sd), sd the standard deviation of "
                "the runs' log(percentile), this run's included, and t on runs - 1 degrees "
                "of freedom, as pyperf spreads over its worker processes; never narrower "
                "than this run's own interval, and given where this run alone has none. It "
                "aims to cover the figure at another time, not only during this run."
            )
        else:
            text += (
                f" Fewer than {intervals.MIN_EARLIER_RUNS} earlier runs of the same measurement "
                "were read (from the report directory, or --history DIR), so a run at another "
                "time (a busier host, another hour) may differ by more than the intervals show."
            )
        return text
    if methods:
        return (
            "The intervals in this report (" + " and ".join(sorted(methods)) + ", report "
            "schema 1) assume independent samples; samples close in time move together, "
            "so they are narrower than the spread from run to run. Re-run with a current "
            "fsyncbench for intervals that allow for it."
        )
    return ""


def provenance_table(report: Report) -> Table:
    """Tool version, report schema, command line, creation time, run duration, Python and
    SQLite versions."""
    h = report.host
    rows = [
        ("fsyncbench", report.tool_version),
        ("report schema", f"{report.schema_version}"),
        ("command line", " ".join(report.command_line) or "-"),
        ("created (UTC)", report.created_utc),
        ("duration", "not recorded" if report.elapsed_ns is None else fmt_ns(report.elapsed_ns)),
        ("Python", h.python_version),
        ("SQLite", h.sqlite_version),
    ]
    return Table(("field", "value"), tuple((Cell(k), Cell(v)) for k, v in rows))


def method_section(report: Report) -> Section:
    """Provenance and the method paragraph."""
    blocks: list[Block] = [provenance_table(report)]
    text = methodology(report)
    if text:
        blocks.append(Paragraph(text))
    blocks.append(
        Paragraph(
            "Verdict strengths: "
            + "; ".join(f"{k}: {v}" for k, v in STRENGTH_DEFINITION.items())
            + "."
        )
    )
    return Section("method", "Method and provenance", tuple(blocks))
