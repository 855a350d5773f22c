"""Comparing reports in the API (:mod:`fsyncbench.api`): :func:`compare`, two reports side by
side or a fleet of them (:mod:`fsyncbench.report.compare`, :mod:`fsyncbench.report.fleet`),
with the regression check against the first (:mod:`fsyncbench.report.regression`) and a
head to head of two configurations; it returns a :class:`Comparison`, which
:func:`fsyncbench.api.reports.render` lays out."""

from __future__ import annotations

import dataclasses
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsyncbench import options
from fsyncbench.api.common import PathLike, judged_now
from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import EXPERIMENT_KINDS, Report
from fsyncbench.options import Outputs
from fsyncbench.report import store

if TYPE_CHECKING:  # for annotations only: each is imported where it is used
    from fsyncbench.measure.headtohead import RatioInterval
    from fsyncbench.report.compare import PairComparison
    from fsyncbench.report.fleet import FleetGroup, FleetRow
    from fsyncbench.report.regression import Regression, RegressionGate


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` found. Two reports: ``pair`` (host differences, each
    configuration's p50 and p99 side by side with intervals and Holm-adjusted significance).
    A fleet (a directory, three or more reports, or ``group_by`` given): ``fleet`` rows, one
    per report, and ``groups`` (:class:`fsyncbench.report.fleet.FleetGroup`) sharing the
    fields ``group_by``, sorted by the p99 of ``config``. With a regression check
    (``limit_pct`` set): ``gate`` (:class:`fsyncbench.report.regression.RegressionGate`), the ``regressions`` (:class:`fsyncbench.report.regression.Regression`)
    against the first report, the configurations ``not_checked`` and the ``lines`` that say
    so. ``left_out``: the (label, kind) of crash and powerloss reports a fleet did not read
    (they hold no latency). ``rejudged``: (label, what it recorded -> what it is judged now)
    of each saved report whose recorded verdict this version does not repeat."""

    reports: tuple[Report, ...]
    labels: tuple[str, ...]
    pair: PairComparison | None = None
    fleet: tuple[FleetRow, ...] = ()
    config: str | None = None
    limit_pct: float | None = None
    regressions: tuple[Regression, ...] = ()
    not_checked: tuple[str, ...] = ()
    gate: RegressionGate | None = None
    lines: tuple[str, ...] = ()
    groups: tuple[FleetGroup, ...] = ()
    group_by: tuple[str, ...] = ()
    duplicates: tuple[tuple[str, str], ...] = ()
    left_out: tuple[tuple[str, str], ...] = ()
    head_to_head: tuple[RatioInterval, ...] = ()
    rejudged: tuple[tuple[str, str], ...] = ()


def _head_to_head(
    loaded: Sequence[Report], labels: Sequence[str], names: tuple[str, ...], fleet: bool
) -> tuple[RatioInterval, ...]:
    """``compare A B --vs X,Y``: A's X against B's Y at p50 and p99 (unpaired)."""
    from fsyncbench.measure.headtohead import unpaired_ratio

    if fleet or len(loaded) != 2:
        raise FsyncbenchError(
            "--vs sets a configuration of one report against one of another: give two reports"
        )
    found = []
    for rep, label, name in zip(loaded, labels, names):
        result = next((r for r in rep.results if r.kind == "commit" and r.name == name), None)
        if result is None:
            measured = ", ".join(r.name for r in rep.results if r.kind == "commit")
            raise FsyncbenchError(f"--vs: {label} did not measure {name}; it measured {measured}")
        found.append(result)
    return tuple(unpaired_ratio(found[0], found[1], q) for q in (50.0, 99.0))


def _report_inputs(
    reports: Sequence[PathLike | Report],
) -> tuple[list[Path | Report], list[str], bool]:
    """Each argument of compare, directories expanded to the report files under them: the
    inputs (a file found again under a directory is read once), their labels (file name;
    under a directory, the path inside it; full paths where those repeat) and whether a
    directory was given. Raises FsyncbenchError for a path that does not exist."""
    items: list[Path | Report] = []
    short: list[str] = []
    seen: set[Path] = set()
    any_dir = False
    for r in reports:
        if isinstance(r, Report):
            items.append(r)
            short.append(store.report_basename(r))
            continue
        path = Path(r)
        if not path.exists():
            raise FsyncbenchError(f"report {path} does not exist")
        if not path.is_dir():
            # a file named twice is compared with itself (an A/A check), as asked
            seen.add(path.resolve())
            items.append(path)
            short.append(path.name)
            continue
        any_dir = True
        for f in store.find_reports(path):
            real = f.resolve()
            if real not in seen:  # a report found again under a directory: once
                seen.add(real)
                items.append(f)
                short.append(f.relative_to(path).as_posix())
    if len(set(short)) == len(short):
        return items, short, any_dir
    full = [store.report_basename(i) if isinstance(i, Report) else str(i) for i in items]
    return items, full, any_dir


def _of_kind(
    reports: list[Report], labels: list[str], kind: str | None
) -> tuple[list[Report], list[str]]:
    """Only the reports of ``kind`` (None: all, which must then be of one kind: a directory
    where run and audit both saved reports is named with what to choose)."""
    if kind is None:
        kinds = Counter(r.kind for r in reports)
        if len(kinds) > 1:
            listed = ", ".join(f"{k} ({n})" for k, n in kinds.most_common())
            raise FsyncbenchError(
                f"the reports are of kinds {listed}, which measured different things: "
                f"compare one kind, e.g. --kind {kinds.most_common(1)[0][0]}"
            )
        return reports, labels
    kept = [(r, label) for r, label in zip(reports, labels) if r.kind == kind.lower()]
    if not kept:
        found = ", ".join(sorted({r.kind for r in reports}))
        raise FsyncbenchError(f"no report of kind {kind!r} (found: {found})")
    return [r for r, _ in kept], [label for _, label in kept]


def _once(
    reports: list[Report], labels: list[str]
) -> tuple[list[Report], list[str], list[tuple[str, str]]]:
    """A fleet's reports with copies of one run (same host, measured directory, kind,
    creation time and figures: :func:`fsyncbench.report.compare.run_key`) read once, and
    (copy, the label kept) for each dropped."""
    from fsyncbench.report.compare import run_key

    seen: dict[tuple[object, ...], str] = {}
    kept: list[tuple[Report, str]] = []
    dropped: list[tuple[str, str]] = []
    for rep, label in zip(reports, labels):
        key = run_key(rep)
        if key in seen:
            dropped.append((label, seen[key]))
            continue
        seen[key] = label
        kept.append((rep, label))
    return [r for r, _ in kept], [label for _, label in kept], dropped


def compare(
    reports: Sequence[PathLike | Report],
    *,
    configs: str | Sequence[str] | None = None,
    fail_on_regression: float | None = None,
    outputs: Outputs | None = None,
    group_by: str | Sequence[str] | None = None,
    kind: str | None = None,
    accept_disturbed: bool = False,
    vs: str | Sequence[str] | None = None,
) -> Comparison:
    """``fsyncbench compare``: reports (files, directories of them searched recursively for
    ``*.json``, or Report objects; the first is the baseline, each labelled by its file
    name, or its path where names repeat). Two reports side by side; a fleet when a
    directory, three or more reports, or ``group_by`` is given. ``configs``: the
    configuration to sort a fleet by (default wal/full), or those the regression check looks
    at. ``group_by``: a fleet's grouping fields, a comma list of host, disk, kernel (default
    all three; also dir: the directory each report lies in) or "report" for one row per
    report. ``kind``: only reports of this kind (run, audit; a directory often holds both).
    Copies of one run (same host, directory, kind, time and figures) are read once in a
    fleet and named in ``duplicates``; without ``kind`` a fleet leaves out crash and
    powerloss reports (no latency; named in ``left_out``), and two reports of which one is
    such a report are refused.
    ``fail_on_regression``: a percentage; a
    configuration whose p99 is more than that much worse than in the baseline, and
    significantly so, is a regression (the baseline must be a file, not a directory). A
    report whose rounds stayed disturbed (:mod:`fsyncbench.measure.disturbance`) cannot be
    told from: its pairs' statistics are "cannot tell", naming the disturbance, unless
    ``accept_disturbed``. ``vs`` ("A,B" or two labels): two reports only, the first's
    configuration A against the second's B, head to head (``head_to_head``: the p50 and
    p99 ratios with Welch's 95 % intervals over the two runs' rounds,
    :func:`fsyncbench.measure.headtohead.unpaired_ratio`). Raises FsyncbenchError."""
    from fsyncbench.judge import gates as checks
    from fsyncbench.report import compare as comparing
    from fsyncbench.report import fleet as fleets

    if not isinstance(reports, Sequence) or isinstance(reports, (str, bytes)):
        raise FsyncbenchError(
            f"reports must be a sequence of paths or Reports, got {options.given(reports)}"
        )
    for i, r in enumerate(reports):
        if not isinstance(r, (Report, str, os.PathLike)):
            raise FsyncbenchError(
                f"reports[{i}] must be a path or a Report, got {options.given(r)}"
            )
    options.check_list(configs, "configs")
    options.check_list(group_by, "group_by")
    options.check_instance(outputs, Outputs, "outputs")
    by = fleets.parse_group_by(group_by)
    if not reports:
        raise FsyncbenchError("compare needs at least two reports, or a directory of them")
    limit = None if fail_on_regression is None else options.percent(fail_on_regression)
    if limit is not None and not isinstance(reports[0], Report) and Path(reports[0]).is_dir():
        raise FsyncbenchError(
            f"--fail-on-regression compares against a baseline report, and {reports[0]} is a "
            "directory: give the baseline report file first, then the directory"
        )
    items, labels, any_dir = _report_inputs(reports)
    is_fleet = any_dir or len(items) > 2 or group_by is not None
    if len(items) < 2 and not (is_fleet and limit is None):
        raise FsyncbenchError("compare needs at least two reports")
    if outputs is not None:
        outputs.check()
    # a saved report's verdict as this version judges it (the fleet's verdict column)
    read = [r if isinstance(r, Report) else store.load_report(r) for r in items]
    loaded = [r if isinstance(item, Report) else judged_now(r) for r, item in zip(read, items)]
    rejudged = tuple(
        (label, f"{a.verdict.path_verdict} -> {b.verdict.path_verdict}")
        for a, b, label in zip(read, loaded, labels)
        if a.verdict.path_verdict != b.verdict.path_verdict
    )
    left_out: list[tuple[str, str]] = []
    if is_fleet and kind is None:  # a report directory holds crash and powerloss reports too
        # never the baseline of a regression check: that one is refused below
        out_of = [
            r.kind in EXPERIMENT_KINDS and not (limit is not None and i == 0)
            for i, r in enumerate(loaded)
        ]
        left_out = [(lb, r.kind) for r, lb, out in zip(loaded, labels, out_of) if out]
        kept = [(r, lb) for r, lb, out in zip(loaded, labels, out_of) if not out]
        if not kept:
            raise FsyncbenchError(
                f"no latency report among the {len(loaded)} given: crash and powerloss reports "
                "hold no latency to compare"
            )
        loaded, labels = [r for r, _ in kept], [lb for _, lb in kept]
    if kind is not None or is_fleet:  # two files of two kinds: check_comparable names them
        given = labels
        loaded, labels = _of_kind(loaded, labels, kind)
        if len(loaded) < 2 and not is_fleet:
            dropped = ", ".join(lb for lb in given if lb not in labels)
            raise FsyncbenchError(
                f"compare needs two reports of kind {kind}, and {dropped} is not one"
            )
    duplicates: list[tuple[str, str]] = []
    if is_fleet:
        loaded, labels, duplicates = _once(loaded, labels)
    for rep, label in zip(loaded, labels):
        if not rep.results:
            raise FsyncbenchError(
                f"{label} holds no latency results (a {rep.kind} report): nothing to compare"
            )
    if len(loaded) > 1:
        comparing.check_comparable(loaded, labels)
    wanted = checks.parse_names([configs] if isinstance(configs, str) else configs)
    if wanted:
        checks.check_names(wanted, comparing.common_names(loaded), "every report has")
    out = Comparison(tuple(loaded), tuple(labels))
    head = options.vs_names(vs, same=True)
    if head:
        out = dataclasses.replace(out, head_to_head=_head_to_head(loaded, labels, head, is_fleet))
    if not is_fleet:
        pair = comparing.compare_pair(loaded[0], loaded[1], names=wanted)
        pairs = [(labels[1], pair)]
        out = dataclasses.replace(out, pair=pair)
    else:
        if len(wanted) > 1:
            raise FsyncbenchError("a fleet is sorted by one configuration: give one --config")
        config = fleets.fleet_config(loaded, wanted[0] if wanted else None)
        rows = fleets.fleet(loaded, labels, config)
        out = dataclasses.replace(
            out,
            fleet=tuple(rows),
            config=config,
            groups=tuple(fleets.group(rows, by)),
            group_by=by,
            duplicates=tuple(duplicates),
            left_out=tuple(left_out),
            rejudged=tuple(x for x in rejudged if x[0] in labels),
        )
        pairs = (
            []
            if limit is None
            else [
                (label, comparing.compare_pair(loaded[0], rep, names=wanted))
                for rep, label in zip(loaded[1:], labels[1:])
            ]
        )
    if limit is None:
        return out
    if not isinstance(accept_disturbed, bool):
        raise FsyncbenchError(
            f"accept_disturbed must be True or False, got {options.given(accept_disturbed)}"
        )
    from fsyncbench.measure import disturbance
    from fsyncbench.report import regression
    from fsyncbench.report import writers as writers_view

    by_label = dict(zip(labels, loaded))
    base_stayed = disturbance.stayed_phrase(loaded[0].activity)
    accepted = [f"{labels[0]} {base_stayed}"] if base_stayed and accept_disturbed else []
    untestable: dict[str, str] = {}
    disturbed: dict[str, str] = {}
    missing: dict[str, list[tuple[str, str, str]]] = {}
    for label, _ in pairs:
        cand = by_label[label]
        stayed = disturbance.stayed_phrase(cand.activity)
        if stayed and accept_disturbed:
            accepted.append(f"{label} {stayed}")
        elif stayed:
            disturbed[label] = stayed
        differs = regression.run_differences(loaded[0], cand)
        if comparing.run_key(cand) == comparing.run_key(loaded[0]):
            untestable[label] = f"{label} is the same run as {labels[0]}: compare two runs"
        elif differs:
            untestable[label] = (
                f"{label} was measured otherwise than {labels[0]} ({'; '.join(differs)}): "
                "re-run it with the baseline's options"
            )
        theirs = {r.name for r in cand.results}
        missing[label] = [
            (r.kind, r.name, r.primitive) for r in loaded[0].results if r.name not in theirs
        ]
    gate = regression.check(
        pairs,
        limit,
        labels[0],
        wanted,
        untestable,
        missing,
        "" if accept_disturbed else base_stayed,
        disturbed,
    )
    if not gate.statistics:
        raise FsyncbenchError(
            f"--fail-on-regression found no configuration in common with {labels[0]} to "
            "check: name the configurations to check with --config"
        )
    untold = gate.untold
    return dataclasses.replace(
        out,
        limit_pct=limit,
        gate=gate,
        regressions=gate.regressions,
        not_checked=tuple(
            f"{s.name} p{s.percentile:g} ({s.reason})"
            + (f" in {s.candidate}" if len(pairs) > 1 else "")
            for s in untold
        ),
        lines=tuple(_regression_lines(gate, pairs, accepted))
        + (
            (writers_view.NOT_GATED[0].upper() + writers_view.NOT_GATED[1:] + ".",)
            if any(r.writers for r in loaded)
            else ()
        ),
    )


def _regression_lines(
    gate: Any,
    pairs: Sequence[tuple[str, PairComparison]],
    accepted: Sequence[str] = (),
) -> list[str]:
    """The regression gate's lines (:mod:`fsyncbench.report.regression`): its answer first
    (how many statistics it checked, failed, passed, could not tell; the slowdowns it could
    have caught), then each regression, then what it could not tell and why."""
    from fsyncbench.fmt import fmt_ns
    from fsyncbench.measure import between
    from fsyncbench.report import compare as comparing
    from fsyncbench.report import regression, tables

    limit, baseline = gate.limit_pct, gate.baseline
    n = len(gate.statistics)
    failed, passed, untold = (
        gate.count(regression.REGRESSION),
        gate.count(regression.PASSED),
        gate.count(regression.CANNOT_TELL),
    )
    verdict = "REGRESSION" if failed else "CANNOT TELL" if untold else "PASSED"
    span = gate.detectable_range()
    power = (
        f"; the slowdowns it could have caught (4 times in 5): {span[0]:.2f}x to {span[1]:.2f}x"
        if span
        else ""
    )
    lines = [
        f"Gate {verdict} at --fail-on-regression {limit:g} % against {baseline}: {n} "
        f"statistic{'s' * (n != 1)} gated (p50 and p99), {failed} failed, {passed} passed, "
        f"{untold} cannot tell{power}."
    ]
    for label, pair in pairs:
        moved = tables.floor_moved_line(pair)
        if moved and any(r.candidate == label for r in gate.regressions):
            lines.append(f"{label}: {moved}")
    tested = sum(1 for s in gate.statistics if s.p_adjusted is not None)
    for r in gate.regressions:
        q = r.statistic
        assert q.ratio_ci is not None and q.ratio is not None  # tested, so it has both
        base = (
            f"{fmt_ns(q.a_ns)} in {r.baseline}"
            if q.baseline_runs <= 1 or q.baseline_ns is None
            else f"{fmt_ns(q.baseline_ns)} over {r.baseline} and its {q.baseline_runs - 1} "
            "earlier runs"
        )
        line = (
            f"REGRESSION {r.name} p{q.percentile:g}: {base} -> {fmt_ns(q.b_ns)} in "
            f"{r.candidate}: {q.ratio:.2f}x (95% CI [{q.ratio_ci[0]:.2f}, {q.ratio_ci[1]:.2f}], "
            f"{tables.basis_words(q)}), slower by more than {r.limit_pct:g} % and "
            f"significantly (one-sided, {comparing.ADJUSTMENT}-adjusted over the {tested} "
            f"statistics tested: p {r.p_adjusted:.2g})"
        )
        if q.ratio_ci[0] <= 1.0 + r.limit_pct / 100.0:
            line += (
                f"; its interval reaches below {1.0 + r.limit_pct / 100.0:.2f}x: that it is slower "
                "is shown, that it is slower by more than the limit is the estimate's"
            )
        lines.append(line)
    if untold:
        many = len(pairs) > 1

        def who(st: Any) -> str:
            return f" in {st.candidate}" if many else ""

        weak = [st for st in gate.untold if st.too_uncertain]
        if weak:
            lines.append(
                f"CANNOT TELL, too uncertain to see {limit:g} % (the slowdown each could have "
                "caught): "
                + ", ".join(
                    f"{st.name} p{st.percentile:g}{who(st)} {st.detectable_ratio:.2f}x"
                    if st.detectable_ratio < 100
                    else f"{st.name} p{st.percentile:g}{who(st)} {st.detectable_ratio:.2g}x"
                    for st in weak
                )
                + "."
            )
        by_reason: dict[str, list[str]] = {}
        for st in gate.untold:
            if st not in weak:
                by_reason.setdefault(st.reason or "no test", []).append(
                    f"{st.name} p{st.percentile:g}{who(st)}"
                )
        for reason, names in by_reason.items():
            lines.append(f"CANNOT TELL {', '.join(names)}: {reason}.")
        advice = "Not a pass (exit 4): each reason above says what is missing"
        if weak:
            worst = max(st.detectable_ratio for st in weak)
            advice += (
                f"; the uncertain ones would pass at --fail-on-regression "
                f"{math.ceil(100 * (worst - 1)):g} or more"
                if worst <= 10
                else "; no limit below 900 % would pass the uncertain ones"
            )
            if any(st.basis == between.BASIS_PAIR for st in weak):
                advice += (
                    ", or narrow them: keep 3 earlier runs of the same measurement in the "
                    "report directory the baseline is run from (it then records them)"
                )
            else:
                advice += ", or narrow them: measure both runs when the machine is quiet"
        lines.append(advice + ".")
    if accepted:
        lines.append("Judged although disturbed (--accept-disturbed): " + "; ".join(accepted) + ".")
    return lines
