"""Text of ``fsyncbench crash``: the kill matrix (a "simple" table in text, a GitHub table in
Markdown), the journal's commit cost beside a model call, replay and reorder, and the same as
JSON-ready data; with ``--power-loss`` one table per pragma combination and the sentence of
:func:`power_loss_answer`. Moved here from :mod:`fsyncbench.report.tables`, which sits below crash in
the layering (pyproject.toml ``[tool.importlinter]``) and so may not import it."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from fsyncbench.crash.matrix import CrashExperiment, kill_matrix_rows
from fsyncbench.crash.results import KillMatrix, PolicyRow, PowerLossExperiment
from fsyncbench.fmt import fmt_ns
from fsyncbench.model import to_jsonable
from fsyncbench.report.tables import TABLEFMT


def _md(text: str) -> str:
    from fsyncbench.report.markdown import escape

    return escape(text)


def _table_jsonable(m: KillMatrix) -> list[dict[str, Any]]:
    """The kill matrix's table, one dict per policy (tokens as integers)."""
    return [
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
    ]


def crash_jsonable(outcome: CrashExperiment, model_call_ms: float) -> dict[str, Any]:
    """The crash experiment as JSON-ready data: the table rows, journal commit latency
    summary (ns) against the assumed model-call time, the hazards, and the raw matrix."""
    from fsyncbench.measure import stats

    m = outcome.matrix
    s = stats.summarize(m.journal_commit_ns)
    return {
        "table": _table_jsonable(m),
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


# --------------------------------------------------------------------------------------------
# crash --power-loss


def power_loss_answer(outcome: PowerLossExperiment) -> str:
    """One sentence from the measured numbers: what synchronous=NORMAL costs the agent in
    duplicate writes (tickets, pages, status updates) after a power cut, without and with
    idempotency keys, against FULL in the same journal mode. When no NORMAL/FULL pair of
    one journal mode was measured, each combination's figures instead, and how to get
    the pair."""
    by_label = {m.effective.label: m for m in outcome.matrices}
    cut = f"After a power cut ({outcome.model}, {outcome.semantics})"
    for m in outcome.matrices:
        mode = m.effective.journal_mode.lower()
        full = by_label.get(f"{mode}/full")
        if m.effective.synchronous != "NORMAL" or full is None:
            continue
        normal, n, f = m.effective.label, _rows(m), _rows(full)
        sj, ji = n["step_journal"], n["journal_idempotency"]
        like_none = ji.mean_extra_tokens == n["no_persistence"].mean_extra_tokens
        return (
            f"{cut}, synchronous=NORMAL ({normal}) made the step journal duplicate a ticket, "
            f"page or status update in {sj.kills_causing_duplicates} of {len(sj.kills)} kills "
            f"(worst {sj.worst_duplicates} in one run) against "
            f"{f['step_journal'].kills_causing_duplicates} with {mode}/full; with idempotency "
            f"keys {ji.kills_causing_duplicates} kills caused a duplicate "
            f"({f['journal_idempotency'].kills_causing_duplicates} with {mode}/full), but the "
            f"agent re-billed a mean {round(ji.mean_extra_tokens):,} extra tokens per kill "
            f"(worst {ji.worst_extra_tokens:,}, +{round(ji.worst_extra_pct)} %)"
            f"{', as many as with no persistence,' if like_none else ''} against "
            f"{round(f['journal_idempotency'].mean_extra_tokens):,} with {mode}/full."
        )
    parts = []
    for m in outcome.matrices:
        r = _rows(m)
        sj, ji = r["step_journal"], r["journal_idempotency"]
        parts.append(
            f"{m.effective.label}: the step journal duplicated a write in "
            f"{sj.kills_causing_duplicates} of {len(sj.kills)} kills, with idempotency keys "
            f"{ji.kills_causing_duplicates} did and a kill cost a mean "
            f"{round(ji.mean_extra_tokens):,} extra tokens"
        )
    return (
        f"{cut}, {'; '.join(parts)}. Run without --journal-mode and --synchronous to set "
        "synchronous=NORMAL against FULL."
    )


def _rows(m: KillMatrix) -> dict[str, PolicyRow]:
    return {row.policy: row for row in m.rows}


def _power_loss_lines(outcome: PowerLossExperiment) -> tuple[str, str]:
    """The title and the line saying what each cut did."""
    title = (
        f"Kill matrix under simulated power loss: {outcome.kill_count} real SIGKILLs of a "
        f"10-step agent, each also a power cut of its machine ({outcome.model} model, "
        f"{outcome.semantics} semantics; SQLite {outcome.sqlite_version}), "
        f"{outcome.elapsed_ns / 1e9:.2f} s"
    )
    how = (
        "After each kill the agent's journal and checkpoint databases were rebuilt as the "
        f"{outcome.model} model leaves them, choosing {outcome.choice}; the outside world "
        "(a remote service) kept every write it acknowledged. One state per cut: the "
        "corruption other states of the model could cause is not explored here "
        "(fsyncbench powerloss --model subset counts it)."
    )
    if outcome.semantics == "macos":
        how += (
            " macos semantics honour only F_FULLFSYNC, which these journals (no PRAGMA "
            "fullfsync) never ask for."
        )
    return title, how


def power_loss_jsonable(outcome: PowerLossExperiment) -> dict[str, Any]:
    """``crash --power-loss`` as JSON-ready data: the model and the state chosen per cut,
    one table per pragma combination (keyed by its label, e.g. ``wal/normal``), the
    sentence of :func:`power_loss_answer`, and the raw matrices."""
    return {
        "power_loss": {
            "model": outcome.model,
            "semantics": outcome.semantics,
            "state_chosen": outcome.choice,
        },
        "tables": {m.effective.label: _table_jsonable(m) for m in outcome.matrices},
        "answer": power_loss_answer(outcome),
        "kills": outcome.kill_count,
        "elapsed_ns": outcome.elapsed_ns,
        "sqlite_version": outcome.sqlite_version,
        "matrices": to_jsonable(outcome.matrices),
    }


def render_power_loss(outcome: PowerLossExperiment, fmt: str = "text") -> str:
    """One kill-matrix table per pragma combination, then the answer sentence; ``fmt`` text
    (a "simple" table) or markdown (a GitHub table, one paragraph per line)."""
    md = fmt == "markdown"
    title, how = _power_loss_lines(outcome)
    answer = power_loss_answer(outcome)
    blocks: list[str] = []
    for m in outcome.matrices:
        rows = kill_matrix_rows(m)
        if md:
            rows = [{_md(k): _md(str(v)) for k, v in row.items()} for row in rows]
        table = tabulate(rows, headers="keys", tablefmt=TABLEFMT[fmt], disable_numparse=True)
        heading = f"journal {m.effective.label}"
        blocks.append(f"## {_md(heading)}\n\n{table}" if md else f"{heading}\n\n{table}")
    if md:
        return "\n\n".join([f"# {_md(title)}", _md(how), *blocks, _md(answer)]) + "\n"
    return "\n\n".join([f"{title}\n{how}", *blocks, answer]) + "\n"
