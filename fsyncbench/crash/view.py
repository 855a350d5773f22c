"""``fsyncbench crash`` as people read it: one :class:`~fsyncbench.report.document.Document`
per experiment — the answer first (:func:`crash_answer`, :func:`power_loss_answer`), then
the kill matrix (one table per pragma combination with ``--powerloss``), the journal's
commit cost beside a model call, replay and reorder, and the host of a saved report — laid
out as text, Markdown and HTML by the renderers every report uses
(:func:`fsyncbench.report.render_document`); and the figures of a bare experiment as
JSON-ready data (a saved report's JSON is the report itself). Here rather than in
:mod:`fsyncbench.report`, which sits below crash in the layering (pyproject.toml
``[tool.importlinter]``) and so may not import it."""

from __future__ import annotations

from typing import Any

from fsyncbench.crash.matrix import kill_matrix_rows
from fsyncbench.crash.results import (
    CrashExperiment,
    KillMatrix,
    PolicyRow,
    PowerLossExperiment,
)
from fsyncbench.fmt import fmt_ns
from fsyncbench.jsonable import to_jsonable
from fsyncbench.model import Report
from fsyncbench.powerloss.rebase import CUT_EXPLORED
from fsyncbench.report.document import Cell, Document, Paragraph, Section, Table


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
    """The crash experiment's figures as JSON-ready data: the answer, the table rows,
    journal commit latency summary (ns) against the assumed model-call time, the hazards,
    and the raw matrix."""
    from fsyncbench.measure import stats

    m = outcome.matrix
    s = stats.summarize(m.journal_commit_ns)
    return {
        "answer": crash_answer(outcome, model_call_ms),
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


def power_loss_jsonable(outcome: PowerLossExperiment) -> dict[str, Any]:
    """``crash --powerloss``'s figures as JSON-ready data: the model and the state chosen
    per cut, one table per pragma combination (keyed by its label, e.g. ``wal/normal``), the
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


# --------------------------------------------------------------------------------------------
# the answers


def _rows(m: KillMatrix) -> dict[str, PolicyRow]:
    return {row.policy: row for row in m.rows}


def _commit_cost(m: KillMatrix, model_call_ms: float) -> tuple[str, str]:
    """The journal's p99 commit and its share of a model call, as words ("8.14 ms",
    "0.814 %"); ("", "") without commit samples."""
    if not m.journal_commit_ns:
        return "", ""
    from fsyncbench.measure import stats

    p99 = stats.summarize(m.journal_commit_ns).p99_ns
    return fmt_ns(p99), f"{100 * p99 / (model_call_ms * 1e6):.3g} %"


def crash_answer(outcome: CrashExperiment, model_call_ms: float) -> str:
    """One sentence from the measured numbers: how often a kill made the agent with a step
    journal and idempotency keys duplicate an outside-world write and what it re-billed,
    against the journal alone and no persistence, and what the journal's p99 commit adds to
    a model call of ``model_call_ms``."""
    m = outcome.matrix
    r = _rows(m)
    ji, sj, none = r["journal_idempotency"], r["step_journal"], r["no_persistence"]
    p99, share = _commit_cost(m, model_call_ms)
    cost = (
        f"; the journal's p99 commit, {p99} ({m.effective.label}), adds {share} to an assumed "
        f"{model_call_ms:g} ms model call"
        if p99
        else ""
    )
    n, k = ji.kills_causing_duplicates, len(ji.kills)
    dup = (
        "duplicated no ticket, page or status update"
        if n == 0
        else f"duplicated a ticket, page or status update after {n} of them"
    )
    return (
        f"Killed at each of its {k} points, the agent with a step journal and idempotency keys "
        f"{dup} (a step journal alone: after {sj.kills_causing_duplicates}, no persistence: "
        f"after {none.kills_causing_duplicates}) and re-billed a mean "
        f"{round(ji.mean_extra_tokens):,} extra tokens per kill (no persistence: "
        f"{round(none.mean_extra_tokens):,}){cost}."
    )


def power_loss_answer(outcome: PowerLossExperiment) -> str:
    """One sentence from the measured numbers: what synchronous=NORMAL costs the agent in
    duplicate writes (tickets, pages, status updates) after a power cut, without and with
    idempotency keys, against FULL in the same journal mode. When no NORMAL/FULL pair of
    one journal mode was measured, each combination's figures instead, and how to get
    the pair."""
    by_pragmas = {
        (m.requested.journal_mode, m.requested.synchronous, m.requested.fullfsync): m
        for m in outcome.matrices
    }
    cut = (
        f"After a power cut ({CUT_EXPLORED.get(outcome.model, outcome.model)}, {outcome.semantics})"
    )
    lead = _fullfsync_sentence(outcome, by_pragmas)
    for m in outcome.matrices:
        p = m.requested
        full_m = by_pragmas.get((p.journal_mode, "FULL", p.fullfsync))
        if p.synchronous != "NORMAL" or full_m is None:
            continue
        full = full_m
        normal, n, f = m.effective.label, _rows(m), _rows(full)
        sj, ji = n["step_journal"], n["journal_idempotency"]
        like_none = ji.mean_extra_tokens == n["no_persistence"].mean_extra_tokens
        return lead + (
            f"{cut}, synchronous=NORMAL ({normal}) made the step journal duplicate a ticket, "
            f"page or status update in {sj.kills_causing_duplicates} of {len(sj.kills)} kills "
            f"(worst {sj.worst_duplicates} in one run) against "
            f"{f['step_journal'].kills_causing_duplicates} with {full.effective.label}; with idempotency "
            f"keys {ji.kills_causing_duplicates} kills caused a duplicate "
            f"({f['journal_idempotency'].kills_causing_duplicates} with {full.effective.label}), but the "
            f"agent re-billed a mean {round(ji.mean_extra_tokens):,} extra tokens per kill "
            f"(worst {ji.worst_extra_tokens:,}, +{round(ji.worst_extra_pct)} %)"
            f"{', as many as with no persistence,' if like_none else ''} against "
            f"{round(f['journal_idempotency'].mean_extra_tokens):,} with {full.effective.label}."
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
    return lead + (
        f"{cut}, {'; '.join(parts)}. Run without --journal-mode and --synchronous to set "
        "synchronous=NORMAL against FULL."
    )


def _fullfsync_sentence(outcome: PowerLossExperiment, by_pragmas: dict[Any, Any]) -> str:
    """Where one durable configuration was measured with PRAGMA fullfsync and without (the
    macOS default of ``crash --powerloss``): what fullfsync saved, first; "" otherwise."""
    for (mode, sync, full), m in by_pragmas.items():
        other = by_pragmas.get((mode, sync, False))
        if full is not True or other is None:
            continue
        a, b = _rows(m)["step_journal"], _rows(other)["step_journal"]
        return (
            f"Under {outcome.semantics} semantics {mode.lower()}/{sync.lower()} without PRAGMA "
            f"fullfsync made the step journal duplicate a write in "
            f"{b.kills_causing_duplicates} of {len(b.kills)} kills, with it "
            f"{a.kills_causing_duplicates}: only F_FULLFSYNC reaches past the drive's cache. "
        )
    return ""


# --------------------------------------------------------------------------------------------
# the documents


def _matrix_table(m: KillMatrix) -> Table:
    """The published table: one row per policy (:func:`kill_matrix_rows`)."""
    rows = kill_matrix_rows(m)
    headers = tuple(rows[0]) if rows else ()
    return Table(
        headers,
        tuple(tuple(Cell(str(v)) for v in row.values()) for row in rows),
        numeric=frozenset(range(1, len(headers))),
    )


def _answer(text: str) -> Section:
    return Section("answer", "Bottom line", (Paragraph(text),))


def _subtitle(report: Report | None, tool_version: str) -> str:
    if report is None:
        return f"fsyncbench {tool_version}"
    return (
        f"fsyncbench {report.tool_version}, report schema {report.schema_version}, "
        f"{report.host.hostname}, {report.created_utc}, target {report.host.target.path}"
    )


def _host(report: Report | None) -> tuple[Section, ...]:
    if report is None:
        return ()
    from fsyncbench.report.host_text import host_table

    return (Section("host", "Host", (host_table(report),)),)


def describe_crash(
    outcome: CrashExperiment,
    model_call_ms: float,
    report: Report | None = None,
    tool_version: str = "",
) -> Document:
    """The :class:`Document` of ``fsyncbench crash``: the answer, the kill matrix, the
    journal's commit cost beside a model call of ``model_call_ms``, replay and reorder; the
    host when it is the saved ``report``'s."""
    from fsyncbench.measure import stats

    m = outcome.matrix
    s = stats.summarize(m.journal_commit_ns)
    title = (
        f"Kill matrix: {m.kill_count} real SIGKILLs of a 10-step agent "
        f"(journal {m.effective.label}, SQLite {m.sqlite_version}), {m.elapsed_ns / 1e9:.2f} s"
    )
    _p99, share = _commit_cost(m, model_call_ms)
    commit = (
        f"BEGIN; INSERT step; COMMIT, {m.effective.label}: p50 {fmt_ns(s.p50_ns)}, p99 "
        f"{fmt_ns(s.p99_ns)} over {s.count} commits; against an assumed {model_call_ms:g} ms "
        f"model call per step, the p99 commit adds {share} (set --model-call-ms to your "
        "model's latency)."
    )
    reorder = (
        f"stopped: {outcome.reorder.message}"
        if outcome.reorder.stopped
        else "did NOT stop (non-determinism went undetected)"
    )
    hazards = (
        Paragraph(
            f"{outcome.replay.replay_effects} effects, {outcome.replay.replay_tokens} tokens, "
            f"{outcome.replay.replay_steps_replayed} of {outcome.replay.steps_recorded} steps "
            "answered from the journal.",
            lead="Replay of a completed run:",
        ),
        Paragraph(
            reorder,
            lead="Reordered code after a crash:",
            tone="" if outcome.reorder.stopped else "bad",
        ),
        Paragraph(
            "SIGKILL is process death, not power loss: the page cache survives it, so these "
            "counts do not depend on synchronous (`fsyncbench crash --powerloss MODEL` "
            "simulates a power cut, `fsyncbench powercut` tests a real one)."
        ),
    )
    return Document(
        "fsyncbench crash: what a step journal buys an agent that is killed",
        _subtitle(report, tool_version),
        (
            _answer(crash_answer(outcome, model_call_ms)),
            Section("kill-matrix", title, (_matrix_table(m),)),
            Section("journal-commit", "The journal's commit", (Paragraph(commit),)),
            Section("hazards", "Replay and reorder", hazards),
            *_host(report),
        ),
    )


def describe_power_loss(
    outcome: PowerLossExperiment, report: Report | None = None, tool_version: str = ""
) -> Document:
    """The :class:`Document` of ``fsyncbench crash --powerloss``: the answer, how each cut
    was made, one kill-matrix table per pragma combination; the host when it is the saved
    ``report``'s."""
    title = (
        f"Kill matrix under simulated power loss: {outcome.kill_count} real SIGKILLs of a "
        f"10-step agent, each also a power cut of its machine "
        f"({CUT_EXPLORED.get(outcome.model, outcome.model)} model, "
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
            " Under macos semantics a plain fsync reaches only the drive's cache and only "
            "F_FULLFSYNC flushes it, which SQLite asks for only under PRAGMA fullfsync"
            + (
                " (the /fullfsync journals)."
                if any(m.requested.fullfsync for m in outcome.matrices)
                else ": these journals never do."
            )
        )
    return Document(
        "fsyncbench crash --powerloss: the kill matrix when every kill is a power cut",
        _subtitle(report, tool_version),
        (
            _answer(power_loss_answer(outcome)),
            Section("power-loss", title, (Paragraph(how),)),
            *(
                Section(
                    f"journal-{m.effective.label}",
                    f"journal {m.effective.label}",
                    (_matrix_table(m),),
                )
                for m in outcome.matrices
            ),
            *_host(report),
        ),
    )


def describe(
    result: CrashExperiment | PowerLossExperiment | Report,
    model_call_ms: float,
    tool_version: str = "",
    host: bool = True,
) -> Document:
    """The Document of an experiment, or of a saved report of kind "crash" (raises
    ValueError for one without a kill matrix); ``host`` False leaves out a report's host
    table (the terminal's text: it is in the saved Markdown and HTML)."""
    report = result if isinstance(result, Report) else None
    if report is not None:
        if not host:
            from dataclasses import replace

            doc = describe(result, model_call_ms, tool_version)
            return replace(doc, sections=tuple(x for x in doc.sections if x.key != "host"))
        if report.crash is not None:
            return describe_crash(report.crash, model_call_ms, report)
        if report.crash_power_loss is not None:
            return describe_power_loss(report.crash_power_loss, report)
        raise ValueError(f"a report of kind {report.kind!r} holds no kill matrix")
    if isinstance(result, CrashExperiment):
        return describe_crash(result, model_call_ms, tool_version=tool_version)
    assert isinstance(result, PowerLossExperiment)
    return describe_power_loss(result, tool_version=tool_version)
