"""Simulated power loss (``fsyncbench powerloss``, ``run --powerloss``) as document
blocks: the table of acknowledged commits lost per configuration and persistence model
beside SQLite's documented promise, the worst state of each, and the method. Laid out by
the same text, Markdown and HTML renderers as every report
(:func:`fsyncbench.report.render_document`); the JSON is the result's own fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from fsyncbench.fmt import fmt_ns
from fsyncbench.model import (
    HONEST_FLUSH,
    NO_LOSS_UNDER_MODEL,
    SCHEMA_VERSION,
    PowerlossConfig,
    PowerlossModelOutcome,
    PowerlossResult,
    Report,
    Result,
)
from fsyncbench.report.document import (
    Block,
    Bullets,
    Cell,
    Document,
    Paragraph,
    Section,
    Table,
)
from fsyncbench.report.loss_fs import filesystems_blocks

#: What the models cannot see; said in every powerloss output.
NOT_COVERED = (
    "These figures are about SQLite's own writes and syncs, not about the storage under the "
    "directory given (it only holds the recordings: tmpfs gives the same figures). "
    "The models trust every honoured sync: storage that acknowledges a flush it did not "
    "make (a drive's volatile cache, a VM host's page cache, eatmydata), firmware bugs and "
    "media errors are not simulated; `fsyncbench audit` judges this machine's syncs and "
    "`fsyncbench powercut` pulls a real plug."
)

MODEL_TEXT = {
    "synced-only": "only synced data survives; a created or deleted file's directory entry "
    "only after a directory sync (the most POSIX lets a cut take, though not the most "
    "damaging state: losing only some unsynced writes, as subset does, can corrupt where "
    "losing all of them does not)",
    "prefix": "operations persist in issue order up to any point after the last honoured "
    "sync (an ordered filesystem)",
    "subset": "each write, truncation and directory change since the last sync is "
    "independently kept or lost (not SQLite's crash test: test6 never loses a directory "
    "change and also trashes sectors)",
    "torn": "as subset, and writes tear at sector boundaries, a torn partial sector "
    "destroying the rest of it with zeros (needs powersafe overwrite off)",
    "torn-garbage": "as torn, the destroyed sectors holding random bytes instead of zeros "
    "(needs powersafe overwrite off)",
    "test6": "SQLite's crash VFS (src/test6.c): each unsynced write written, left out or its "
    "sectors overwritten with random garbage, each truncation applied or not, files created "
    "and deleted at once (needs powersafe overwrite off)",
}


#: What each persistence semantics honours, in one phrase
#: (:data:`fsyncbench.powerloss.models.SEMANTICS`, whose docstring has the sources).
SEMANTICS_SAY = {
    "linux": "every sync honoured",
    "macos": "a plain fsync, every directory sync included, reaches only the drive's cache; "
    "a sync with SQLITE_SYNC_FULL is F_FULLFSYNC, which flushes that cache whole",
    "windows": "no directory syncs; a file's FlushFileBuffers persists its data and its own "
    "name's directory changes",
}


def _lost(m: PowerlossModelOutcome) -> str:
    if m.invalid:
        return "invalid"
    if m.sampled:  # a lower bound: the states not drawn may lose more
        return f">= {m.worst_lost}" if m.worst_lost else "0 seen (sampled)"
    return str(m.worst_lost)


def loss_phrase(m: PowerlossModelOutcome, commits: int = 0, bound: str = "") -> str:
    """``loses 0``, ``loses up to 10 acknowledged commits``, ``corrupt in 3 states``, and
    for sampled states ``loses at least 1`` / ``no loss seen in 254 sampled states``;
    ``commits``: how many were recorded (losing all of several is open-ended); ``bound``:
    where "more commits would lose more" stops (:func:`checkpoint_bound`), "" if nowhere."""
    if m.invalid:
        return f"not simulated ({m.model}): {m.invalid}"
    parts = []
    plural = "s" * (m.worst_lost > 1)
    if commits > 1 and m.worst_lost >= commits:
        parts.append(
            f"loses all {commits} acknowledged commits recorded (every commit since the last "
            f"sync: more commits would lose more{bound})"
        )
    elif m.worst_lost:
        bound = "at least" if m.sampled else "up to"
        parts.append(f"loses {bound} {m.worst_lost} acknowledged commit{plural}")
    if m.corrupt_states:
        parts.append(f"corrupt in {m.corrupt_states} of {m.states} states")
    if not parts:
        parts.append(f"no loss seen in {m.states} sampled states" if m.sampled else "loses 0")
    return ", ".join(parts) + f" ({m.model}{', sampled' if m.sampled else ''})"


def checkpoint_bound(c: PowerlossConfig, wal_autocheckpoint: int | None) -> str:
    """Where WAL/NORMAL's "more commits would lose more" stops: at the next checkpoint,
    which syncs the WAL and the database (https://www.sqlite.org/wal.html#checkpointing;
    every ``wal_autocheckpoint`` WAL pages, None: SQLite's 1000). "" for every other
    configuration (synchronous=OFF never syncs; the others lose a bounded few)."""
    if (c.pragmas.journal_mode, c.pragmas.synchronous) != ("WAL", "NORMAL"):
        return ""
    pages = 1000 if wal_autocheckpoint is None else wal_autocheckpoint
    if pages <= 0:
        return " (automatic checkpoints off: until the connection closes)"
    return (
        f", but only up to the next checkpoint, every {pages:,} WAL pages "
        "(PRAGMA wal_autocheckpoint; --wal-autocheckpoint), which syncs"
    )


def _crossed(c: PowerlossConfig) -> str:
    """``; the recording crossed 3 checkpoints and 2 WAL restarts`` in WAL mode when it
    checkpointed before the close; "" otherwise."""
    if c.checkpoints <= 1 and not c.wal_restarts:
        return ""
    since = (
        ", so a cut loses at most the commits since the last checkpoint"
        if c.pragmas.synchronous == "NORMAL"
        else ""
    )
    return (
        f"; the recording crossed {c.checkpoints} checkpoints (the close's included) and "
        f"{c.wal_restarts} WAL restarts{since}"
    )


def _share(part: int, whole: int) -> str:
    """``28 (56%)``: a count and its share of ``whole``."""
    return f"{part} ({100 * part / whole:.0f}%)" if whole else str(part)


def _tone(agreement: str) -> str:
    return {"DISAGREES": "bad", "agrees": "", NO_LOSS_UNDER_MODEL: "caution"}.get(agreement, "")


def _unproven(m: PowerlossModelOutcome) -> str:
    """`` (checker missed half-index)`` where the checker did not flag every known-corrupt
    state of this trace; "" where it did, or no proof was recorded (older reports)."""
    if m.invalid or not m.known_corrupt or m.checker_proven:
        return ""
    return f" (checker missed {m.known_corrupt_missed})"


def proof_paragraph(result: PowerlossResult) -> Paragraph | None:
    """What the checker did with the known-corrupt states of every trace
    (:mod:`fsyncbench.powerloss.proofs`): None for a report without them."""
    checked = [m for c in result.configs for m in c.models if not m.invalid and m.known_corrupt]
    if not checked:
        return None
    known = sum(m.known_corrupt for m in checked)
    flagged = sum(m.known_corrupt_flagged for m in checked)
    missed = [
        f"{c.pragmas.label} {m.model}: {m.known_corrupt_missed}"
        for c in result.configs
        for m in c.models
        if m in checked and not m.checker_proven
    ]
    text = (
        f"the checker flagged {flagged} of {known} known-corrupt states built from the same "
        "traces (per configuration x model: the last database write batch without its "
        "index pages and with the journal's header lost, a garbage sector in the table's "
        "root page, a row rewritten in place, an empty database file; "
        "fsyncbench/powerloss/proofs.py)"
    )
    if missed:
        return Paragraph(
            text + ". It missed " + "; ".join(missed) + ": a corrupt count of 0 here is no "
            "evidence that nothing was corrupt.",
            lead="Checker proof:",
            tone="bad",
        )
    return Paragraph(
        text + ", so a corrupt count of 0 means no state the models made failed the same checks.",
        lead="Checker proof:",
    )


def _documented(c: PowerlossConfig) -> str:
    """What is expected of ``c`` (documentation, else observation)."""
    durable = "durable" if c.documented_durable else "not durable"
    return durable + ("" if c.documented_consistent else ", may corrupt")


def _sources(c: PowerlossConfig) -> tuple[str, str]:
    """The documentation's and the recording's word on ``c``, as table cells; a report
    written before they were kept apart has only the expectation, shown as documented."""
    if c.documentation is None or c.observation is None:
        return _documented(c), "-"
    return c.documentation.short(), c.observation.short()


#: The columns of :func:`loss_table` a brief screen keeps: configuration, model, lost
#: (worst, mean), corrupt, documented, measured vs expected.
BRIEF_COLUMNS = (0, 1, 4, 5, 7, 8, 10)


def loss_table(result: PowerlossResult, brief: bool = False) -> Table:
    """One row per configuration x model: crash points, states checked (distinct),
    acknowledged commits lost (worst, mean over sound states, states losing any), corrupt
    states, the documented promise and whether the measurement agrees; ``brief``: only
    :data:`BRIEF_COLUMNS`, and a one-sentence caption."""
    rows = []
    for c in result.configs:
        for m in c.models:
            agree = c.agreement(m)
            rows.append(
                (
                    Cell(c.pragmas.label),
                    Cell(m.model),
                    Cell(str(m.crash_points)),
                    Cell("-" if m.invalid else f"{m.states} ({m.distinct_states})"),
                    Cell(_lost(m), "bad" if m.worst_lost and c.documented_durable else ""),
                    Cell("-" if m.invalid else f"{m.mean_lost:.2f}"),
                    Cell("-" if m.invalid else _share(m.states_losing, m.states)),
                    Cell(
                        "-" if m.invalid else str(m.corrupt_states) + _unproven(m),
                        "bad" if m.corrupt_states or _unproven(m) else "",
                    ),
                    Cell(_sources(c)[0]),
                    Cell(_sources(c)[1]),
                    Cell(
                        (agree + (" (sampled states)" if m.sampled else ""))
                        if agree
                        else m.invalid.split(":")[0],
                        _tone(agree),
                    ),
                )
            )
    table = Table(
        (
            "configuration",
            "model",
            "crash points",
            "states (distinct)",
            "lost, worst",
            "lost, mean",
            "states losing",
            "corrupt",
            "documented",
            "observed",
            "measured vs expected",
        ),
        tuple(rows),
        numeric=frozenset({2, 3, 4, 5, 6, 7}),
        caption=(
            f"Acknowledged commits lost after a simulated power cut, {result.commits} commits "
            f"per configuration ({result.semantics} semantics). '>=' and 'sampled' mark "
            "figures from sampled states: lower bounds, the states not drawn may lose more. "
            "Documented: SQLite's documentation (source code where it is silent), observed: "
            "whether this recording synced each commit point before its acknowledgement; each "
            "with its source below. Expected: the documentation where it states durability, "
            "else the observation."
        ),
        keys=2,
    )
    if not brief:
        return table
    keep = BRIEF_COLUMNS
    return Table(
        tuple(table.headers[i] for i in keep),
        tuple(tuple(row[i] for i in keep) for row in table.rows),
        numeric=frozenset(j for j, i in enumerate(keep) if i in table.numeric),
        caption=(
            f"Acknowledged commits lost after a simulated power cut, {result.commits} commits "
            f"per configuration ({result.semantics} semantics):"
        ),
        keys=2,
    )


def _answer(result: PowerlossResult, latency: dict[str, Result] | None = None) -> Section:
    items: list[tuple[Paragraph, tuple[str, ...]]] = []
    for c in result.configs:
        r = (latency or {}).get(c.pragmas.label)
        cost = f"{fmt_ns(r.summary.p50_ns)} p50, " if r is not None else ""
        valid = [m for m in c.models if not m.invalid]
        if not valid:
            reasons = "; ".join(loss_phrase(m) for m in c.models)
            items.append((Paragraph(reasons, lead=f"{c.pragmas.label}:", tone="caution"), ()))
            continue
        worst = max(valid, key=lambda m: (m.corrupt_states > 0, m.worst_lost))
        agree = c.agreement(worst)
        bound = checkpoint_bound(c, result.wal_autocheckpoint)
        said = (
            f"documented {_documented(c)}"
            if c.documentation is None or c.observation is None
            else f"documented {c.documentation.short()}; observed {c.observation.short()}"
        )
        text = f"{cost}{loss_phrase(worst, c.commits, bound)}{_crossed(c)}; {said}"
        if agree == "DISAGREES":
            text += ": the measurement DISAGREES with what is expected"
        elif agree == NO_LOSS_UNDER_MODEL:
            names = ", ".join(m.model for m in valid)
            text += (
                f": nothing lost under {names}, which does not make it durable (the "
                "documentation allows losses that other models or real storage may show)"
            )
        tone = _tone(agree) or ("good" if not worst.loses else "")
        items.append((Paragraph(text, lead=f"{c.pragmas.label}:", tone=tone), ()))
    blocks: list[Block] = []
    disagree = [
        f"{c.pragmas.label} ({m.model})"
        for c in result.configs
        for m in c.models
        if c.agreement(m) == "DISAGREES"
    ]
    if disagree:
        blocks.append(
            Paragraph(
                "Losses where durability or consistency is expected (SQLite's documentation, "
                "else the recording's own syncs): " + ", ".join(disagree) + ".",
                lead="Finding:",
                tone="bad",
            )
        )
    proof = proof_paragraph(result)
    if proof is not None and proof.tone == "bad":
        blocks.append(proof)
    blocks += [Bullets(tuple(items)), Paragraph(NOT_COVERED)]
    return Section(
        "powerloss", "Simulated power loss: what each configuration loses", tuple(blocks)
    )


def _worst_states(result: PowerlossResult) -> Block:
    items = []
    for c in result.configs:
        for m in c.models:
            if m.worst:
                kept = f" Kept in {m.kept_at}." if m.kept_at else ""
                items.append((Paragraph(m.worst + kept, lead=f"{c.pragmas.label}, {m.model}:"), ()))
    if items:
        return Bullets(tuple(items))
    if not any(m.states for c in result.configs for m in c.models):
        return Paragraph("No state was examined: every model here was invalid.")
    return Paragraph("No state lost an acknowledged commit or was corrupt.")


def _grouped(pairs: list[tuple[str, str]]) -> Bullets:
    """One bullet per distinct text, led by the configurations that share it."""
    groups: dict[str, list[str]] = {}
    for label, text in pairs:
        groups.setdefault(text, []).append(label)
    return Bullets(
        tuple(
            (Paragraph(text, lead=", ".join(labels) + ":"), ()) for text, labels in groups.items()
        )
    )


def _claims(result: PowerlossResult) -> tuple[Block, ...]:
    """The documentation and the observation of every configuration, apart, each with its
    source; () for a report written before they were kept apart."""
    configs = [c for c in result.configs if c.documentation and c.observation]
    if not configs:
        return ()
    docs = [
        (
            c.pragmas.label,
            f"{c.documentation.short()}: {c.documentation.why} ({c.documentation.source})",
        )
        for c in configs
        if c.documentation is not None
    ]
    seen = [
        (c.pragmas.label, f"{c.observation.short()}: {c.observation.why} ({c.observation.source})")
        for c in configs
        if c.observation is not None
    ]
    return (
        Paragraph(
            "What SQLite's documentation says of each configuration (SQLite's or the "
            "platform's source where it is silent, marked so):",
            lead="Documented.",
        ),
        _grouped(docs),
        Paragraph(
            "Whether each acknowledged commit's last change (its commit point) was synced "
            "before the acknowledgement in the recording, under the semantics simulated:",
            lead="Observed.",
        ),
        _grouped(seen),
        Paragraph(
            "The figures are compared with the documentation where it states durability, "
            "else with the observation; a configuration the documentation says may corrupt "
            "is not expected to stay consistent.",
            lead="Expected.",
        ),
    )


def _method(result: PowerlossResult) -> tuple[Block, ...]:
    models = Bullets(tuple((Paragraph(MODEL_TEXT[m], lead=f"{m}:"), ()) for m in result.models))
    claims = _claims(result)
    reasons: dict[str, list[str]] = {}
    for c in result.configs:
        if c.documented_why:
            reasons.setdefault(c.documented_why, []).append(c.pragmas.label)
    documented = Bullets(
        tuple((Paragraph(why, lead=", ".join(labels) + ":"), ()) for why, labels in reasons.items())
    )
    return (
        Paragraph(
            f"Each configuration ran {result.commits} commits of the step journal (BEGIN; "
            f"INSERT one {result.payload_bytes}-byte step row; COMMIT) through a recording "
            "SQLite VFS; the directory syncs SQLite's unix VFS makes itself are modelled "
            "(src/os_unix.c). Crash points: before each sync, after each acknowledged commit, "
            "after the last operation. Each rebuilt state was opened by SQLite (hot-journal "
            "rollback, WAL recovery), checked with PRAGMA integrity_check, and every row "
            "compared with what its commit wrote; corrupt states are left out of the loss "
            "figures."
        ),
        models,
        *((proof,) if (proof := proof_paragraph(result)) is not None else ()),
        Paragraph(
            f"Semantics {result.semantics} ({SEMANTICS_SAY.get(result.semantics, '')})"
            + f"; torn and trashed sectors {result.sector_bytes} B; subset, torn, torn-garbage "
            f"and test6 enumerate up to "
            f"{result.max_states} states per crash point, else {result.samples} seeded samples "
            f"(seed {result.seed}). WAL autocheckpoint: "
            + (
                "SQLite's default, 1,000 pages"
                if result.wal_autocheckpoint is None
                else f"{result.wal_autocheckpoint:,} pages"
            )
            + f". Recorded with SQLite {result.sqlite_version} (apsw "
            f"{result.apsw_version}); Python's sqlite3 here is SQLite "
            f"{result.stdlib_sqlite_version}. {result.elapsed_ns / 1e9:.1f} s."
        ),
        *(
            claims
            or (
                Paragraph(
                    "From https://www.sqlite.org/pragma.html#pragma_synchronous and "
                    "https://www.sqlite.org/wal.html, for the platform simulated"
                    + (
                        "; every configuration not listed is documented as durable and consistent:"
                        if reasons
                        else ": every configuration here is documented as durable and consistent."
                    ),
                    lead="Documented promise.",
                ),
                *((documented,) if reasons else ()),
            )
        ),
    )


def powerloss_sections(
    result: PowerlossResult, latency: Sequence[Result] = (), path_verdict: str = ""
) -> tuple[Section, ...]:
    """The answer (one line per configuration, with its p50 from ``latency`` when given:
    cost beside loss), the table, the worst states and the method. ``path_verdict``: the
    storage path's verdict where the run judged one; unless it is honest_flush the answer
    says the loss figures hold only if this storage honours its flushes."""
    by_label = {r.requested.label: r for r in latency if r.requested is not None}
    answer = _answer(result, by_label)
    if latency and result.sqlite_version != result.stdlib_sqlite_version:
        answer = dataclasses.replace(
            answer,
            blocks=(
                Paragraph(
                    f"The latency is of Python's sqlite3 (SQLite {result.stdlib_sqlite_version});"
                    f" the losses were recorded with apsw's SQLite {result.sqlite_version}: "
                    "where their journaling differs, so may the losses.",
                    tone="caution",
                ),
                *answer.blocks,
            ),
        )
    if path_verdict and path_verdict != HONEST_FLUSH:
        answer = dataclasses.replace(
            answer,
            blocks=(
                Paragraph(
                    f"This storage path's verdict is {path_verdict}: the simulation assumes "
                    "every sync reaches stable media, so a 'loses 0' below holds here only "
                    "if the flushes are honoured.",
                    tone="caution",
                ),
                *answer.blocks,
            ),
        )
    return (
        answer,
        Section(
            "powerloss-table", "Commits lost per configuration and model", (loss_table(result),)
        ),
        Section(
            "powerloss-filesystems",
            "Which filesystems can leave each model's states",
            filesystems_blocks(result.models),
        ),
        Section("powerloss-worst", "The worst state of each", (_worst_states(result),)),
        Section("powerloss-method", "How the power cuts were simulated", _method(result)),
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + "s" * (n != 1)


def describe_powerloss(result: PowerlossResult, tool_version: str, brief: bool = False) -> Document:
    """The :class:`Document` of ``fsyncbench powerloss``; ``brief`` (the terminal's
    default): the answer and the loss table's main columns, then where the rest is."""
    sections = tuple(s for s in powerloss_sections(result) if s.blocks)
    if brief:
        sections = (
            sections[0],
            Section(
                "powerloss-table",
                "Commits lost per configuration and model",
                (
                    loss_table(result, brief=True),
                    Paragraph(
                        "crash points, states, states losing, what the recording observed, "
                        "which filesystems leave each model's states, the worst state of each "
                        "and the method: --verbose, or --format markdown.",
                        lead="More:",
                    ),
                ),
            ),
        )
    return Document(
        f"fsyncbench powerloss: simulated power cuts ({result.semantics} semantics)",
        f"fsyncbench {tool_version}, report schema {SCHEMA_VERSION}, "
        f"{_count(len(result.configs), 'configuration')} x {_count(len(result.models), 'model')}",
        sections,
    )


def run_report_sections(report: Report) -> tuple[Section, ...]:
    """The powerloss sections of a ``run --powerloss`` report (none without it)."""
    if report.powerloss is None:
        return ()
    return powerloss_sections(report.powerloss, report.results, report.verdict.path_verdict)
