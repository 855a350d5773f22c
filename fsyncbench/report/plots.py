"""Charts of a report as inline SVG, drawn by matplotlib: the p50/p99 of every
configuration with their intervals, the CDF of every result, a histogram per raw sync
primitive.

matplotlib is used without pyplot: each figure gets an Agg canvas of its own (headless, no
GUI backend, no global state) and is saved as SVG with glyphs drawn as paths, so the text
in the plots needs no font on the reader's machine. matplotlib is the optional extra
``plots`` (``pip install '.[plots]'`` from the source directory): without it the page
leaves the charts out and says so (:func:`available`).
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fsyncbench.fmt import fmt_ns
from fsyncbench.model import Report, Result

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# matplotlib warns on import, in two lines on stderr, when $HOME/.config is not writable and
# it falls back to a temporary cache; the page does not depend on that cache, and the CLI's
# stderr is for fsyncbench's own one-line messages.
logging.getLogger("matplotlib").setLevel(logging.ERROR)

#: what the page says in place of its charts when matplotlib is missing
MISSING = (
    "Charts left out: matplotlib is not installed here "
    "(pip install matplotlib into fsyncbench's environment, or pip install '.[plots]' from "
    "its source directory, then fsyncbench show REPORT.json --format html -o PAGE.html)."
)


def available() -> bool:
    """True when matplotlib can be imported (the ``plots`` extra is installed)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


#: Most points drawn per CDF line: evenly spaced quantiles plus every point of the top tail.
CDF_MAX_POINTS = 2000
CDF_TAIL_FRACTION = 0.01

_MODE_COLORS = {
    "DELETE": "#1f77b4",
    "TRUNCATE": "#ff7f0e",
    "PERSIST": "#9467bd",
    "WAL": "#2ca02c",
    "MEMORY": "#8c564b",
    "OFF": "#e377c2",
}
_SYNC_STYLES = {"OFF": ":", "NORMAL": "--", "FULL": "-", "EXTRA": "-."}
#: Raw primitives: black and greys, each with its own dash pattern and marker, so they are
#: told apart without colour.
_PRIMITIVE_STYLES = (
    ("#000000", "-", "o"),
    ("#555555", (0, (6, 2)), "s"),
    ("#888888", (0, (2, 1.5)), "^"),
    ("#17becf", "-.", "D"),
    ("#bcbd22", (0, (8, 2, 2, 2)), "v"),
)


# --------------------------------------------------------------------------- plots


def _style(r: Result, primitive_index: int) -> dict[str, Any]:
    """Line style of one result in the CDF: commits by journal mode (colour) and
    synchronous (dash); raw primitives by grey level, dash pattern and marker."""
    p = r.effective or r.requested
    if r.kind == "commit" and p:
        return {
            "color": _MODE_COLORS.get(p.journal_mode, "#7f7f7f"),
            "linestyle": _SYNC_STYLES.get(p.synchronous, "-"),
            "linewidth": 2.2 if p.fullfsync else 1.6,
        }
    color, dash, marker = _PRIMITIVE_STYLES[primitive_index % len(_PRIMITIVE_STYLES)]
    return {
        "color": color,
        "linestyle": dash,
        "linewidth": 2.0,
        "marker": marker,
        "markersize": 4.5,
        "markevery": 0.08,
    }


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


#: the CDF legend's type size (pt); the page draws the charts at their own size, so this is
#: what a reader sees (11.3 px; tests/test_report_views.py checks >= 10 px at 1,280 px)
LEGEND_PT = 8.5


def _new_figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _svg(fig: Figure, salt: str) -> str:
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": f"fsyncbench-{salt}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "fsyncbench"})
    text = buf.getvalue()
    start = text.find("<svg")
    svg = text[start:] if start >= 0 else text
    # ids of one figure must not clash with another's in the same page
    return re.sub(r'(id="|href="#|url\(#)', rf"\g<1>{salt}-", svg)


def _axis_label(ax: Axes) -> None:
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_ns(v)))


def _logit_limits(report: Report) -> tuple[float, float]:
    n = max((len(r.samples_ns) for r in report.results), default=0)
    edge = min(0.01, 0.5 / n) if n else 0.01
    return edge, 1.0 - edge


def _fraction_label(value: float, _pos: float | None = None) -> str:
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
            ax.legend(
                loc="upper left", bbox_to_anchor=(1.04, 1.0), fontsize=LEGEND_PT, frameon=False
            )
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
            color = _PRIMITIVE_STYLES[i % len(_PRIMITIVE_STYLES)][0]
            ax.hist(np.asarray(r.samples_ns, dtype=np.float64), bins=bins, color=color, alpha=0.75)
            s = r.summary
            ax.axvline(s.p50_ns, color="#d62728", linewidth=1.4)
            ax.axvline(s.p99_ns, color="#d62728", linewidth=1.4, linestyle="--")
            ax.set_title(
                f"{r.name}: p50 {fmt_ns(s.p50_ns)}, p99 {fmt_ns(s.p99_ns)}, n={s.count}",
                fontsize=10,
                loc="left",
            )
            ax.set_ylabel("count")
            ax.set_xscale("log")
            ax.grid(True, color="#eeeeee", linewidth=0.6)
        _axis_label(axes[-1])
        axes[-1].set_xlabel("operation time (log scale)")
        fig.tight_layout()
        return _svg(fig, "hist")


def configurations_svg(report: Report, durable: dict[str, bool | None]) -> str:
    """Inline SVG: one row per result with samples, p50 as a dot and p99 as a bar, each with
    its 95 % interval as a whisker (none drawn where the report has none), on a log time
    axis; durable configurations, the rest, and the raw primitives in three labelled
    groups. ``durable`` maps result names to whether their pragmas promise a durable
    commit (None: not a commit configuration)."""
    import matplotlib

    groups = [
        (
            "durable commit",
            [r for r in report.results if r.kind == "commit" and durable.get(r.name) is True],
        ),
        (
            "not durable",
            [r for r in report.results if r.kind == "commit" and durable.get(r.name) is not True],
        ),
        ("raw primitives", [r for r in report.results if r.kind != "commit"]),
    ]
    groups = [(g, rs) for g, rs in groups if rs]
    rows = sum(len(rs) for _, rs in groups)
    with matplotlib.rc_context({"font.family": "DejaVu Sans", "font.size": 9.5}):
        fig = _new_figure(6.4, 0.34 * rows + 0.5 * len(groups) + 0.9)
        ax = fig.add_subplot(1, 1, 1)
        y = 0.0
        ticks, labels = [], []
        colors = {
            "durable commit": "#1b6e20",
            "not durable": "#b05a00",
            "raw primitives": "#444444",
        }
        for title, rs in groups:
            ax.text(
                0.0,
                y - 0.15,
                title,
                transform=ax.get_yaxis_transform(),
                ha="right",
                va="bottom",
                fontweight="bold",
                color=colors[title],
            )
            y += 0.55
            for r in rs:
                s = r.summary
                c = colors[title]
                ax.barh(y, s.p99_ns, height=0.55, color=c, alpha=0.28, left=0)
                if s.p99_ci_ns:
                    ax.errorbar(
                        s.p99_ns,
                        y,
                        xerr=[[s.p99_ns - s.p99_ci_ns[0]], [s.p99_ci_ns[1] - s.p99_ns]],
                        fmt="|",
                        color=c,
                        capsize=3,
                        markersize=10,
                    )
                ax.errorbar(
                    s.p50_ns,
                    y,
                    xerr=None
                    if not s.p50_ci_ns
                    else [[s.p50_ns - s.p50_ci_ns[0]], [s.p50_ci_ns[1] - s.p50_ns]],
                    fmt="o",
                    color=c,
                    capsize=3,
                    markersize=4.5,
                )
                ticks.append(y)
                labels.append(r.name)
                y += 0.75
            y += 0.35
        ax.set_yticks(ticks, labels)
        ax.invert_yaxis()
        ax.set_xscale("log")
        lo = min((r.summary.p50_ns for _, rs in groups for r in rs), default=1.0)
        ax.set_xlim(left=max(lo / 3, 1.0))
        _axis_label(ax)
        ax.set_xlabel("p50 (dot) and p99 (bar), 95 % intervals as whiskers (log scale)")
        ax.grid(True, axis="x", which="major", color="#e4e4e4", linewidth=0.8)
        fig.subplots_adjust(
            left=0.30, right=0.97, top=0.97, bottom=0.9 / (0.34 * rows + 0.5 * len(groups) + 0.9)
        )
        return _svg(fig, "configs")


def writers_svg(report: Report) -> str:
    """Inline SVG of ``run --writers``: per configuration (with its steps per commit and
    payload), commits/s against the number of writers on the left, and on the right the
    p99 over commits (solid) and the oldest commit in progress over time, p99 (dashed), on
    a log time axis: where they part, a writer starved while the p99 over commits looked
    fine. "" without concurrent writers."""
    import matplotlib

    groups: dict[str, list[Any]] = {}
    for p in report.writers:
        key = p.requested.label
        if p.steps_per_commit > 1:
            key += f", {p.steps_per_commit} steps"
        if len({q.payload_bytes for q in report.writers}) > 1:
            key += f", {p.payload_bytes:,} B"
        groups.setdefault(key, []).append(p)
    if not groups:
        return ""
    with matplotlib.rc_context({"font.family": "DejaVu Sans", "font.size": 9.5}):
        fig = _new_figure(9.6, 3.6)
        rate, lat = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        for i, (name, points) in enumerate(groups.items()):
            points = sorted(points, key=lambda p: p.writers)
            n = [p.writers for p in points]
            color = f"C{i % 10}"
            rate.plot(n, [p.summary.commits_per_s for p in points], "o-", color=color, label=name)
            lat.plot(n, [p.summary.p99_interval.estimate_ns for p in points], "o-", color=color)
            lat.plot(
                n, [max(p.summary.oldest_wait_p99_ns, 1.0) for p in points], "s--", color=color
            )
        for ax in (rate, lat):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("writers")
            ax.grid(True, color="#e4e4e4", linewidth=0.8)
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _pos: f"{v:g}"))
        rate.set_ylabel("commits/s")
        rate.set_ylim(bottom=0)
        lat.set_yscale("log")
        lat.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _pos: fmt_ns(v)))
        lat.set_ylabel("latency (log scale)")
        lat.set_title("p99 over commits (solid), oldest wait p99 over time (dashed)", fontsize=9)
        rate.set_title("commits/s", fontsize=9)
        rate.legend(fontsize=LEGEND_PT, loc="best")
        fig.subplots_adjust(left=0.08, right=0.98, top=0.9, bottom=0.15, wspace=0.3)
        return _svg(fig, "writers")
