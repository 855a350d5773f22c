"""The HTML report: one self-contained file that opens offline (no scripts, no fonts or
styles fetched from anywhere), plots embedded as inline SVG made by matplotlib.

Order: the verdict and its evidence first, then the latency CDF of every configuration on
one log-scale axis, a histogram per sync primitive, the p50/p99 table with CIs, the device
flush-counter evidence, the host record, and the method.

matplotlib is used without pyplot: each figure gets an Agg canvas of its own (headless, no
GUI backend, no global state) and is saved as SVG with glyphs drawn as paths, so the text
in the plots needs no font on the reader's machine.
"""

from __future__ import annotations

import html
import io
import logging
import re
from collections.abc import Sequence

import numpy as np

from fsyncbench.judge import stack
from fsyncbench.model import Report, Result
from fsyncbench.report.fmt import fmt_interval, fmt_spread
from fsyncbench.render import (
    STRENGTH_MEANING,
    VERDICT_MEANING,
    durability_line,
    fmt_ns,
    host_lines,
    methodology,
    p99_precision,
    stance_tag,
)

# matplotlib warns on import, in two lines on stderr, when $HOME/.config is not writable and
# it falls back to a temporary cache; the page does not depend on that cache, and the CLI's
# stderr is for fsyncbench's own one-line messages.
logging.getLogger("matplotlib").setLevel(logging.ERROR)

#: Most points drawn per CDF line: evenly spaced quantiles plus every point of the top tail.
CDF_MAX_POINTS = 2000
CDF_TAIL_FRACTION = 0.01
#: Evidence values longer than this are folded into a <details> element.
EVIDENCE_INLINE_CHARS = 120

_VERDICT_COLOR = {"no_flush": "#b00020", "volatile_cache": "#c05600",
                  "unverifiable": "#6b5900", "honest_flush": "#1b6e20"}
_MODE_COLORS = {"DELETE": "#1f77b4", "TRUNCATE": "#ff7f0e", "PERSIST": "#9467bd",
                "WAL": "#2ca02c", "MEMORY": "#8c564b", "OFF": "#e377c2"}
_SYNC_STYLES = {"OFF": ":", "NORMAL": "--", "FULL": "-", "EXTRA": "-."}
_PRIMITIVE_COLORS = ("#000000", "#555555", "#999999", "#17becf", "#bcbd22")

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif;
 margin:0 auto;max-width:1240px;padding:1.2em 2em;color:#1a1a1a;line-height:1.45}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
.sub{color:#555;margin:0 0 1em}
.verdict{border-left:10px solid;padding:.6em 1em;background:#f7f7f7;margin:1em 0}
.verdict .big{font-size:1.6em;font-weight:700}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}
th,td{border:1px solid #ccc;padding:.25em .55em;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.risk{color:#b00020;font-weight:700}.warning{color:#c05600;font-weight:700}.info{color:#555}
.no{color:#b00020;font-weight:700}
.finding{margin:.5em 0 .8em}.finding .ev{color:#444;font-size:.88em}
.finding .src{color:#666;font-size:.82em}
figure{margin:1em 0}figcaption{color:#444;font-size:.9em}
svg{max-width:100%;height:auto}
code{background:#f3f3f3;padding:0 .2em}
"""


def render_html(report: Report) -> str:
    """The whole HTML document for ``report``."""
    e = html.escape
    v = report.verdict
    color = _VERDICT_COLOR.get(v.path_verdict, "#333333")
    meaning = VERDICT_MEANING.get(v.path_verdict, "")
    title = f"fsyncbench {report.kind}: {report.host.hostname}, {report.created_utc}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f'<p class="sub">fsyncbench {e(report.tool_version)}, report schema '
        f"{report.schema_version}, target {e(report.host.target.path)}</p>",
        f'<div class="verdict" style="border-color:{color}">'
        f'<div>Storage path verdict</div><div class="big" style="color:{color}">'
        f"{e(v.path_verdict)}</div>"
        + (f"<div><strong>{e(STRENGTH_MEANING.get(v.strength, v.strength))}</strong></div>"
           if v.strength else "")
        + f"<div>{e(meaning)} Decided by <code>{e(v.decided_by)}</code>.</div></div>",
        f"<p>{html.escape(durability_line(report))}</p>",
        _config_verdicts(report),
        "<h2>Findings and evidence</h2>",
        _findings(report),
        "<h2>Latency distribution</h2>",
        _figure(cdf_svg(report), "Cumulative distribution of every configuration's operation "
                "time (log scale). Solid lines sync on every commit (synchronous=FULL), dashed "
                "at NORMAL, dotted never (OFF); grey/black lines are the raw write+sync "
                "primitives."),
    ]
    hist = histogram_svg(report)
    if hist:
        parts.append(_figure(hist, "One histogram per raw sync primitive (log-spaced bins); "
                                   "solid line p50, dashed line p99."))
    parts += [
        "<h2>Results: p50 and p99 with 95 % confidence intervals</h2>",
        _results_table(report),
        "<h2>Device flush counters</h2>",
        _flush_table(report),
        "<h2>Host</h2>",
        _kv_table(host_lines(report.host)),
        "<h2>Method</h2>",
        f"<p>{_inline_code(methodology(report))}</p>",
    ]
    if report.notes:
        parts.append("<ul>" + "".join(f"<li>Note: {e(n)}</li>" for n in report.notes) + "</ul>")
    parts.append(f'<p class="sub">Command line: <code>{e(" ".join(report.command_line))}</code></p>')
    parts.append("</body></html>\n")
    return "\n".join(parts)


# --------------------------------------------------------------------------- HTML parts


def _inline_code(text: str) -> str:
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(text))


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _config_verdicts(report: Report) -> str:
    e = html.escape
    rows = []
    for rv in report.verdict.results:
        durable = "-" if rv.config_durable is None else ("yes" if rv.config_durable else
                                                         '<span class="no">NO</span>')
        rows.append(f"<tr><td>{e(rv.subject)}</td><td>{e(rv.path_verdict)}</td>"
                    f"<td>{e(rv.strength or '-')}</td>"
                    f"<td>{durable}</td><td>{e(rv.decided_by)}</td></tr>")
    if not rows:
        return ""
    return ("<table><tr><th>configuration</th><th>path verdict</th><th>strength</th>"
            "<th>durable config</th><th>decided by</th></tr>" + "".join(rows) + "</table>")


def _findings(report: Report) -> str:
    e = html.escape
    if not report.verdict.findings:
        return "<p>No findings.</p>"
    order = {"risk": 0, "warning": 1, "info": 2}
    out = []
    for f in sorted(report.verdict.findings, key=lambda f: order.get(f.level, 3)):
        short = {k: _ev(v) for k, v in f.evidence.items() if len(_ev(v)) <= EVIDENCE_INLINE_CHARS}
        ev = ", ".join(f"{k}={v}" for k, v in short.items())
        # long values (per-result tables of counters, ...) fold away: <details> needs no script
        folded = "".join(
            f'<details class="ev"><summary>{e(k)}</summary><code>{e(_ev(v))}</code></details>'
            for k, v in f.evidence.items() if k not in short)
        out.append(
            f'<div class="finding"><span class="{e(f.level)}">{e(f.level.upper())}</span> '
            f"<code>{e(f.code)}</code> ({e(f.subject)}){e(stance_tag(f))}: {e(f.message)} "
            f"<em>{e(f.advice)}</em>"
            + (f'<div class="ev">Evidence: {e(ev)}</div>' if ev else "")
            + folded
            + (f'<div class="src">Source: {e(f.source)}</div>' if f.source else "")
            + "</div>"
        )
    return "\n".join(out)


def _ev(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _results_table(report: Report) -> str:
    e = html.escape
    verdicts = {v.subject: v for v in report.verdict.results}
    rounds = any(r.summary.round_p99_ns for r in report.results)
    head = ["kind", "configuration", "sync primitive", "n", "p50", "p50 95% CI", "p99",
            "p99 95% CI", "p99 +-", *(["p99 of each round"] if rounds else []), "p99.9", "max",
            "ops/s", "path verdict", "durable config"]
    rows = []
    for r in report.results:
        s = r.summary
        v = verdicts.get(r.name)
        durable = "-" if v is None or v.config_durable is None else (
            "yes" if v.config_durable else '<span class="no">NO</span>')
        count = f"{s.count}" + ("" if r.target_reached else f" (&lt;{r.target_samples})")
        cells = [e(r.kind), e(r.name), e(r.primitive)]
        nums = [count, fmt_ns(s.p50_ns), fmt_interval(s.p50_ci_ns, s.p50_interval),
                fmt_ns(s.p99_ns), fmt_interval(s.p99_ci_ns, s.p99_interval), e(p99_precision(r)),
                *([e(fmt_spread(s.round_p99_ns))] if rounds else []),
                fmt_ns(s.p999_ns), fmt_ns(s.max_ns), f"{s.ops_per_s:,.0f}"]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells)
                    + "".join(f'<td class="num">{c}</td>' for c in nums)
                    + f"<td>{e(v.path_verdict) if v else '-'}</td><td>{durable}</td></tr>")
    return ("<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"
            + "".join(rows) + "</table>")


def _flush_table(report: Report) -> str:
    e = html.escape
    rows = []
    target = report.host.target
    media = set(stack.media_devices(target)) if target.layers else None
    for r in report.results:
        for d in r.device_flushes:
            disk = d.device if media is None or d.device in media else f"{d.device} (holds no bytes)"
            per_op = "-" if d.flushes is None or not r.summary.count else f"{d.flushes / r.summary.count:.2f}"
            per_sync = ("-" if d.flushes is None or not r.syncs_issued
                        else f"{d.flushes / r.syncs_issued:.2f}")
            rows.append(
                f"<tr><td>{e(r.name)}</td><td>{e(r.primitive)}</td><td>{e(disk)}</td>"
                f'<td class="num">{"-" if r.syncs_issued is None else r.syncs_issued}</td>'
                f'<td class="num">{"n/a" if d.flushes is None else d.flushes}</td>'
                f'<td class="num">{"n/a" if d.flush_time_ms is None else d.flush_time_ms}</td>'
                f'<td class="num">{per_sync}</td><td class="num">{per_op}</td></tr>'
            )
    if not rows:
        return ("<p>No device flush counters were read (they exist on Linux 5.5+ for a "
                "target on a block device; tmpfs and other platforms have none).</p>")
    return (
        "<p>Flushes the disk itself completed while each workload ran (<code>/sys/block/"
        "&lt;disk&gt;/stat</code> fields 16–17). An honest path shows about one device flush "
        "per sync issued; none at all means the syncs were dropped above the device.</p>"
        "<table><tr><th>configuration</th><th>sync primitive</th><th>disk</th>"
        "<th>syncs issued</th><th>device flushes</th><th>flush time ms</th>"
        "<th>flushes per sync</th><th>flushes per operation</th></tr>"
        + "".join(rows) + "</table>"
    )


def _kv_table(lines: Sequence[tuple[str, str]]) -> str:
    e = html.escape
    return ("<table>" + "".join(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in lines)
            + "</table>")


# --------------------------------------------------------------------------- plots


def _style(r: Result, primitive_index: int) -> dict:
    if r.kind == "commit" and (r.effective or r.requested):
        p = r.effective or r.requested
        return {
            "color": _MODE_COLORS.get(p.journal_mode, "#7f7f7f"),
            "linestyle": _SYNC_STYLES.get(p.synchronous, "-"),
            "linewidth": 2.2 if p.fullfsync else 1.6,
        }
    return {"color": _PRIMITIVE_COLORS[primitive_index % len(_PRIMITIVE_COLORS)],
            "linestyle": "-", "linewidth": 2.4}


def cdf_points(samples_ns: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(times in ns, cumulative fraction) of the empirical CDF with Hazen plotting positions
    ((i + 0.5) / n, finite on a logit axis), thinned to at most
    :data:`CDF_MAX_POINTS` points while keeping every point of the top 1 %."""
    x = np.sort(np.asarray(samples_ns, dtype=np.float64))
    n = x.size
    idx = np.arange(n)
    if n > CDF_MAX_POINTS:
        tail_start = int(n * (1 - CDF_TAIL_FRACTION))
        body = np.linspace(0, tail_start, CDF_MAX_POINTS // 2).astype(np.int64)
        tail = np.arange(tail_start, n)
        if tail.size > CDF_MAX_POINTS // 2:
            tail = np.unique(np.linspace(tail_start, n - 1, CDF_MAX_POINTS // 2).astype(np.int64))
        idx = np.unique(np.concatenate([body, tail, [n - 1]]))
    return x[idx], (idx + 0.5) / n


def _new_figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _svg(fig, salt: str) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": f"fsyncbench-{salt}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "fsyncbench"})
    text = buf.getvalue()
    start = text.find("<svg")
    svg = text[start:] if start >= 0 else text
    # ids of one figure must not clash with another's in the same page
    return re.sub(r'(id="|href="#|url\(#)', rf"\g<1>{salt}-", svg)


def _axis_label(ax) -> None:
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_ns(v)))


def _logit_limits(report: Report) -> tuple[float, float]:
    n = max((len(r.samples_ns) for r in report.results), default=0)
    edge = min(0.01, 0.5 / n) if n else 0.01
    return edge, 1.0 - edge


def _fraction_label(value: float, _pos=None) -> str:
    if value >= 0.5:
        return f"p{value * 100:g}"
    return f"p{value * 100:.3g}"


def cdf_svg(report: Report) -> str:
    """Inline SVG: the CDF of every result with raw samples on one log-scale time axis."""
    import matplotlib
    from matplotlib.ticker import FuncFormatter, NullFormatter

    with matplotlib.rc_context({"font.family": "DejaVu Sans", "font.size": 10}):
        fig = _new_figure(11.5, 6.0)
        ax = fig.add_subplot(1, 1, 1)
        prim_i = 0
        drawn = 0
        for r in report.results:
            if not r.samples_ns:
                continue
            style = _style(r, prim_i)
            if r.kind != "commit":
                prim_i += 1
            x, y = cdf_points(r.samples_ns)
            label = f"{r.name} ({r.primitive})" if r.kind == "commit" else r.name
            ax.plot(x, y, label=label, **style)
            drawn += 1
        for q in (0.5, 0.99):
            ax.axhline(q, color="#9a9a9a", linewidth=0.9, zorder=0)
        if drawn:
            ax.set_xscale("log")
            _axis_label(ax)
            ax.legend(loc="upper left", bbox_to_anchor=(1.04, 1.0), fontsize=8.5, frameon=False)
        else:
            ax.text(0.5, 0.5, "no raw samples in this report", ha="center", transform=ax.transAxes)
        ax.set_yscale("logit")
        ax.set_ylim(*_logit_limits(report))
        ax.yaxis.set_major_formatter(FuncFormatter(_fraction_label))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("operation time (log scale)")
        ax.set_ylabel("fraction of operations at or below")
        ax.grid(True, which="major", color="#e4e4e4", linewidth=0.8)
        ax.grid(True, which="minor", axis="x", color="#f2f2f2", linewidth=0.5)
        fig.subplots_adjust(left=0.07, right=0.72, top=0.96, bottom=0.11)
        return _svg(fig, "cdf")


def histogram_svg(report: Report) -> str:
    """Inline SVG: one histogram panel per raw sync primitive result (empty string when the
    report has none with raw samples)."""
    import matplotlib

    prims = [r for r in report.results if r.kind in ("flush", "write") and r.samples_ns]
    if not prims:
        return ""
    allx = np.concatenate([np.asarray(r.samples_ns, dtype=np.float64) for r in prims])
    lo, hi = max(float(allx.min()), 1.0), max(float(allx.max()), 2.0)
    bins = np.geomspace(lo, hi * 1.0001, 60)
    with matplotlib.rc_context({"font.family": "DejaVu Sans", "font.size": 10}):
        fig = _new_figure(11.5, 2.3 * len(prims) + 0.6)
        axes = fig.subplots(len(prims), 1, sharex=True, squeeze=False)[:, 0]
        for i, (ax, r) in enumerate(zip(axes, prims)):
            color = _PRIMITIVE_COLORS[i % len(_PRIMITIVE_COLORS)]
            ax.hist(np.asarray(r.samples_ns, dtype=np.float64), bins=bins, color=color, alpha=0.75)
            s = r.summary
            ax.axvline(s.p50_ns, color="#d62728", linewidth=1.4)
            ax.axvline(s.p99_ns, color="#d62728", linewidth=1.4, linestyle="--")
            ax.set_title(f"{r.name}: p50 {fmt_ns(s.p50_ns)}, p99 {fmt_ns(s.p99_ns)}, n={s.count}",
                         fontsize=10, loc="left")
            ax.set_ylabel("count")
            ax.set_xscale("log")
            ax.grid(True, color="#eeeeee", linewidth=0.6)
        _axis_label(axes[-1])
        axes[-1].set_xlabel("operation time (log scale)")
        fig.tight_layout()
        return _svg(fig, "hist")
