"""The reports half of the API (:mod:`fsyncbench.api`): :func:`load`, :func:`save`,
:func:`write_file`, :func:`render`, :func:`gate` and :func:`compare`."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsyncbench import options
from fsyncbench.api.common import PathLike, redacted
from fsyncbench.errors import FsyncbenchError
from fsyncbench.jsonable import to_jsonable
from fsyncbench.model import (
    EXPERIMENT_KINDS,
    SCHEMA_VERSION,
    UNVERIFIABLE,
    Host,
    PowerlossResult,
    Report,
)
from fsyncbench.options import Gates, Outputs
from fsyncbench.report import store
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS

if TYPE_CHECKING:  # for annotations only: each is imported where it is used
    from fsyncbench.judge.gates import GateFailure
    from fsyncbench.measure.headtohead import RatioInterval
    from fsyncbench.report.compare import PairComparison
    from fsyncbench.report.fleet import FleetGroup, FleetRow
    from fsyncbench.report.regression import Regression, RegressionGate


def load(
    path: PathLike,
    *,
    redact: bool = False,
    gates: Gates | None = None,
    outputs: Outputs | None = None,
) -> Report:
    """``fsyncbench show``'s report: read and check a saved report file (run, audit,
    powercut, crash or powerloss; a newer schema raises "upgrade fsyncbench"), ``redact``-ed if asked. ``gates``'
    configurations must be in it; ``outputs`` must not overwrite it (both checked)."""
    options.check_path(path, "path")
    options.check_instance(gates, Gates, "gates")
    options.check_instance(outputs, Outputs, "outputs")
    path = Path(path)
    if outputs is not None:
        outputs.check(source=path)
    report = redacted(store.load_report(path), redact)
    if gates is not None:
        gates.check_configs([r.name for r in report.results])
    return report


def save(
    report: Report,
    report_dir: PathLike | None,
    *,
    html: bool = False,
    csv: PathLike | None = None,
    model_call_ms: float = DEFAULT_MODEL_CALL_MS,
    rendered: dict[str, str] | None = None,
    prometheus: PathLike | None = None,
) -> list[Path]:
    """Write ``<host>-<time>.json`` and ``.md`` (and ``.html``) under a name no other report
    holds in ``report_dir`` (created if needed; None: no report files), then the raw samples
    as CSV to ``csv`` (replaced if it exists, like fio's and hyperfine's output files), then
    the metrics for node_exporter's textfile collector to ``prometheus``
    (:func:`fsyncbench.report.prometheus.render_textfile`; replaced by rename, so the
    collector never reads half a file), all durably; returns the paths written.
    ``rendered``: texts already rendered, by format. All or nothing: on any failure (or
    Ctrl-C) the files written so far are removed (a report the metrics cannot be made of
    raises before anything is written)."""
    from fsyncbench.report import tables

    options.check_instance(report, Report, "report", optional=False)
    options.check_path(report_dir, "report_dir", optional=True)
    options.check_path(csv, "csv", optional=True)
    options.check_path(prometheus, "prometheus", optional=True)
    options.model_call_ms(model_call_ms)
    options.check_instance(rendered, dict, "rendered")
    metrics = None
    if prometheus is not None:
        from fsyncbench.report.prometheus import render_textfile

        metrics = render_textfile(report)
    out_dir = None if report_dir is None else store.prepare_output_dir(Path(report_dir))
    csv = None if csv is None else Path(csv)
    prometheus = None if prometheus is None else Path(prometheus)
    suffixes = (".json", ".md") + ((".html",) if html else ()) if out_dir is not None else ()
    paths: list[Path] = []
    if out_dir is not None:
        stem = store.claim_name(out_dir, store.report_basename(report), suffixes)
        paths = [stem.with_name(stem.name + suffix) for suffix in suffixes]
    done = rendered or {}
    texts = {
        suffix: (
            lambda fmt=fmt: (
                done[fmt] if fmt in done else render(report, fmt, model_call_ms=model_call_ms)
            )
        )
        for suffix, fmt in ((".json", "json"), (".md", "markdown"), (".html", "html"))
    }
    written: list[Path] = []
    try:
        for path, suffix in zip(paths, suffixes):
            store.write_durably(path, texts[suffix]())
            written.append(path)
        if csv is not None:
            store.write_durably(csv, tables.render_csv(report))
            written.append(csv)
        if prometheus is not None and metrics is not None:
            store.write_durably(prometheus, metrics)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        for path in paths:  # a name claimed but not yet written
            path.unlink(missing_ok=True)
        raise
    return [*paths, *(p for p in (csv, prometheus) if p is not None)]


def write_file(path: PathLike, text: str) -> None:
    """Atomically and durably replace the file ``path`` with ``text`` (``-o FILE``)."""
    options.check_path(path, "path")
    options.check_text(text, "text")
    store.write_durably(Path(path), text)


def render(
    result: object,
    fmt: str = "text",
    *,
    model_call_ms: float = DEFAULT_MODEL_CALL_MS,
    verbose: bool = False,
    vs: str | Sequence[str] | None = None,
) -> str:
    """``result`` as the CLI prints it in ``fmt``: a Report ("text", "markdown", "json",
    "html"; a powercut report through :func:`fsyncbench.powercut.view.render`, a crash
    report through :func:`fsyncbench.crash.view.describe`, others through
    :func:`fsyncbench.report.render`, JSON as saved); a Host ("text", "markdown", "json");
    a CrashExperiment or PowerLossExperiment (:func:`kill_matrix`; "text", "markdown",
    "html", and "json": its figures); a
    :class:`Comparison` ("text", "markdown", "json", "html"); a PowerlossResult (:func:`simulate_power_loss`: "text", "markdown",
    "json", "html"); a powercut WriterSummary or VerifyOutcome ("text", "json").
    ``model_call_ms``: the unit a durable
    commit is set against, in milliseconds. ``verbose``: a run or audit report as "text" is
    the bottom line and a compact table (:func:`fsyncbench.report.summary.summarize`) unless
    it is True (the whole report, as Markdown and HTML always are). ``vs``: two
    configurations of a run report to set head to head ("wal/full,truncate/full" or a
    sequence; default the run's own ``--vs``, else the recommended one against its nearest
    rival); FsyncbenchError when they are not two it measured."""
    from fsyncbench.report import tables

    options.model_call_ms(model_call_ms)
    if isinstance(result, Report):
        fmt = options.choice(fmt, options.REPORT_FORMATS, "--format")
        if fmt == "json":
            return store.report_to_json(result)
        if result.kind == "powercut":
            from fsyncbench.powercut import view

            return view.render(result, fmt)
        if result.crash is not None or result.crash_power_loss is not None:
            return _render_kill_matrix(result, fmt, model_call_ms)
        if result.kind == "powerloss" and result.powerloss is not None:
            return _render_powerloss(result.powerloss, fmt)
        from fsyncbench import report as reporting

        return reporting.render(result, fmt, model_call_ms, verbose, options.vs_names(vs))
    if isinstance(result, Comparison):
        return _render_comparison(result, options.choice(fmt, options.COMPARE_FORMATS, "--format"))
    if isinstance(result, Host):
        if options.choice(fmt, options.TABLE_FORMATS, "--format") == "json":
            return _json(to_jsonable(result))
        return tables.render_host(result, fmt)
    if isinstance(result, PowerlossResult):
        return _render_powerloss(result, options.choice(fmt, options.REPORT_FORMATS, "--format"))
    from fsyncbench.powercut.verify import VerifyOutcome
    from fsyncbench.powercut.writer import WriterSummary, format_summary

    if isinstance(result, VerifyOutcome):
        fmt = options.choice(fmt, options.VERIFY_FORMATS, "--format")
        return store.report_to_json(result.report) if fmt == "json" else result.text
    if isinstance(result, WriterSummary):
        if options.choice(fmt, options.VERIFY_FORMATS, "--format") == "json":
            return (
                json.dumps(
                    {
                        k: str(v) if isinstance(v, Path) else v
                        for k, v in to_jsonable(result).items()
                    },
                    indent=1,
                )
                + "\n"
            )
        return format_summary(result) + "\n"
    from fsyncbench.crash import CrashExperiment, PowerLossExperiment

    if isinstance(result, (CrashExperiment, PowerLossExperiment)):
        fmt = options.choice(fmt, options.REPORT_FORMATS, "--format")
        return _render_kill_matrix(result, fmt, model_call_ms)
    raise FsyncbenchError(f"cannot render a {type(result).__name__}")


def _render_kill_matrix(result: Any, fmt: str, model_call_ms: float) -> str:
    """A crash report, a CrashExperiment or a PowerLossExperiment as ``fmt``: JSON is the
    report as saved, or the figures of a bare experiment
    (:func:`fsyncbench.crash.view.crash_jsonable`, ``power_loss_jsonable``); the other
    formats lay out its one Document (:func:`fsyncbench.crash.view.describe`)."""
    from fsyncbench import __version__
    from fsyncbench.crash import CrashExperiment
    from fsyncbench.crash import view as crash_view
    from fsyncbench.report import render_document

    if fmt == "json":
        if isinstance(result, Report):
            return store.report_to_json(result)
        if isinstance(result, CrashExperiment):
            return _json(crash_view.crash_jsonable(result, model_call_ms))
        return _json(crash_view.power_loss_jsonable(result))
    # the terminal's text leaves the host out; the saved Markdown and HTML have it
    doc = crash_view.describe(result, model_call_ms, __version__, host=fmt != "text")
    return render_document(doc, fmt)


def _render_powerloss(result: PowerlossResult, fmt: str) -> str:
    from fsyncbench import __version__
    from fsyncbench.report import render_document
    from fsyncbench.report.loss import describe_powerloss

    if fmt == "json":
        data = to_jsonable(result)
        for config, c in zip(data["configs"], result.configs):
            for model, m in zip(config["models"], c.models):
                model["measured_vs_documented"] = c.agreement(m)
        return _json(
            {
                "kind": "powerloss",
                "schema_version": SCHEMA_VERSION,
                "tool_version": __version__,
                **data,
            }
        )
    return render_document(describe_powerloss(result, __version__), fmt)


def _json(data: Any) -> str:
    from fsyncbench.report import tables

    return json.dumps(tables.json_safe(data), indent=1) + "\n"


@dataclass(frozen=True)
class GateResult:
    """What :func:`gate` found: ``failures`` (:class:`fsyncbench.judge.gates.GateFailure`,
    in result order) among ``checked`` configurations; ``notes`` (a p99 whose interval
    straddles ``--max-p99``); ``cannot_tell`` (what a strict gate could not check, with what
    would settle it); ``active`` False when no gate was set (nothing checked);
    ``unverified``: with ``--fail-on``, the configurations checked whose storage path is
    ``unverifiable`` while ``--fail-on`` does not name it: a pass says nothing of them."""

    failures: tuple[GateFailure, ...] = ()
    checked: int = 0
    active: bool = False
    notes: tuple[str, ...] = ()
    cannot_tell: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(self.failures)


def gate(
    report: Report,
    gates: Gates | None = None,
    *,
    max_p99: str | int | None = None,
    fail_on: str | Sequence[str] | None = None,
    configs: str | Sequence[str] | None = None,
    max_p99_strict: bool = False,
) -> GateResult:
    """The CI gates over ``report``: each configuration (``configs``; default all but the
    no-sync write baseline) whose p99 is above ``max_p99`` ("10ms", or ns) or whose path
    verdict is in ``fail_on`` ("volatile_cache,no_flush") fails. Give ``gates`` (parsed) or
    the three values."""
    from fsyncbench.judge import gates as checks

    options.check_instance(gates, Gates, "gates")
    if gates is None:
        gates = Gates.parse(max_p99, fail_on, configs, max_p99_strict)
    options.check_instance(report, Report, "report", optional=False)
    if not gates.active:
        return GateResult()
    failures, notes, untold = checks.review(
        report,
        gates.max_p99_ns,
        gates.fail_on,
        gates.configs,
        gates.max_p99_strict,
        gates.accept_disturbed,
    )
    selected = checks.select(report, gates.configs)
    verdicts = {v.subject: v.path_verdict for v in report.verdict.results}
    unverified = tuple(
        r.name
        for r in selected
        if gates.fail_on
        and verdicts.get(r.name) == UNVERIFIABLE
        and UNVERIFIABLE not in gates.fail_on
    )
    return GateResult(tuple(failures), len(selected), True, tuple(notes), tuple(untold), unverified)


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
    (they hold no latency)."""

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
    loaded = [r if isinstance(r, Report) else store.load_report(r) for r in items]
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
        loaded, labels = _of_kind(loaded, labels, kind)
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


def _head_to_head_line(c: Comparison) -> str:
    """``compare A B --vs X,Y`` in one sentence (see :func:`_head_to_head`)."""
    from fsyncbench.report.headtohead import ratio_phrase

    p50, p99 = c.head_to_head
    rounds = " (95 % intervals, Welch over the two runs' rounds)" if p50.bounds else ""
    return (
        f"Head to head: {p50.a_name} in {c.labels[0]} against {p50.b_name} in {c.labels[1]}: "
        f"{ratio_phrase(p50)}, {ratio_phrase(p99)}{rounds}."
    )


def _render_comparison(c: Comparison, fmt: str) -> str:
    """``c`` in ``fmt``; in text and Markdown the regression gate's answer line comes first
    and its other lines after the tables (JSON carries it in ``regression_check``); a
    head-to-head (``--vs``) sentence before the tables."""
    body = _render_comparison_body(c, fmt)
    if c.head_to_head and fmt in ("text", "markdown"):
        line = _head_to_head_line(c)
        if fmt == "text":
            from fsyncbench.report.text import wrap_text

            line = wrap_text(line, "  ")
        body = line + "\n\n" + body
    if not c.lines or fmt not in ("text", "markdown"):
        return body
    head, rest = c.lines[0], c.lines[1:]
    if fmt == "text":
        from fsyncbench.report.text import wrap_text

        head, rest = wrap_text(head, "  "), tuple(wrap_text(line, "  ") for line in rest)
    sep = "\n\n" if fmt == "markdown" else "\n"
    top = f"**{head}**" if fmt == "markdown" else head
    return top + "\n\n" + body.rstrip("\n") + "\n\n" + sep.join(rest) + ("\n" if rest else "")


def _render_comparison_body(c: Comparison, fmt: str) -> str:
    from fsyncbench import __version__
    from fsyncbench.report import fleet as fleets
    from fsyncbench.report import render_document, tables
    from fsyncbench.report.document import Document, Preformatted, Section

    data: dict[str, Any]
    if c.pair is not None:
        if fmt == "json":
            data = tables.compare_jsonable(c.reports[0], c.reports[1], c.pair, c.labels)
        elif fmt == "html":
            # the side-by-side tables as they read in a terminal, on a page of their own
            text = tables.render_compare(c.reports[0], c.reports[1], c.pair, c.labels)
            doc = Document(
                f"fsyncbench compare: {c.labels[0]} vs {c.labels[1]}",
                f"fsyncbench {__version__}",
                (Section("compare", "Side by side", (Preformatted(tuple(text.splitlines())),)),),
            )
            return render_document(doc, fmt)
        else:
            return tables.render_compare(
                c.reports[0], c.reports[1], c.pair, c.labels, tables.TABLEFMT[fmt]
            )
    else:
        assert c.config is not None  # a fleet always has its configuration
        if fmt != "json":
            doc = fleets.describe_fleet(
                c.groups, c.config, c.group_by, __version__, c.duplicates, c.left_out
            )
            return render_document(doc, fmt)
        data = fleets.fleet_jsonable(c.groups, c.config, c.group_by, c.duplicates, c.left_out)
    if c.head_to_head:
        data["head_to_head"] = [
            {
                "a": f"{r.a_name} ({c.labels[0]})",
                "b": f"{r.b_name} ({c.labels[1]})",
                "percentile": r.percentile,
                "ratio": r.ratio,
                "low": r.low,
                "high": r.high,
                "df": r.df,
                "reason": r.reason,
            }
            for r in c.head_to_head
        ]
    if c.limit_pct is not None and c.gate is not None:
        from fsyncbench.report import compare as comparing
        from fsyncbench.report import regression

        g = c.gate
        data["regression_check"] = {
            "limit_pct": c.limit_pct,
            "baseline": c.labels[0],
            "verdict": "regression" if g.regressions else "cannot tell" if g.untold else "passed",
            "gated": len(g.statistics),
            "failed": g.count(regression.REGRESSION),
            "passed": g.count(regression.PASSED),
            "cannot_tell": g.count(regression.CANNOT_TELL),
            "detectable_ratio_range": g.detectable_range(),
            # significantly slower, whatever the limit, power or disturbance: a run to keep
            # out of the history (docs/ci.md)
            "slower": [
                f"{st.name} p{st.percentile:g}"
                + (f" in {st.candidate}" if len(c.labels) > 2 else "")
                for st in g.statistics
                if st.p_adjusted is not None
                and st.ratio is not None
                and st.ratio > 1.0
                and st.p_adjusted < comparing.alpha(comparing.CONFIDENCE)
            ],
            "statistics": [to_jsonable(st) for st in g.statistics],
            "not_checked": list(c.not_checked),
            "regressions": [to_jsonable(r) for r in c.regressions],
        }
    return _json(data)
