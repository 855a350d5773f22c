"""What ``fsyncbench powercut verify`` prints (:func:`render_verify`), and a saved verify
report as a :class:`~fsyncbench.report.document.Document`: the verify result first, then what
the listener recorded and the journal holds, the findings and the host. Rendered by the same
text, Markdown and HTML renderers as run and audit reports
(:func:`fsyncbench.report.render_document`).
"""

from __future__ import annotations

from typing import Any

from fsyncbench.model import Report
from fsyncbench.powercut import ranges as R
from fsyncbench.powercut.judgement import Judgement, PowercutFacts
from fsyncbench.report import layout
from fsyncbench.report.document import Cell, Document, Paragraph, Section, Table
from fsyncbench.report.findings_text import finding_line, findings_section
from fsyncbench.report.host_text import host_table
from fsyncbench.report.vocabulary import verdict_phrase


def describe_powercut(report: Report) -> Document:
    """The :class:`Document` of a saved ``powercut verify`` report (kind "powercut"): the
    same Result line verify printed (PASS / FAIL / INCONCLUSIVE, from
    :mod:`fsyncbench.powercut.judgement`) and the path verdict first, then the facts the report
    keeps (run, listener, journal, integrity, lost and out-of-order commits), the findings,
    host and notes. It has no latency table: a powercut report holds no timed results."""
    v = report.verdict
    findings = v.findings
    codes = {f.code for f in findings}
    outcome = (
        "pass"
        if "powercut-survived" in codes
        else "inconclusive"
        if "powercut-nothing-acknowledged" in codes
        else "fail"
    )
    # the run's facts travel in the evidence of the lost / survived / nothing finding
    ev = next(
        (
            f.evidence
            for f in findings
            if isinstance(f.evidence, dict) and "acknowledged_ranges" in f.evidence
        ),
        {},
    )

    def spans(key: str) -> list[tuple[int, int]]:
        return [(int(r[0]), int(r[1])) for r in ev.get(key) or ()]

    acked, present, lost, holes = (
        spans(k) for k in ("acknowledged_ranges", "present_ranges", "lost_ranges", "hole_ranges")
    )
    first = v.results[0] if v.results else None
    label = first.subject if first else ev.get("config", "?")
    durable = bool(first.config_durable) if first else False
    jm = Judgement(
        outcome,
        v.path_verdict,
        v.decided_by,
        durable,
        tuple(lost),
        tuple(holes),
        int(ev.get("committed_not_acknowledged") or 0),
        findings,
        v.strength,
    )
    integrity = ev.get("integrity_check") or next(
        (
            f.evidence.get("integrity_check")
            for f in findings
            if f.code == "powercut-journal-corrupt" and isinstance(f.evidence, dict)
        ),
        None,
    )

    rows: list[tuple[str, str]] = []
    if ev:
        rebooted: dict[bool | None, str] = {
            True: "yes (the boot id changed since the writer started)",
            False: "NO (same boot as the writer: no power cut happened)",
        }
        rows += [
            (
                "run",
                f"{ev.get('run_id', '?')} ({label}, sync primitive "
                f"{ev.get('sync_primitive', '?')})",
            ),
            (
                "writer",
                f"stopped cleanly: {ev['clean_stop']}"
                if ev.get("clean_stop")
                else "no clean stop (running when it ended)",
            ),
            ("rebooted", rebooted.get(ev.get("rebooted"), "unknown")),
            (
                "listener",
                f"{ev.get('listener', '?')}: {R.count(acked):,} acknowledged commits "
                f"({R.format_ranges(acked, 5)})",
            ),
            ("journal", str(ev.get("database", "?"))),
        ]
        if ev.get("journal_exists") is False:
            rows.append(("", "MISSING (the database file is gone)"))
        elif ev.get("journal_error"):
            rows.append(("", f"unreadable: {ev['journal_error']}"))
        else:
            line = f"{R.count(present):,} commits present ({R.format_ranges(present, 5)})"
            if ev.get("journal_note"):
                line += f"; {ev['journal_note']}"
            if jm.unacknowledged:
                line += f"; {jm.unacknowledged:,} committed but not acknowledged (normal)"
            rows.append(("", line))
    else:
        rows.append(("run", label))
    if integrity is not None:
        rows.append(
            (
                "integrity",
                "ok"
                if list(integrity) == ["ok"]
                else ("not run" if not integrity else "; ".join(list(integrity)[:5])),
            )
        )
    rows.append(
        (
            "lost",
            "none"
            if not lost
            else f"{R.count(lost):,} acknowledged commits: {R.format_ranges(lost)}",
        )
    )
    if holes:
        rows.append(
            ("holes", f"unacknowledged commits missing below later ones: {R.format_ranges(holes)}")
        )

    title = f"fsyncbench powercut verify: {report.host.hostname}, {report.created_utc}"
    subtitle = (
        f"fsyncbench {report.tool_version}, report schema {report.schema_version}, "
        f"target {report.host.target.path}"
    )
    result = headline(jm, R.count(acked))
    verdict = (
        f"Path verdict for {label}: "
        + verdict_phrase(v.path_verdict, v.strength, v.decided_by)
        + "."
    )
    tone = {"pass": "good", "inconclusive": "caution"}.get(outcome, "bad")
    answer = Section(
        "answer",
        "Result",
        (
            Paragraph(result.removeprefix("Result: "), lead="Result:", tone=tone),
            Paragraph(verdict),
            *(Paragraph(n, lead="Note:", tone="caution") for n in report.notes),
        ),
    )
    facts = Section(
        "facts",
        "What the listener recorded and the journal holds",
        (Table(("field", "value"), tuple((Cell(k), Cell(val)) for k, val in rows)),),
    )
    return Document(
        title,
        subtitle,
        (
            answer,
            facts,
            findings_section(report),
            Section("host", "Host and storage stack", (host_table(report),)),
        ),
    )


def render(report: Report, fmt: str) -> str:
    """A powercut report as ``fmt`` (one of :data:`fsyncbench.report.FORMATS`), from
    :func:`describe_powercut`. Raises ValueError for another format."""
    from fsyncbench.report import render_document

    return render_document(describe_powercut(report), fmt, report)


def render_verify(f: PowercutFacts, jm: Judgement, info: dict[str, Any], notes: list[str]) -> str:
    """The result of ``powercut verify`` as text, as it prints it: facts, lost sequence
    numbers, result, verdict, findings, notes (``info``: the listener's record of the run)."""
    j = f.journal
    n_acked = R.count(list(f.acknowledged))
    if not j.exists:
        journal_line = "MISSING (the database file is gone)"
    elif j.error:
        journal_line = f"unreadable: {j.error}"
    else:
        journal_line = (
            f"{R.count(list(j.present)):,} commits present ({R.format_ranges(list(j.present), 5)})"
        )
        if j.note:
            journal_line += f"; {j.note}"
        if jm.unacknowledged:
            journal_line += f"; {jm.unacknowledged:,} committed but not acknowledged (normal)"
    rebooted = {
        True: "yes (the boot id changed since the writer started)",
        False: "NO (same boot as the writer: no power cut happened)",
        None: "unknown",
    }[f.rebooted]
    rows = [
        ("run", f"{f.run_id} ({f.config.label}, sync primitive {f.primitive})"),
        (
            "writer",
            f"host {info['host']}, pid {info['pid']}, started {info['started_utc']}; "
            + (
                f"stopped cleanly: {f.clean_stop}"
                if f.clean_stop
                else "no clean stop (running when it ended)"
            ),
        ),
        ("rebooted", rebooted),
        (
            "listener",
            f"{f.listener}: {n_acked:,} acknowledged commits "
            f"({R.format_ranges(list(f.acknowledged), 5)})",
        ),
        ("journal", f"{j.path}"),
        ("", journal_line),
        (
            "integrity",
            "ok"
            if j.integrity == ("ok",)
            else ("not run" if not j.integrity else "; ".join(j.integrity[:5])),
        ),
        (
            "lost",
            "none"
            if not jm.lost
            else f"{R.count(list(jm.lost)):,} acknowledged commits: {R.format_ranges(list(jm.lost))}",
        ),
    ]
    if jm.holes:
        rows.append(
            (
                "holes",
                f"unacknowledged commits missing below later ones: "
                f"{R.format_ranges(list(jm.holes))}",
            )
        )
    out = ["fsyncbench powercut verify"]
    out += ["  " + line for line in layout.fit_pairs(rows, layout.width() - 2)]
    out.append("")
    out += layout.wrap(headline(jm, n_acked), "", "  ")
    out += layout.wrap(
        f"Path verdict for {f.config.label}: "
        + verdict_phrase(jm.path_verdict, jm.strength, jm.decided_by),
        "",
        "  ",
    )
    for finding in jm.findings:
        out += layout.wrap(finding_line(finding), "  ", "    ")
    for note in notes:
        out += layout.wrap(f"Note: {note}", "", "  ")
    return "\n".join(out) + "\n"


#: The findings that decide a verify saw no power cut: the writer stopped cleanly first, or
#: the machine never rebooted (a pass then proves nothing of power loss).
NO_POWER_CUT = frozenset({"powercut-clean-stop", "powercut-no-reboot"})


def headline(jm: Judgement, n_acked: int) -> str:
    """The Result line: PASS, INCONCLUSIVE or FAIL of ``n_acked`` acknowledged commits, and
    for a FAIL whether the loss is the storage's or the configuration's."""
    if jm.outcome == "pass":
        proved_nothing = jm.decided_by in NO_POWER_CUT
        return (
            f"Result: PASS: all {n_acked:,} acknowledged commits survived and the journal "
            "is intact"
            + (
                ", but no power cut came between writing and verifying: this run says "
                "nothing about power loss."
                if proved_nothing
                else "."
            )
        )
    if jm.outcome == "inconclusive":
        return "Result: INCONCLUSIVE: the listener holds no acknowledged commit of this run."
    what = (
        f"{R.count(list(jm.lost)):,} of {n_acked:,} acknowledged commits are lost"
        if jm.lost
        else "the journal did not survive intact"
    )
    if jm.config_durable:
        return f"Result: FAIL: {what}: the storage acknowledged writes it did not keep."
    return (
        f"Result: FAIL: {what}; this configuration does not promise power-loss "
        "durability, so the loss is the configuration's, not proof against the storage."
    )
