"""Text of ``fsyncbench crash``: the kill matrix (a "simple" table in text, a GitHub table in
Markdown), the journal's commit cost beside a model call, replay and reorder, and the same as
JSON-ready data. Moved here from :mod:`fsyncbench.report.tables`, which sits below crash in
the layering (pyproject.toml ``[tool.importlinter]``) and so may not import it."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from fsyncbench.crash.matrix import CrashExperiment, kill_matrix_rows
from fsyncbench.fmt import fmt_ns
from fsyncbench.model import to_jsonable
from fsyncbench.report.tables import TABLEFMT


def _md(text: str) -> str:
    from fsyncbench.report.markdown import escape

    return escape(text)


def crash_jsonable(outcome: CrashExperiment, model_call_ms: float) -> dict[str, Any]:
    """The crash experiment as JSON-ready data: the table rows, journal commit latency
    summary (ns) against the assumed model-call time, the hazards, and the raw matrix."""
    from fsyncbench.measure import stats

    m = outcome.matrix
    s = stats.summarize(m.journal_commit_ns)
    return {
        "table": [
            {
                "policy": r.label,
                "kills": len(r.kills),
                "kills_causing_duplicates": r.kills_causing_duplicates,
                "worst_duplicates": r.worst_duplicates,
                "mean_extra_tokens": round(r.mean_extra_tokens),
                "worst_extra_tokens": r.worst_extra_tokens,
                "worst_extra_pct": round(r.worst_extra_pct),
            }
            for r in m.rows
        ],
        "journal_commit": {
            "primitive_config": m.effective.label,
            "count": s.count,
            "p50_ns": s.p50_ns,
            "p99_ns": s.p99_ns,
            "p50_ci_ns": s.p50_ci_ns,
            "p99_ci_ns": s.p99_ci_ns,
            "model_call_ms_assumed": model_call_ms,
            "p99_share_of_model_call": s.p99_ns / (model_call_ms * 1e6),
        },
        "kills": m.kill_count,
        "elapsed_ns": m.elapsed_ns,
        "replay": to_jsonable(outcome.replay),
        "reorder": to_jsonable(outcome.reorder),
        "matrix": to_jsonable(m),
    }


def render_crash(outcome: CrashExperiment, model_call_ms: float, fmt: str = "text") -> str:
    """The kill-matrix table, the journal's commit cost beside a model call, the hazards;
    ``fmt`` text (a "simple" table) or markdown (a GitHub table, one paragraph per line)."""
    from fsyncbench.measure import stats

    m = outcome.matrix
    s = stats.summarize(m.journal_commit_ns)
    rows = kill_matrix_rows(m)
    md = fmt == "markdown"
    if md:
        rows = [{_md(k): _md(str(v)) for k, v in row.items()} for row in rows]
    title = (
        f"Kill matrix: {m.kill_count} real SIGKILLs of a 10-step agent "
        f"(journal {m.effective.label}, SQLite {m.sqlite_version}), {m.elapsed_ns / 1e9:.2f} s"
    )
    table = tabulate(rows, headers="keys", tablefmt=TABLEFMT[fmt], disable_numparse=True)
    lines = [
        f"Journal commit (BEGIN; INSERT step; COMMIT, {m.effective.label}): "
        f"p50 {fmt_ns(s.p50_ns)}, p99 {fmt_ns(s.p99_ns)} over {s.count} commits; "
        f"against an assumed {model_call_ms:g} ms model call per step, the p99 commit adds "
        f"{100 * s.p99_ns / (model_call_ms * 1e6):.3g} % (set --model-call-ms to your model's latency).",
        "",
        f"Replay of a completed run: {outcome.replay.replay_effects} effects, "
        f"{outcome.replay.replay_tokens} tokens, {outcome.replay.replay_steps_replayed} of "
        f"{outcome.replay.steps_recorded} steps answered from the journal.",
        "SIGKILL is process death, not power loss: the page cache survives it, so these "
        "counts do not depend on synchronous (fsyncbench powercut tests a real power cut).",
        "Reordered code after a crash: "
        + (
            f"stopped: {outcome.reorder.message}"
            if outcome.reorder.stopped
            else "did NOT stop (non-determinism went undetected)"
        ),
    ]
    if md:
        return (
            "\n\n".join([f"# {_md(title)}", table, *(_md(line) for line in lines if line)]) + "\n"
        )
    return "\n".join([title, "", table, "", *lines]) + "\n"
