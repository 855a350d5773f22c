"""The reports half of the API (:mod:`fsyncbench.api`): :func:`load`, :func:`save`,
:func:`write_file` and :func:`render` (every result a command returns, as the CLI prints it:
reports, host records, experiments, comparisons, powercut outcomes). Gating a report is
:mod:`fsyncbench.api.gating`, comparing reports :mod:`fsyncbench.api.comparing`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fsyncbench import options
from fsyncbench.api.common import PathLike, judged_now, redacted
from fsyncbench.api.comparing import Comparison
from fsyncbench.errors import FsyncbenchError
from fsyncbench.jsonable import to_jsonable
from fsyncbench.model import SCHEMA_VERSION, Host, PowerlossResult, Report
from fsyncbench.options import Gates, Outputs
from fsyncbench.report import store
from fsyncbench.report.answer import DEFAULT_MODEL_CALL_MS


def load(
    path: PathLike,
    *,
    redact: bool = False,
    gates: Gates | None = None,
    outputs: Outputs | None = None,
) -> Report:
    """``fsyncbench show``'s report: read and check a saved report file (run, audit,
    powercut, crash or powerloss; a newer schema raises "upgrade fsyncbench"), a run or
    audit report's verdict derived again by this version (:func:`.common.judged_now`: a
    note says where it differs from the recorded one), ``redact``-ed if asked. ``gates``'
    configurations must be in it; ``outputs`` must not overwrite it (both checked)."""
    options.check_path(path, "path")
    options.check_instance(gates, Gates, "gates")
    options.check_instance(outputs, Outputs, "outputs")
    path = Path(path)
    if outputs is not None:
        outputs.check(source=path)
    report = redacted(judged_now(store.load_report(path)), redact)
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
            return _render_powerloss(result.powerloss, fmt, verbose)
        from fsyncbench import report as reporting

        return reporting.render(result, fmt, model_call_ms, verbose, options.vs_names(vs))
    if isinstance(result, Comparison):
        return _render_comparison(
            result, options.choice(fmt, options.COMPARE_FORMATS, "--format"), verbose
        )
    if isinstance(result, Host):
        if options.choice(fmt, options.TABLE_FORMATS, "--format") == "json":
            return _json(to_jsonable(result))
        return tables.render_host(result, fmt)
    if isinstance(result, PowerlossResult):
        return _render_powerloss(
            result, options.choice(fmt, options.REPORT_FORMATS, "--format"), verbose
        )
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


def _render_powerloss(result: PowerlossResult, fmt: str, verbose: bool = True) -> str:
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
    return render_document(
        describe_powerloss(result, __version__, brief=fmt == "text" and not verbose), fmt
    )


def _json(data: Any) -> str:
    from fsyncbench.report import tables

    return json.dumps(tables.json_safe(data), indent=1) + "\n"


def _head_to_head_line(c: Comparison) -> str:
    """``compare A B --vs X,Y`` in one sentence (see :func:`_head_to_head`)."""
    from fsyncbench.report.headtohead import ratio_phrase

    p50, p99 = c.head_to_head
    rounds = " (95 % intervals, Welch over the two runs' rounds)" if p50.bounds else ""
    return (
        f"Head to head: {p50.a_name} in {c.labels[0]} against {p50.b_name} in {c.labels[1]}: "
        f"{ratio_phrase(p50)}, {ratio_phrase(p99)}{rounds}."
    )


def _render_comparison(c: Comparison, fmt: str, verbose: bool = True) -> str:
    """``c`` in ``fmt``; in text and Markdown the regression gate's answer line comes first
    and its other lines after the tables (JSON carries it in ``regression_check``); a
    head-to-head (``--vs``) sentence before the tables. ``verbose`` False: two reports as
    text in their compact table (Markdown, HTML and JSON are always whole)."""
    body = _render_comparison_body(c, fmt, verbose or fmt != "text")
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


def _render_comparison_body(c: Comparison, fmt: str, verbose: bool) -> str:
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
            text = tables.render_compare(c.reports[0], c.reports[1], c.pair, c.labels, fit=False)
            doc = Document(
                f"fsyncbench compare: {c.labels[0]} vs {c.labels[1]}",
                f"fsyncbench {__version__}",
                (Section("compare", "Side by side", (Preformatted(tuple(text.splitlines())),)),),
            )
            return render_document(doc, fmt)
        else:
            return tables.render_compare(
                c.reports[0], c.reports[1], c.pair, c.labels, tables.TABLEFMT[fmt], verbose
            )
    else:
        assert c.config is not None  # a fleet always has its configuration
        if fmt != "json":
            doc = fleets.describe_fleet(
                c.groups, c.config, c.group_by, __version__, c.duplicates, c.left_out, c.rejudged
            )
            return render_document(doc, fmt)
        data = fleets.fleet_jsonable(
            c.groups, c.config, c.group_by, c.duplicates, c.left_out, c.rejudged
        )
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
