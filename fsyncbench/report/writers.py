"""What ``run --writers`` (and ``--steps-per-commit``) measured, described once for every
format: one answer paragraph per configuration (scaling, the starved writers, the bound
one sync per commit sets, the knee under ``--max-p99``), one table of the points, one of
the writers. Only the facts of :class:`fsyncbench.model.WritersPoint` and the judge's
bound (:mod:`fsyncbench.judge.writers_rules`) are used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import groupby

from fsyncbench.errors import FsyncbenchError
from fsyncbench.fmt import fmt_interval, fmt_ns
from fsyncbench.judge.gates import parse_duration
from fsyncbench.judge.writers_rules import UNTOLD_CODE, sync_bound
from fsyncbench.measure import disturbance
from fsyncbench.measure.concurrency import STARVED_SHARE, STARVED_WAIT_SHARE
from fsyncbench.measure.workloads import per_commit_sync
from fsyncbench.model import RISK, Report, WritersPoint, recorded_options
from fsyncbench.report.document import (
    Block,
    Bullets,
    Cell,
    Figure,
    Paragraph,
    Section,
    Table,
)
from fsyncbench.report.text import width

KEY = "writers"
TITLE = "Concurrent writers and batching"


def _rate(x: float) -> str:
    return f"{x:,.0f}/s"


def _starved_text(points: Sequence[WritersPoint]) -> str:
    """Where writers starved, and the worst case in figures (the point whose oldest commit
    in progress was oldest over time); "" when none did."""
    hit = [p for p in points if p.summary.starved]
    if not hit:
        return ""
    p = max(hit, key=lambda q: q.summary.oldest_wait_p99_ns)
    s = p.summary
    fair = s.commits_per_s / p.writers if p.writers else 0.0
    starved = [i for i, la in enumerate(p.lanes) if la.writer in s.starved]
    worst = min(starved, key=lambda i: s.writer_commits_per_s[i])
    longest = max(starved, key=lambda i: s.writer_longest_ns[i])
    at = ", ".join(str(q.writers) for q in hit)
    return (
        f"Writers starved at {at} writers. At {p.writers}: writer {worst} made "
        f"{_rate(s.writer_commits_per_s[worst])} against an equal share of {_rate(fair)}, "
        f"writer {longest} waited {fmt_ns(s.writer_longest_ns[longest])} for one commit, "
        f"and {s.lock_wait_share:.0%} of all commit time went to waiting for the write lock; "
        f"over time the oldest commit in progress was older than "
        f"{fmt_ns(s.oldest_wait_p99_ns)} 1 % of the time, while the p99 over commits says "
        f"{fmt_ns(s.p99_interval.estimate_ns)}."
    )


def _knee(points: Sequence[WritersPoint], max_p99_ns: float | None) -> str:
    """The most writers up to which (every count from the fewest) the p99 and the longest
    commit stay under ``max_p99_ns``, with the commits/s there; "" without a limit or with
    one point."""
    if max_p99_ns is None or len(points) < 2:
        return ""
    limit = fmt_ns(max_p99_ns)
    best = None
    for p in sorted(points, key=lambda q: q.writers):
        if max(p.summary.p99_interval.estimate_ns, p.summary.max_ns) > max_p99_ns:
            break
        best = p
    if best is None:
        return f"At no writer count did the p99 and the longest commit stay under {limit}."
    return (
        f"Knee: up to {best.writers} writer{'s' if best.writers > 1 else ''} the p99 and "
        f"the longest commit stay under {limit} (--max-p99), at "
        f"{_rate(best.summary.commits_per_s)}."
    )


def _scaling_text(points: Sequence[WritersPoint], single: WritersPoint | None = None) -> str:
    """Commits/s, p99 and the longest commit from the fewest writers to the most (one
    point: its own figures), and the cost per step where steps are batched, against
    ``single`` (the same configuration and writers with one step per commit) when given."""
    lo = min(points, key=lambda p: p.writers)
    hi = max(points, key=lambda p: p.writers)
    a, b = lo.summary, hi.summary
    if lo is hi:
        text = (
            f"{lo.writers} writer{'s' if lo.writers > 1 else ''}: {_rate(a.commits_per_s)}, "
            f"p99 {fmt_ns(a.p99_interval.estimate_ns)}, longest {fmt_ns(a.max_ns)}."
        )
    else:
        ratio = b.commits_per_s / a.commits_per_s if a.commits_per_s else float("nan")
        text = (
            f"from {lo.writers} to {hi.writers} writers, {_rate(a.commits_per_s)} -> "
            f"{_rate(b.commits_per_s)} ({ratio:.2f}x), p99 {fmt_ns(a.p99_interval.estimate_ns)}"
            f" -> {fmt_ns(b.p99_interval.estimate_ns)}, longest commit {fmt_ns(a.max_ns)} -> "
            f"{fmt_ns(b.max_ns)}."
        )
    if lo.steps_per_commit > 1:
        text += (
            f" {_rate(a.steps_per_s)} steps at {lo.writers} writer{'s' if lo.writers > 1 else ''}"
            f", p50 per step {fmt_ns(a.p50_interval.estimate_ns / lo.steps_per_commit)}"
            + (
                f" (one step per commit: {fmt_ns(single.summary.p50_interval.estimate_ns)}, "
                f"{_rate(single.summary.steps_per_s)} steps)."
                if single is not None
                else "."
            )
        )
    busy = [(p.writers, p.summary.busy_errors) for p in points if p.summary.busy_errors]
    if busy:
        text += (
            " SQLITE_BUSY reached the writers "
            + ", ".join(f"{n:,} times at {w}" for w, n in busy)
            + " (each rolled back and retried)."
        )
    return text


def config_paragraph(
    points: Sequence[WritersPoint], report: Report, max_p99_ns: float | None = None
) -> Paragraph:
    """One configuration's points (same pragmas, steps and payload; any writer counts) in
    a few sentences: commits/s, p99 and the longest commit from the fewest writers to the
    most, starvation, the bound one sync per commit sets, the knee under --max-p99."""
    first = points[0]
    lo = min(points, key=lambda p: p.writers)
    single = next(
        (
            p
            for p in report.writers
            if p.steps_per_commit == 1
            and p.writers == lo.writers
            and p.requested == lo.requested
            and p.payload_bytes == lo.payload_bytes
        ),
        None,
    )
    sentences = [_scaling_text(points, single if lo.steps_per_commit > 1 else None)]
    starved = _starved_text(points)
    if starved:
        sentences.append(starved)
    risks = [
        f for f in (sync_bound(p, report.results, report.activity) for p in points) if f is not None
    ]
    # a risk first, then a bound that cannot tell (beyond it on a disturbed machine): only
    # without either are the points within it
    flagged = [f for f in risks if f.level == RISK]
    untold = [f for f in risks if f.code == UNTOLD_CODE]
    if flagged or untold:
        said = (flagged or untold)[0]
        sentences.append(said.message + " " + said.advice)
    elif risks and per_commit_sync(first.primitive):
        top = max(points, key=lambda p: p.summary.commits_per_s)
        bound = risks[0].evidence.get("bound_commits_per_s")
        if bound:
            sentences.append(
                f"Within the bound one {first.primitive} per commit sets "
                f"({_rate(float(bound))}: SQLite holds the write lock through each sync): "
                f"the most reached was {_rate(top.summary.commits_per_s)}."
            )
        else:
            sentences.append(risks[0].message)
    elif not per_commit_sync(first.primitive):
        sentences.append(f"No per-commit sync ({first.primitive}): no sync bounds its rate.")
    knee = _knee(points, max_p99_ns)
    if knee:
        sentences.append(knee)
    hit = disturbed_points(points)
    if hit:
        at = ", ".join(str(p.writers) for p in hit)
        sentences.append(
            f"The machine was disturbed at {at} writer{'s' if len(hit) > 1 or hit[0].writers > 1 else ''}"
            " (Machine, below): those figures may be the other processes'."
        )
    label = first.requested.label
    if first.steps_per_commit > 1:
        label += f", {first.steps_per_commit} steps per commit"
    if len({p.payload_bytes for p in report.writers}) > 1:
        label += f", {first.payload_bytes:,} B per step"
    return Paragraph(" ".join(sentences), lead=f"{label}:", tone="bad" if flagged else "")


def _groups(points: Sequence[WritersPoint]) -> list[list[WritersPoint]]:
    def key(p: WritersPoint) -> tuple[str, int, int]:
        return (p.requested.label, p.steps_per_commit, p.payload_bytes)

    return [list(g) for _k, g in groupby(points, key=key)]


#: Columns of :func:`points_table` that give way, in this order, until it fits the
#: terminal's width as text (the rest say what a user reads first).
GIVE_WAY = ("p99.9", "commits/s", "lock wait", "p50")


def _text_width(headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> int:
    widths = [max([len(h) + 2, *(len(r[k].text) for r in rows)]) for k, h in enumerate(headers)]
    return sum(widths) + 2 * (len(widths) - 1)


def points_table(points: Sequence[WritersPoint]) -> Table:
    """One row per point (configuration and writer count): the payload and steps per
    commit when swept, commits/s (steps/s when steps are swept), p50, p99 and p99.9 over
    commits, the longest commit; with more than one writer, the lock-wait share,
    SQLITE_BUSY and the oldest commit in progress over time (p99). The intervals are in the
    configuration's paragraph (:func:`config_paragraph`) and the full report's
    :func:`intervals_table`; columns of :data:`GIVE_WAY` are left out, in that order, until
    the table fits the terminal (:func:`fsyncbench.report.text.width`; tabulate's "simple"
    layout: each column at least its header + 2, two spaces between columns)."""
    steps = any(p.steps_per_commit > 1 for p in points)
    many = any(p.writers > 1 for p in points)
    sizes = len({p.payload_bytes for p in points}) > 1
    disturbed = disturbed_points(points)
    columns: list[tuple[str, Callable[[WritersPoint], Cell]]] = [
        (
            "configuration",
            lambda p: Cell(
                f"{p.requested.label} x{p.writers}" + (" !" if p in disturbed else ""),
                "caution" if p in disturbed else "",
            ),
        ),
    ]
    if sizes:
        columns.append(("payload", lambda p: Cell(f"{p.payload_bytes:,} B")))
    if steps:
        columns.append(("steps", lambda p: Cell(str(p.steps_per_commit))))
    columns.append(("commits/s", lambda p: Cell(f"{p.summary.commits_per_s:,.0f}")))
    if steps:
        columns.append(("steps/s", lambda p: Cell(f"{p.summary.steps_per_s:,.0f}")))
    columns += [
        ("p50", lambda p: Cell(fmt_ns(p.summary.p50_interval.estimate_ns))),
        ("p99", lambda p: Cell(fmt_ns(p.summary.p99_interval.estimate_ns))),
        ("p99.9", lambda p: Cell(fmt_ns(p.summary.p999_ns))),
        ("longest", lambda p: Cell(fmt_ns(p.summary.max_ns))),
    ]
    if many:
        columns += [
            ("lock wait", lambda p: Cell(f"{p.summary.lock_wait_share:.0%}")),
            (
                "BUSY",
                lambda p: Cell(
                    f"{p.summary.busy_errors:,}", "caution" if p.summary.busy_errors else ""
                ),
            ),
            (
                "oldest",
                lambda p: Cell(
                    fmt_ns(p.summary.oldest_wait_p99_ns), "bad" if p.summary.starved else ""
                ),
            ),
        ]
    for name in GIVE_WAY:
        rows = [tuple(f(p) for _h, f in columns) for p in points]
        if _text_width([h for h, _f in columns], rows) <= width():
            break
        if name == "commits/s" and not steps:
            continue  # without steps/s beside it, commits/s is the figure
        columns = [c for c in columns if c[0] != name]
    caption = (
        "Per commit, BEGIN to the end of COMMIT, lock waits included; configuration xN: N "
        "writers"
        + ("; steps: step rows per commit" if steps else "")
        + ("; !: the machine was disturbed while it ran (below)" if disturbed else "")
        + "."
    )
    if many:
        caption += (
            " lock wait: the share of commit time spent before the write lock was held; "
            "BUSY: SQLITE_BUSY errors that reached the writers (each retried); oldest: over "
            "every millisecond of the window, the age of the oldest commit in progress, its "
            "99th percentile (a starved writer shows here, not in the p99 over commits)."
        )
    return Table(
        tuple(h for h, _f in columns),
        tuple(tuple(f(p) for _h, f in columns) for p in points),
        frozenset(range(1, len(columns))),
        caption,
    )


def intervals_table(points: Sequence[WritersPoint]) -> Table:
    """Per point, the 95 % intervals of p50 and p99 over commits, p99.9 and the commit
    count (the full report; the estimates are in :func:`points_table`)."""
    rows = tuple(
        (
            Cell(p.name),
            Cell(fmt_interval(p.summary.p50_interval.bounds, p.summary.p50_interval)),
            Cell(fmt_interval(p.summary.p99_interval.bounds, p.summary.p99_interval)),
            Cell(fmt_ns(p.summary.p999_ns)),
            Cell(f"{p.summary.commits:,}"),
        )
        for p in points
    )
    return Table(
        ("configuration", "p50 95% interval", "p99 95% interval", "p99.9", "commits"),
        rows,
        frozenset({3, 4}),
        "95 % intervals from a jackknife over ten time slices of the window (commits that "
        "move together in time widen them; docs/method.md).",
    )


def writers_table(points: Sequence[WritersPoint]) -> Table:
    """One row per writer of every point with more than one: its commits/s and their share
    of an equal split, its longest commit, whether it starved; the point's Jain fairness
    index on its first row."""
    rows = []
    for p in points:
        if p.writers < 2:
            continue
        s = p.summary
        fair = s.commits_per_s / p.writers if p.writers else 0.0
        for i, lane in enumerate(p.lanes):
            starved = lane.writer in s.starved
            rows.append(
                (
                    Cell(p.name if i == 0 else ""),
                    Cell(f"{s.fairness:.2f}" if i == 0 else ""),
                    Cell(str(lane.writer)),
                    Cell(f"{s.writer_commits_per_s[i]:,.0f}"),
                    Cell(f"{s.writer_commits_per_s[i] / fair:.2f}" if fair else "-"),
                    Cell(fmt_ns(s.writer_longest_ns[i])),
                    Cell("starved" if starved else "", "bad" if starved else ""),
                    Cell(lane.error),
                )
            )
    errors = any(row[-1].text for row in rows)
    headers = ("configuration", "fairness", "writer", "commits/s", "of equal share", "longest")
    return Table(
        (*headers, "starved", *(("error",) if errors else ())),
        tuple(row if errors else row[:-1] for row in rows),
        frozenset({1, 2, 3, 4, 5}),
        "fairness: Jain's index of the writers' commit rates (1 = equal shares, 1/N = one "
        f"writer got all). starved: below {STARVED_SHARE:.0%} of an equal share of the "
        f"commits, or one commit longer than {STARVED_WAIT_SHARE:.0%} of the window.",
    )


def disturbed_points(points: Sequence[WritersPoint]) -> list[WritersPoint]:
    """The points whose machine was judged disturbed while they ran
    (:func:`fsyncbench.measure.disturbance.writers_disturbances`)."""
    return [p for p in points if p.activity is not None and p.activity.disturbed]


def machine_text(points: Sequence[WritersPoint]) -> str:
    """What the rest of the machine did while the writers ran, from each point's activity:
    the disturbed points first, named, with what disturbed them; else others' flushes on
    the disk, their CPU share, what they wrote and who, steal. "" when no point recorded
    activity."""
    acts = [p.activity for p in points if p.activity is not None]
    if not acts:
        return ""
    hit = disturbed_points(points)
    if hit:
        what = disturbance.phrase([p.activity for p in hit if p.activity is not None])
        return (
            f"Disturbed while {len(hit)} of {len(acts)} points ran "
            f"({', '.join(p.name for p in hit)}): {what}. Their figures may be the other "
            "processes', not the storage's: run again on a quiet machine."
        )
    parts = []
    flushes = [a.other_flushes for a in acts if a.other_flushes is not None]
    if flushes:
        parts.append(f"others flushed the disk about {sum(flushes):,.0f} times")
    cpu = [a.cpu_other_pct for a in acts if a.cpu_other_pct is not None]
    if cpu:
        busy = max(cpu)
        who = disturbance.busiest_names(acts, "cpu")
        named = f" ({who} the most)" if who and busy >= disturbance.CPU_OTHER_NAMED_PCT else ""
        parts.append(f"used at most {busy:.0f} % of the CPUs{named}")
    wrote = [a.other_writes_bytes for a in acts if a.other_writes_bytes is not None]
    if wrote and sum(wrote) > 0:
        who = disturbance.busiest_names(acts, "write")
        parts.append(f"wrote {sum(wrote) / 1e6:,.1f} MB" + (f" ({who} the most)" if who else ""))
    steal = [a.cpu_steal_pct for a in acts if a.cpu_steal_pct is not None]
    if steal and max(steal) > 0:
        parts.append(f"the hypervisor took at most {max(steal):.1f} % (steal)")
    seen = "; ".join(parts) or "nothing was read"
    text = f"Quiet while the writers ran: other processes {seen}."
    if not flushes:
        text += (
            " Their flushes on the disk were not counted (no flush counters here): a process "
            "syncing on the same disk would slow these commits unseen."
        )
    return text


def max_p99_of(command_line: Sequence[str]) -> float | None:
    """The ``--max-p99`` the run was given (ns), read from its recorded command line; None
    without one or when it does not parse."""
    text = recorded_options(command_line).get("--max-p99")
    if text is None:
        return None
    try:
        return float(parse_duration(text, "--max-p99"))
    except FsyncbenchError:
        return None


def writers_sections(report: Report, max_p99_ns: float | None = None) -> tuple[Section, ...]:
    """The concurrent-writers section of ``report`` (none without ``run --writers``)."""
    points = report.writers
    if not points:
        return ()
    if max_p99_ns is None:
        max_p99_ns = max_p99_of(report.command_line)
    first = points[0]
    handler = (
        f"a busy timeout of {first.busy_timeout_ms:,} ms (SQLite's busy handler sleeps 1, 2, "
        "5, 10, 15, 20, 25, 25, 25, 50, 50, then 100 ms between tries, so a writer can lose "
        "the lock to the others again and again)"
        if first.busy_timeout_ms
        else "no busy timeout (no busy handler: every lock held by another writer is an "
        "SQLITE_BUSY at once, rolled back and retried)"
    )
    method = Paragraph(
        f"Each point: N processes, each with its own connection to one fresh database, "
        f"committing for {first.window_ns / 1e9:g} s with {first.begin.upper()} "
        f"transactions and {handler}.",
        lead="How:",
    )
    blocks: list[Block] = [
        Bullets(tuple((config_paragraph(g, report, max_p99_ns), ()) for g in _groups(points))),
        Figure(
            "writers",
            "Commits/s (left) and latency (right) against the number of writers: the p99 over "
            "commits (solid) and, over time, the p99 of the oldest commit in progress "
            "(dashed); where they part, a writer starved.",
        ),
        points_table(points),
        intervals_table(points),
    ]
    per_writer = writers_table(points)
    if per_writer.rows:
        blocks.append(per_writer)
    machine = machine_text(points)
    if machine:
        tone = "bad" if disturbed_points(points) else ""
        blocks.append(Paragraph(machine, lead="Machine:", tone=tone))
    blocks.append(method)
    return (Section(KEY, TITLE, tuple(blocks)),)


def _key(p: WritersPoint) -> tuple[str, int, int, int, str]:
    return (p.requested.label, p.writers, p.steps_per_commit, p.payload_bytes, p.begin)


def compare_rows(a: Report, b: Report) -> tuple[list[list[str]], list[str], list[str]]:
    """The concurrent-writers points of two reports side by side (same configuration,
    writers, steps, payload and begin): [point, commits/s A, B, B/A, p99 A, B, oldest wait
    p99 over time A, B] per point both measured, and the names only one of them did.
    Figures only: a point is one window with no rounds, so nothing here is a test."""
    pa, pb = {_key(p): p for p in a.writers}, {_key(p): p for p in b.writers}
    rows = []
    for k, p in pa.items():
        q = pb.get(k)
        if q is None:
            continue
        x, y = p.summary, q.summary
        rows.append(
            [
                p.name,
                f"{x.commits_per_s:,.0f}",
                f"{y.commits_per_s:,.0f}",
                f"{y.commits_per_s / x.commits_per_s:.2f}x" if x.commits_per_s else "-",
                fmt_ns(x.p99_interval.estimate_ns),
                fmt_ns(y.p99_interval.estimate_ns),
                fmt_ns(x.oldest_wait_p99_ns),
                fmt_ns(y.oldest_wait_p99_ns),
            ]
        )
    only_a = [p.name for k, p in pa.items() if k not in pb]
    only_b = [p.name for k, p in pb.items() if k not in pa]
    return rows, only_a, only_b


#: Headers of :func:`compare_rows`.
COMPARE_HEADERS = (
    "configuration",
    "commits/s A",
    "commits/s B",
    "B/A",
    "p99 A",
    "p99 B",
    "oldest A",
    "oldest B",
)
#: What the gate says of concurrent-writers points.
NOT_GATED = (
    "concurrent-writers points are shown, not gated: each is one window of one run, with no "
    "rounds to judge a change by"
)
