"""A fleet: many reports of the same configurations, grouped by host, disk model and kernel,
and sorted by one configuration's p99 (``fsyncbench compare DIR``).

A group's figure is the median over its reports of each report's own p50 and p99. Its
spread is what a reader can defend: with one report, that report's own 95 % interval of
the p99 (which allows for samples that move together in time); with several, the lowest and
highest p99 among them, i.e. the run-to-run spread itself. On this project's Firecracker VM
the p99 of back-to-back runs differed by 1.5-2x, more than one run's interval shows
(README, "How far to trust the intervals"), so several reports per group say more than one.

Verdicts are never averaged: a group whose reports disagree shows every verdict with its
count ("mixed: honest_flush 2, unverifiable 1").
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.fmt import fmt_bounds, fmt_interval, fmt_ns
from fsyncbench.jsonable import to_jsonable
from fsyncbench.model import Report, Result
from fsyncbench.report.document import Cell, Document, Paragraph, Section, Table
from fsyncbench.report.redact import REDACTED_HOST
from fsyncbench.report.vocabulary import (
    LOSES_FLUSHES,
    NOT_DURABLE,
    NOT_STATED,
    PROMISE_HEADER,
    promise,
)

#: The configuration a fleet is sorted by when none is named: the durable WAL setup an
#: agent journal would use.
DEFAULT_FLEET_CONFIG = "wal/full"
#: What reports can be grouped by (``--group-by``), in column order.
GROUP_FIELDS = ("host", "disk", "kernel", "dir")
#: The grouping when none is asked for.
DEFAULT_GROUP_BY = ("host", "disk", "kernel")
#: ``--group-by report``: no grouping, one row per report.
NO_GROUPING = "report"
#: Path verdicts that mean an acknowledged flush may not be on stable media.
_RISKY = LOSES_FLUSHES


@dataclass(frozen=True)
class FleetRow:
    """One report in a fleet: its ``label`` (file name, or path where names repeat), the
    ``result`` of the fleet's configuration, the report's ``path_verdict``, and the
    configuration's own verdict and durability (None: the report judged none for it)."""

    label: str
    report: Report
    result: Result
    path_verdict: str
    config_verdict: str | None
    config_durable: bool | None


@dataclass(frozen=True)
class FleetGroup:
    """Reports that share the values of the grouping fields.

    ``key``: (field, value) for each field grouped by (:data:`GROUP_FIELDS`; empty with no
    grouping). ``rows``: its reports, fastest p99 first. ``p50_ns``/``p99_ns``: the median
    over its reports of each report's p50/p99 (ns). ``p99_low_ns``/``p99_high_ns``: with one
    report, its own 95 % interval of the p99 (both None where it has none); with more, the
    lowest and highest report p99 (ns)."""

    key: tuple[tuple[str, str], ...]
    rows: tuple[FleetRow, ...]
    p50_ns: float
    p99_ns: float
    p99_low_ns: float | None
    p99_high_ns: float | None

    @property
    def spread(self) -> str:
        """ "ci" (one report: its own interval) or "range" (several: lowest to highest)."""
        return "ci" if len(self.rows) == 1 else "range"


def _disks(report: Report) -> str:
    """The disk models (names where no model is known) under the directory, sorted, so the
    order the kernel listed them in does not split a group; "-" where no block device holds
    it (tmpfs, a network filesystem)."""
    disks = report.host.target.disks
    return " + ".join(sorted(d.model or d.name for d in disks)) or "-"


def _kernel(report: Report) -> str:
    h = report.host
    return f"{h.os_name} {h.os_release}".strip() or "?"


def _fs(report: Report) -> str:
    m = report.host.target.mount
    return m.fs_type if m else "?"


def _vm(report: Report) -> str:
    virt = report.host.virtualization.virtualized
    return "yes" if virt else ("no" if virt is False else "?")


def _dir(row: FleetRow) -> str:
    """The directory the report file lies in, relative to the directory compared (ansible's
    fetch names it after the inventory host); "." at its top or for a file given alone."""
    parent = row.label.rpartition("/")[0]
    return parent or "."


#: The value of each grouping field of a row.
FACETS: dict[str, Callable[[FleetRow], str]] = {
    "host": lambda row: row.report.host.hostname or "?",
    "disk": lambda row: _disks(row.report),
    "kernel": lambda row: _kernel(row.report),
    "dir": _dir,
}


def parse_group_by(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``--group-by``: a comma list of :data:`GROUP_FIELDS` (any order, case-insensitive;
    returned in column order), or ``report`` alone for one row per report (returns ()).
    None: :data:`DEFAULT_GROUP_BY`. Raises FsyncbenchError for another name."""
    if text is None:
        return DEFAULT_GROUP_BY
    parts = text.split(",") if isinstance(text, str) else [p for t in text for p in t.split(",")]
    names = {p.strip().lower() for p in parts if p.strip()}
    if names == {NO_GROUPING}:
        return ()
    if NO_GROUPING in names:
        raise FsyncbenchError(
            f"--group-by {NO_GROUPING} (one row per report) cannot be combined with fields"
        )
    unknown = sorted(names - set(GROUP_FIELDS))
    if unknown or not names:
        raise FsyncbenchError(
            f"--group-by takes a comma list of {', '.join(GROUP_FIELDS)}, or {NO_GROUPING} "
            f"for one row per report, not {','.join(unknown) or repr(text)}"
        )
    return tuple(f for f in GROUP_FIELDS if f in names)


def fleet_config(reports: Sequence[Report], requested: str | None) -> str:
    """The configuration to sort a fleet by: ``requested`` (must be in every report), else
    wal/full when every report has it, else the first syncing commit they share.
    Raises FsyncbenchError."""
    from fsyncbench.report.compare import common_names

    common = common_names(reports)
    if requested:
        match = next((n for n in common if n.lower() == requested.lower()), None)
        if match is None:
            raise FsyncbenchError(
                f"configuration {requested!r} is not in every report (in all of them: "
                f"{', '.join(common) or 'none'})"
            )
        return match
    if DEFAULT_FLEET_CONFIG in common:
        return DEFAULT_FLEET_CONFIG
    first = {r.name: r for r in reports[0].results}
    for kind in ("commit", "flush"):
        for name in common:
            if first[name].kind == kind and first[name].primitive != "none":
                return name
    if common:
        return common[0]
    raise FsyncbenchError("the reports have no configuration in common")


def fleet(reports: Sequence[Report], labels: Sequence[str], config: str) -> list[FleetRow]:
    """One row per report, fastest p99 of ``config`` first."""
    rows = []
    for rep, label in zip(reports, labels):
        result = next(r for r in rep.results if r.name == config)
        v = next((v for v in rep.verdict.results if v.subject == config), None)
        rows.append(
            FleetRow(
                label,
                rep,
                result,
                rep.verdict.path_verdict,
                v.path_verdict if v else None,
                v.config_durable if v else None,
            )
        )
    rows.sort(key=lambda row: row.result.summary.p99_ns)
    return rows


def group(rows: Sequence[FleetRow], by: Sequence[str]) -> list[FleetGroup]:
    """``rows`` in groups sharing the values of the fields ``by`` (():: one group per
    report), fastest group p99 first (ties: by key, then label)."""
    buckets: dict[tuple[tuple[str, str], ...], list[FleetRow]] = {}
    for i, row in enumerate(rows):
        key = tuple((f, FACETS[f](row)) for f in by) if by else (("#", str(i)),)
        buckets.setdefault(key, []).append(row)
    groups = []
    for key, members in buckets.items():
        members.sort(key=lambda r: (r.result.summary.p99_ns, r.label))
        p99s = [r.result.summary.p99_ns for r in members]
        if len(members) == 1:
            ci = members[0].result.summary.p99_ci_ns
            low, high = (ci[0], ci[1]) if ci is not None else (None, None)
        else:
            low, high = min(p99s), max(p99s)
        groups.append(
            FleetGroup(
                key if by else (),
                tuple(members),
                float(statistics.median(r.result.summary.p50_ns for r in members)),
                float(statistics.median(p99s)),
                low,
                high,
            )
        )
    groups.sort(key=lambda g: (g.p99_ns, g.key, g.rows[0].label))
    return groups


def _tally(values: Sequence[str]) -> str:
    """One value, or every value with its count: ``mixed: a 2, b 1``."""
    counts = Counter(values)
    if len(counts) == 1:
        return values[0]
    return "mixed: " + ", ".join(f"{v} {n}" for v, n in counts.most_common())


def _durable(row: FleetRow) -> str:
    return promise(row.config_durable, row.result, row.report.host.os_name)


def _tone(values: Sequence[str]) -> str:
    if any(v in _RISKY or v in (NOT_DURABLE, NOT_STATED) for v in values):
        return "bad"
    return "caution" if len(set(values)) > 1 else ""


def _spread(g: FleetGroup) -> str:
    if g.spread == "range":
        assert g.p99_low_ns is not None and g.p99_high_ns is not None
        return f"{fmt_bounds((g.p99_low_ns, g.p99_high_ns))} seen in {len(g.rows)} reports"
    s = g.rows[0].result.summary
    text = fmt_interval(s.p99_ci_ns, s.p99_interval)
    return text + " (its 95% CI)" if s.p99_ci_ns is not None else text


#: Columns of the group table that describe a group's storage, beside the grouping fields.
_SHOWN = ("host", "disk", "kernel")


def _group_table(groups: Sequence[FleetGroup], config: str, by: Sequence[str]) -> Table:
    shown = list(_SHOWN) + (["dir"] if "dir" in by else [])
    label = [] if by else ["report"]
    headers = ["#", *label, *shown, "fs", "VM", "reports", "n (sum)", "p50", "p99"]
    headers += ["p99 spread", f"{config} verdict", PROMISE_HEADER, "path verdict"]
    first_num = 1 + len(label) + len(shown) + 2
    rows = []
    for i, g in enumerate(groups, start=1):
        reps = [r.report for r in g.rows]
        facets = [_tally([FACETS[f](r) for r in g.rows]) for f in shown]
        path = [r.path_verdict for r in g.rows]
        conf = [r.config_verdict or "-" for r in g.rows]
        durable = [_durable(r) for r in g.rows]
        rows.append(
            (
                Cell(str(i)),
                *(Cell(g.rows[0].label) for _ in label),
                *(Cell(f) for f in facets),
                Cell(_tally([_fs(rep) for rep in reps])),
                Cell(_tally([_vm(rep) for rep in reps])),
                Cell(str(len(g.rows))),
                Cell(str(sum(r.result.summary.count for r in g.rows))),
                Cell(fmt_ns(g.p50_ns)),
                Cell(fmt_ns(g.p99_ns)),
                Cell(_spread(g)),
                Cell(_tally(conf), _tone(conf)),
                Cell(_tally(durable), _tone(durable)),
                Cell(_tally(path), _tone(path)),
            )
        )
    numeric = frozenset({0, *range(first_num, first_num + 4)})
    return Table(tuple(headers), tuple(rows), numeric)


def _report_table(groups: Sequence[FleetGroup]) -> Table:
    rows = []
    for i, g in enumerate(groups, start=1):
        for r in g.rows:
            s = r.result.summary
            rows.append(
                (
                    Cell(str(i)),
                    Cell(r.label),
                    Cell(r.report.created_utc),
                    Cell(str(s.count)),
                    Cell(fmt_ns(s.p50_ns)),
                    Cell(fmt_ns(s.p99_ns)),
                    Cell(fmt_interval(s.p99_ci_ns, s.p99_interval)),
                    Cell(r.path_verdict, _tone([r.path_verdict])),
                )
            )
    return Table(
        ("group", "report", "created (UTC)", "n", "p50", "p99", "p99 95% CI", "path verdict"),
        tuple(rows),
        frozenset({0, 3, 4, 5}),
    )


def _unordered(groups: Sequence[FleetGroup]) -> list[str]:
    """Neighbouring rows ("1-2") whose p99 spreads overlap, or one of which has none: the
    order between them is not established by the figures."""
    out = []
    for i, (a, b) in enumerate(zip(groups, groups[1:]), start=1):
        if a.p99_high_ns is None or b.p99_low_ns is None or a.p99_high_ns >= b.p99_low_ns:
            out.append(f"{i}-{i + 1}")
    return out


def fleet_notes(
    groups: Sequence[FleetGroup],
    by: Sequence[str],
    duplicates: Sequence[tuple[str, str]] = (),
    left_out: Sequence[tuple[str, str]] = (),
    rejudged: Sequence[tuple[str, str]] = (),
) -> list[Paragraph]:
    """What a reader must know to read the fleet: how its figures are made, which orderings
    the figures do not establish, groups whose reports disagree (and in what besides the
    verdict), redacted hostnames grouped together, duplicate reports read once, and the
    reports ``left_out`` (label, kind) because they hold no latency (crash, powerloss), and
    the reports ``rejudged`` (label, what it recorded and what it is judged now) whose
    recorded verdict this version's judge and device knowledge do not repeat. The same notes
    go to every format, JSON included."""
    out = [
        Paragraph(
            "p50 and p99 are the median over the group's reports of each report's own "
            "figure; n is the samples of all of them. p99 spread: for one report, its own 95 % "
            "interval (from its slices); for several, the lowest and highest of their p99s. "
            "That range is what was seen, not a bound: a next run can fall outside it, and "
            "with few reports it is narrower than the spread between runs. Verdicts are each "
            "report's own, never averaged: a group whose reports disagree lists each verdict "
            "with its count.",
            "How to read it.",
        )
    ]
    unordered = _unordered(groups)
    if unordered:
        out.append(
            Paragraph(
                f"Rows {', '.join(unordered)}: their p99 spreads overlap or one has none, so "
                "the figures do not establish which is faster; the order there is by the "
                "median alone.",
                "Not a ranking everywhere.",
                tone="caution",
            )
        )
    for i, g in enumerate(groups, start=1):
        verdicts = {(r.path_verdict, r.config_verdict) for r in g.rows}
        if len(verdicts) < 2:
            continue
        differ = [
            name
            for name, values in (
                ("host", [r.report.host.hostname for r in g.rows]),
                ("disk", [_disks(r.report) for r in g.rows]),
                ("kernel", [_kernel(r.report) for r in g.rows]),
                ("filesystem", [_fs(r.report) for r in g.rows]),
                ("measured directory", [r.report.host.target.path for r in g.rows]),
                (
                    "mount options",
                    [
                        ",".join(r.report.host.target.mount.options)
                        if r.report.host.target.mount
                        else "?"
                        for r in g.rows
                    ],
                ),
            )
            if len(set(values)) > 1
        ]
        where = (
            f"they differ in {', '.join(differ)} as well"
            if differ
            else "nothing in the host summary differs, so the same storage gave different "
            "evidence at different times"
        )
        out.append(
            Paragraph(
                f"Group {i}: its {len(g.rows)} reports disagree on a verdict; {where}. Read "
                "each report (`fsyncbench show REPORT`) for the evidence that decided it.",
                "Verdicts differ within a group.",
                tone="caution",
            )
        )
    if "host" in by and any(
        len({r.label for r in g.rows}) > 1
        and any(r.report.host.hostname == REDACTED_HOST for r in g.rows)
        for g in groups
    ):
        out.append(
            Paragraph(
                f"Some reports were redacted (host {REDACTED_HOST}): reports of different "
                "hosts may share a row. `--group-by dir` groups by the directory each report "
                "lies in (ansible's fetch names it after the host).",
                "Redacted hostnames.",
                tone="caution",
            )
        )
    if duplicates:
        pairs = "; ".join(f"{dup} (as {kept})" for dup, kept in duplicates)
        out.append(
            Paragraph(
                f"Read once: {pairs}. Same host, directory, kind, time and figures: the same run.",
                "Duplicate reports.",
            )
        )
    if rejudged:
        said = "; ".join(f"{label}: {what}" for label, what in rejudged)
        out.append(
            Paragraph(
                f"Each report is judged again from its recorded facts with this version's "
                f"rules and device knowledge; these recorded another verdict: {said}.",
                "Verdicts judged again.",
                tone="caution",
            )
        )
    if left_out:
        named = "; ".join(f"{label} ({kind})" for label, kind in left_out)
        out.append(
            Paragraph(
                f"Left out: {named}. A crash or powerloss report holds no commit latency to "
                "compare (`fsyncbench show` prints it).",
                "Not latency reports.",
            )
        )
    return out


def describe_fleet(
    groups: Sequence[FleetGroup],
    config: str,
    by: Sequence[str],
    tool_version: str,
    duplicates: Sequence[tuple[str, str]] = (),
    left_out: Sequence[tuple[str, str]] = (),
    rejudged: Sequence[tuple[str, str]] = (),
) -> Document:
    """The :class:`Document` of a fleet: the groups (fastest p99 of ``config`` first),
    the notes of :func:`fleet_notes`, and every report with its own figures."""
    n_reports = sum(len(g.rows) for g in groups)
    grouping = f"grouped by {', '.join(by)}" if by else "one row per report"
    return Document(
        f"fsyncbench fleet: {n_reports} report{'s' * (n_reports != 1)} sorted by p99 of {config}",
        f"fsyncbench {tool_version}, {grouping}, {len(groups)} "
        f"row{'s' * (len(groups) != 1)}, fastest median first",
        (
            Section(
                "fleet",
                f"p99 of {config} by {', '.join(by) or 'report'}",
                (
                    _group_table(groups, config, by),
                    *fleet_notes(groups, by, duplicates, left_out, rejudged),
                ),
            ),
            Section("fleet-reports", "The reports", (_report_table(groups),)),
        ),
    )


def fleet_jsonable(
    groups: Sequence[FleetGroup],
    config: str,
    by: Sequence[str],
    duplicates: Sequence[tuple[str, str]] = (),
    left_out: Sequence[tuple[str, str]] = (),
    rejudged: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """A fleet as JSON-ready data (durations in ns): ``groups``, fastest first, each with
    its key, figures, spread and its ``reports`` (the rows of :func:`fleet`); ``notes``
    (:func:`fleet_notes`, as text), ``duplicates`` read once and the reports ``left_out``
    (crash, powerloss: no latency)."""
    out = []
    for rank, g in enumerate(groups, start=1):
        reports = []
        for r in g.rows:
            h = r.report.host
            s = r.result.summary
            reports.append(
                {
                    "label": r.label,
                    "created_utc": r.report.created_utc,
                    "hostname": h.hostname,
                    "os": _kernel(r.report),
                    "fs": _fs(r.report) if h.target.mount else None,
                    "disks": [d.model or d.name for d in h.target.disks],
                    "virtualized": h.virtualization.virtualized,
                    "n": s.count,
                    "p50_ns": s.p50_ns,
                    "p99_ns": s.p99_ns,
                    "p99_ci_ns": list(s.p99_ci_ns) if s.p99_ci_ns else None,
                    "p99_interval": to_jsonable(s.p99_interval) if s.p99_interval else None,
                    "config_verdict": r.config_verdict,
                    "config_durable": r.config_durable,
                    "path_verdict": r.path_verdict,
                }
            )
        out.append(
            {
                "rank": rank,
                "key": dict(g.key),
                "p50_ns": g.p50_ns,
                "p99_ns": g.p99_ns,
                "p99_spread": g.spread,
                "p99_low_ns": g.p99_low_ns,
                "p99_high_ns": g.p99_high_ns,
                "reports": reports,
            }
        )
    notes = [
        (f"{p.lead} " if p.lead else "") + p.text.replace("`", "")
        for p in fleet_notes(groups, by, duplicates, left_out, rejudged)
    ]
    return {
        "kind": "fleet",
        "config": config,
        "group_by": list(by),
        "groups": out,
        "notes": notes,
        "duplicates": [{"label": d, "same_as": k} for d, k in duplicates],
        "left_out": [{"label": label, "kind": kind} for label, kind in left_out],
    }
