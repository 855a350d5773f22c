"""Text of the commands other than run and audit reports: compare (a fleet:
:mod:`fsyncbench.report.fleet`), host, and the
raw samples as CSV. (Run and audit reports: :mod:`fsyncbench.report`; crash:
:mod:`fsyncbench.crash.view`; powercut: :mod:`fsyncbench.powercut.view`.) Tables use tabulate's
"simple" layout in text, fitted to the terminal (:mod:`fsyncbench.report.layout`), and
"github" in Markdown (:data:`TABLEFMT`)."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from tabulate import tabulate

from fsyncbench.fmt import fmt_interval, fmt_ns
from fsyncbench.jsonable import to_jsonable
from fsyncbench.model import Host, Report, Result
from fsyncbench.report.host_text import host_lines
from fsyncbench.report.layout import fit_pairs, fit_table, width, wrap_text

if TYPE_CHECKING:  # for annotations only: report.compare imports numpy
    from fsyncbench.report.compare import PairComparison, QuantileComparison

#: tabulate's "simple" layout not fitted to the terminal (:func:`render_compare`'s ``fit``).
_NATURAL = "simple, as it is"

#: tabulate layout of a table per output format.
TABLEFMT = {"text": "simple", "markdown": "github"}


def _md(text: str) -> str:
    from fsyncbench.report.markdown import escape

    return escape(text)


def json_safe(obj: Any) -> Any:
    """``obj`` (JSON-ready data) with non-finite floats as None: JSON has no NaN/Infinity."""
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [json_safe(v) for v in obj]
    return obj


def render_host(host: Host, fmt: str = "text") -> str:
    """The host record: aligned ``field value`` lines (text), a two-column table (markdown)."""
    if fmt == "markdown":
        rows = [(_md(k), _md(v)) for k, v in host_lines(host)]
        return (
            "# fsyncbench host: "
            + _md(host.hostname)
            + "\n\n"
            + tabulate(rows, headers=["field", "value"], tablefmt="github", disable_numparse=True)
            + "\n"
        )
    return "\n".join(fit_pairs(host_lines(host))) + "\n"


# --------------------------------------------------------------------------- CSV export


def render_csv(report: Report) -> str:
    """Raw samples, one row per timed operation in time order: configuration, primitive,
    kind, index, ns, and the slice (0-based, per configuration) and round (0-based) it was
    taken in (empty for schema 1 reports, which did not record them)."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["configuration", "primitive", "kind", "index", "ns", "slice", "round"])
    for r in report.results:
        where = _slice_of_each(r)
        for i, ns in enumerate(r.samples_ns):
            s, rnd = where[i] if where else ("", "")
            w.writerow([r.name, r.primitive, r.kind, i, ns, s, rnd])
    return buf.getvalue()


def _slice_of_each(r: Result) -> list[tuple[int, int]]:
    """(slice, round) of every sample of ``r``; [] when the slices are not recorded or do not
    add up to the samples."""
    if not r.slice_counts or sum(r.slice_counts) != len(r.samples_ns):
        return []
    rounds = r.slice_rounds or (0,) * len(r.slice_counts)
    return [(k, rnd) for k, (c, rnd) in enumerate(zip(r.slice_counts, rounds)) for _ in range(c)]


# --------------------------------------------------------------------------- compare


def floor_moved_line(pair: PairComparison) -> str:
    """What to say when the tool's own floor moved between the two runs ("" if it did not)."""
    moved = pair.floor_moved
    if not moved:
        return ""
    parts = ", ".join(
        f"{name} p50 {fmt_ns(q.a_ns)} -> {fmt_ns(q.b_ns)} ({q.ratio:.2f}x)" for name, q in moved
    )
    return (
        "The machine itself changed between the runs: the tool's floor (CPU-only work, no "
        f"storage) moved significantly: {parts}. A slower or busier CPU (a shared host, "
        "frequency scaling) moves every figure, so differences above may be the "
        "machine's, not the storage's."
    )


def _ratio(q: QuantileComparison) -> str:
    if q.ratio is None:
        return "-"
    text = f"{_fmt_ratio(q.ratio)}x"
    if q.ratio_ci is not None:
        text += f" [{_fmt_ratio(q.ratio_ci[0])}, {_fmt_ratio(q.ratio_ci[1])}]"
    return text


def basis_words(q: QuantileComparison) -> str:
    """How B was judged, in a few words: "against 5 runs" (history) or "pair, own spread"."""
    if q.p_value is None:
        return "-"
    if q.basis == "history":
        kept = q.baseline_runs - q.left_out
        return f"against {kept} runs" + (f" ({q.left_out} left out)" if q.left_out else "")
    if q.spread == "runs":
        return f"pair: {q.baseline_runs} runs, their spread"
    return (
        "pair: rounds' spread"
        if q.baseline_runs <= 1
        else f"pair: {q.baseline_runs} runs, own spread"
    )


def _fmt_ratio(x: float) -> str:
    return f"{x:.2f}" if 0.1 <= x < 100 else f"{x:.2g}"


def _significance(q: QuantileComparison) -> str:
    if q.significant is None:
        return "cannot tell"
    if not q.significant:
        return "no"
    assert q.ratio is not None  # only a statistic with a ratio is tested (compare_quantile)
    return "yes, slower" if q.ratio > 1 else "yes, faster"


def host_differences(a: Report, b: Report) -> list[tuple[str, str, str]]:
    """(field, A, B) for every host-summary line that differs, report facts first."""
    rows = []
    for label, va, vb in (
        ("created", a.created_utc, b.created_utc),
        ("fsyncbench", a.tool_version, b.tool_version),
    ):
        if va != vb:
            rows.append((label, va, vb))
    la, lb = dict(host_lines(a.host)), dict(host_lines(b.host))
    for key in list(la) + [k for k in lb if k not in la]:
        if la.get(key) != lb.get(key):
            rows.append((key, la.get(key, "-"), lb.get(key, "-")))
    if a.verdict.path_verdict != b.verdict.path_verdict:
        rows.append(("path verdict", a.verdict.path_verdict, b.verdict.path_verdict))
    return rows


def _table(
    rows: Sequence[Sequence[str]],
    headers: Sequence[str],
    tablefmt: str,
    right: Collection[int] = (),
    keys: int = 1,
) -> str:
    """A table in ``tablefmt``: "simple" fitted to the terminal (:func:`fit_table`), any
    other (Markdown's "github") as tabulate lays it out."""
    if tablefmt == "simple":
        return "\n".join(fit_table(headers, rows, right, keys=keys))
    tablefmt = "simple" if tablefmt == _NATURAL else tablefmt
    return str(
        tabulate(
            [list(r) for r in rows],
            headers=list(headers),
            tablefmt=tablefmt,
            disable_numparse=True,
            colalign=["right" if i in right else "left" for i in range(len(headers))]
            if rows
            else None,
        )
    )


def render_compare(
    a: Report,
    b: Report,
    pair: PairComparison,
    labels: Sequence[str],
    tablefmt: str = "simple",
    verbose: bool = True,
    fit: bool = True,
) -> str:
    """Two reports: host differences first, then p50 and p99 of each configuration side by
    side with their intervals, the ratio B/A with its interval, the Holm-adjusted p-value,
    significance and P(B>A). ``verbose`` False (the terminal's default): each statistic's
    A, B, B/base with its interval, how it was judged and whether it differs, and one line
    saying what the whole table adds. ``fit`` False: laid out as it is, not to the terminal
    (a page's preformatted copy)."""
    tablefmt = tablefmt if fit or tablefmt != "simple" else _NATURAL
    la, lb = labels
    out = [
        f"A = {la} ({a.host.hostname}, {a.created_utc})",
        f"B = {lb} ({b.host.hostname}, {b.created_utc})",
        "",
    ]
    from fsyncbench.report.compare import run_key  # a, b compared: numpy is loaded already

    if run_key(a) == run_key(b):
        out += [
            "Note: B is the same run as A (same host, directory, time and figures): nothing "
            "can differ between them; compare two runs to see a change.",
            "",
        ]
    diffs = host_differences(a, b)
    if diffs:
        out += [
            "Host differences:",
            _table(diffs, ["field", "A", "B"], tablefmt),
            "",
        ]
    else:
        out += ["Host differences: none in the host summary (same host, same storage).", ""]
    rows = []
    for c in pair.configs:
        for q in (c.p50, c.p99):
            first = q is c.p50
            rows.append(
                [
                    c.name if first else "",
                    f"p{q.percentile:g}",
                    f"{c.n_a}/{c.n_b}" if first else "",
                    f"{fmt_ns(q.a_ns)} {fmt_interval(q.a_ci_ns, q.a_interval)}",
                    f"{fmt_ns(q.b_ns)} {fmt_interval(q.b_ci_ns, q.b_interval)}",
                    _ratio(q),
                    basis_words(q),
                    "-" if q.p_adjusted is None else f"{q.p_adjusted:.2g}",
                    _significance(q),
                    "-" if q.detectable_ratio is None else f"{_fmt_ratio(q.detectable_ratio)}x",
                    f"{c.rank.prob_b_slower:.2f}" if first and c.rank is not None else "",
                ]
            )
    conf = f"{pair.confidence * 100:g}%"
    if not verbose:
        return _compact_compare(out, pair, conf, tablefmt, bool(a.writers or b.writers))
    out.append(
        _table(
            rows,
            [
                "configuration",
                "stat",
                "n A/B",
                f"A [{conf} CI]",
                f"B [{conf} CI]",
                f"B/base [{conf} CI]",
                "basis",
                f"p ({pair.adjustment})",
                "significant",
                "detectable",
                "P(B>A)",
            ],
            tablefmt,
            keys=2,
        )
    )
    tested = sum(1 for c in pair.configs for q in (c.p50, c.p99) if q.p_value is not None)
    qs = [q for c in pair.configs for q in (c.p50, c.p99) if q.p_value is not None]
    history = sum(1 for q in qs if q.basis == "history")
    out += [
        "",
        "A and B [CI]: each report's own figure and interval (within that run alone, unless "
        "earlier runs recorded in it widened it: the next run may land outside). B/base: B "
        "against the baseline, "
        "A and the earlier runs of the same measurement A recorded. "
        + (
            f"{history} of {tested} statistics were judged against the baseline's runs "
            "('against N runs': the spread those runs really had, a prediction of a new run "
            "made without B)"
            if history
            else "No statistic had 3 earlier runs behind A"
        )
        + (
            f"; {tested - history} against both runs' own spread, that of their rounds "
            "('pair'), which cannot see how far runs at other times differ: keep "
            "3 earlier runs of the same measurement in A's report directory to measure it"
            if tested - history
            else ""
        )
        + f". Significant: the {pair.adjustment}-adjusted p-value over all {tested} statistics "
        f"tested is below {1 - pair.confidence:.2g}, so two runs of an unchanged machine show "
        f"a significant difference anywhere in this table at most "
        f"{100 * (1 - pair.confidence):g} % of the time. Detectable: the slowdown the "
        "regression gate's test of that statistic catches 4 times in 5 (one-sided, at the "
        "level Holm holds a lone regression to; '-': not gated). P(B>A): the chance a random B "
        "operation is slower than a random A one (0.5 = no shift); a description, not a test.",
    ]
    powers = [
        q.detectable_ratio
        for c in pair.configs
        for q in (c.p50, c.p99)
        if q.detectable_ratio is not None
    ]
    if powers:
        out.append(
            f"Power: the {len(powers)} statistics the regression gate checks could each "
            f"have caught a slowdown of {_fmt_ratio(min(powers))}x to "
            f"{_fmt_ratio(max(powers))}x (median {_fmt_ratio(statistics.median(powers))}x), 4 "
            "times in 5; --fail-on-regression PCT passes only those whose detectable slowdown "
            "is at most 1 + PCT/100."
        )
    untested = sorted({q.reason for c in pair.configs for q in (c.p50, c.p99) if q.reason})
    if untested:
        out.append("Cannot tell (not tested): " + "; ".join(untested) + ".")
    moved = floor_moved_line(pair)
    if moved:
        out += ["", moved]
    if pair.only_a:
        out.append(f"Only in A: {', '.join(pair.only_a)}")
    if pair.only_b:
        out.append(f"Only in B: {', '.join(pair.only_b)}")
    if a.writers or b.writers:
        from fsyncbench.report import writers

        rows, only_a, only_b = writers.compare_rows(a, b)
        out += [
            "",
            f"Concurrent writers ({writers.NOT_GATED}; oldest: the oldest commit in "
            "progress, p99 over time):",
        ]
        if rows:
            out.append(
                _table(
                    rows,
                    list(writers.COMPARE_HEADERS),
                    tablefmt,
                    right=range(1, len(writers.COMPARE_HEADERS)),
                )
            )
        if only_a:
            out.append(f"Writers points only in A: {', '.join(only_a)}")
        if only_b:
            out.append(f"Writers points only in B: {', '.join(only_b)}")
    return _joined(out, tablefmt)


def _joined(out: list[str], tablefmt: str) -> str:
    """``out``'s lines as the text of a comparison: on a terminal ("simple") a line of
    running text longer than the width wrapped (its tables are fitted already)."""
    if tablefmt == "simple":
        cols = width()
        out = [line if "\n" in line or len(line) <= cols else wrap_text(line) for line in out]
    return "\n".join(out) + "\n"


def _compact_compare(
    out: list[str], pair: PairComparison, conf: str, tablefmt: str, writers: bool
) -> str:
    """:func:`render_compare` without its columns for the record (each report's interval,
    n, the adjusted p-value, the detectable slowdown, P(B>A)) and its long notes."""
    rows = [
        [
            c.name if q is c.p50 else "",
            f"p{q.percentile:g}",
            fmt_ns(q.a_ns),
            fmt_ns(q.b_ns),
            _ratio(q),
            basis_words(q),
            _significance(q),
        ]
        for c in pair.configs
        for q in (c.p50, c.p99)
    ]
    headers = ["configuration", "stat", "A", "B", f"B/base [{conf} CI]", "basis", "significant"]
    out.append(_table(rows, headers, tablefmt, right={2, 3}, keys=2))
    tested = sum(1 for c in pair.configs for q in (c.p50, c.p99) if q.p_value is not None)
    out += [
        "",
        f"Significant: {pair.adjustment}-adjusted over the {tested} statistics tested. "
        "B/base: B against A and the earlier runs A recorded. Each report's interval, n, "
        "p-values, the slowdown the regression gate can detect, P(B>A)"
        + (", the concurrent writers' points" if writers else "")
        + " and the notes on them: --verbose.",
    ]
    if pair.only_a:
        out.append(f"Only in A: {', '.join(pair.only_a)}")
    if pair.only_b:
        out.append(f"Only in B: {', '.join(pair.only_b)}")
    return _joined(out, tablefmt)


def compare_jsonable(
    a: Report, b: Report, pair: PairComparison, labels: Sequence[str]
) -> dict[str, Any]:
    """Two reports compared, as JSON-ready data: what :func:`render_compare` shows (host
    differences, per configuration p50 and p99 of A and B with intervals, ratio, p-values,
    significance, P(B>A)), with durations in ns."""
    la, lb = labels
    data: dict[str, Any] = json_safe(
        {
            "kind": "compare",
            "a": {"label": la, "hostname": a.host.hostname, "created_utc": a.created_utc},
            "b": {"label": lb, "hostname": b.host.hostname, "created_utc": b.created_utc},
            "host_differences": [
                {"field": f, "a": va, "b": vb} for f, va, vb in host_differences(a, b)
            ],
            "confidence": pair.confidence,
            "adjustment": pair.adjustment,
            "configs": to_jsonable(pair.configs),
            "only_a": list(pair.only_a),
            "only_b": list(pair.only_b),
            "floor_moved": [{"name": name, **to_jsonable(q)} for name, q in pair.floor_moved],
        }
    )
    if a.writers or b.writers:
        from fsyncbench.report import writers

        rows, only_a, only_b = writers.compare_rows(a, b)
        data["writers"] = {
            "gated": False,
            "why": writers.NOT_GATED,
            "points": [dict(zip(writers.COMPARE_HEADERS, row)) for row in rows],
            "only_a": only_a,
            "only_b": only_b,
        }
    return data
