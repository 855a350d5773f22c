"""A report's findings in words: one line per finding (:func:`finding_line`, the
terminal's and powercut's), its stance on the path verdict, its evidence as a sentence with
units (:func:`evidence_text`), and the findings section of a description, grouped by code,
most severe first (:func:`findings_section`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from fsyncbench.fmt import fmt_bandwidth, fmt_ns
from fsyncbench.model import Finding, Report
from fsyncbench.report.document import Bullets, Paragraph, Section
from fsyncbench.report.vocabulary import CANNOT_TELL

__all__ = ["evidence_text", "finding_groups", "finding_line", "findings_section", "stance_tag"]


_LEVEL_ORDER = {"risk": 0, "warning": 1, "info": 2}
_LEVEL_WORD = {"risk": "RISK", "warning": "Warning", "info": "Info"}


_LEVEL_MARK = {"risk": "RISK", "warning": "WARN", "info": "info"}


def stance_tag(f: Finding) -> str:
    """``[decides: no_flush, measured]``, ``[disagrees: honest_flush, inferred]``,
    ``[decides: unverifiable]`` (:mod:`fsyncbench.report.vocabulary`); "" for findings that
    are not path signals."""
    if not f.stance:
        return ""
    if f.points_to == CANNOT_TELL:  # a verdict that cannot tell carries no strength
        return f" [{f.stance}: {f.points_to}]"
    return f" [{f.stance}: {f.points_to or '?'}, {f.strength or '?'}]"


def finding_line(f: Finding) -> str:
    """``[RISK] code (subject) [stance: verdict, strength]: message Advice: ...``"""
    return (
        f"[{_LEVEL_MARK.get(f.level, f.level)}] {f.code} ({f.subject}){stance_tag(f)}: "
        f"{f.message} Advice: {f.advice}"
    )


def _strip_subject(f: Finding) -> str:
    prefix = f"{f.subject}: "
    return f.message[len(prefix) :] if f.message.startswith(prefix) else f.message


def evidence_text(evidence: Mapping[str, Any]) -> str:
    """A finding's evidence values as a sentence with units: ``p50_ns=45270.0`` reads
    ``p50 45.3 us``; booleans yes/no, None "unknown", pairs as ranges (``91-100``), a
    mapping in parentheses; per-result
    tables (mappings of mappings) are left out: the report's tables and the JSON have them."""
    return "; ".join(
        f"{_evidence_name(_unit_last(k))} {_evidence_value(_unit_last(k), v)}"
        for k, v in evidence.items()
        if not _nested(v)
    )


_UNIT_INSIDE = re.compile(r"^(?P<what>.+)_(?P<unit>ns|ms|s)_per_(?P<per>.+)$")


def _unit_last(key: str) -> str:
    """A key with its unit inside (``flush_ms_per_flush``) as one with the unit last
    (``flush_time_per_flush_ms``: "flush time per flush 0.047 ms")."""
    m = _UNIT_INSIDE.match(key)
    return f"{m['what']}_time_per_{m['per']}_{m['unit']}" if m else key


def _nested(value: Any) -> bool:
    """Per-result tables inside a finding's evidence (said elsewhere in the report, kept
    whole in the JSON)."""
    return isinstance(value, Mapping) and any(isinstance(v, Mapping) for v in value.values())


_UNIT_SUFFIXES = ("_ns", "_ms", "_bytes_per_s", "_bytes", "_pct", "_per_s", "_s")


def _evidence_name(key: str) -> str:
    for suffix in _UNIT_SUFFIXES:
        if key.endswith(suffix):
            key = key[: -len(suffix)]
            break
    return key.replace("_", " ")


def _evidence_value(key: str, value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return "(" + evidence_text(value) + ")"
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (list, tuple)) and len(v) == 2 for v in value):
            return ", ".join(f"{v[0]}-{v[1]}" for v in value)  # ranges of sequence numbers
        return ", ".join(_evidence_value(key, v) for v in value) or "none"
    if isinstance(value, (int, float)):
        if key.endswith("_ns"):
            return fmt_ns(value)
        if key.endswith("_bytes_per_s"):
            return fmt_bandwidth(value)
        if key.endswith("_per_s"):
            return f"{value:,.0f}/s"
        if key.endswith("_ms"):
            return f"{value:.4g} ms"
        if key.endswith("_s"):
            return f"{value:.4g} s"
        if key.endswith("_bytes"):
            return f"{value:,.0f} bytes"
        if key.endswith("_pct"):
            return f"{value:.3g} %"
        return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"
    return str(value)


def finding_groups(findings: Sequence[Finding]) -> list[tuple[str, str, list[Finding]]]:
    """Findings grouped by code, most severe first: (level, code, findings) in order of
    first appearance within a level."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.code, []).append(f)
    ordered = sorted(
        groups.items(), key=lambda kv: min(_LEVEL_ORDER.get(f.level, 3) for f in kv[1])
    )
    return [
        (min((f.level for f in fs), key=lambda lv: _LEVEL_ORDER.get(lv, 3)), code, fs)
        for code, fs in ordered
    ]


def findings_section(report: Report) -> Section:
    """One item per finding code, with the configurations it applies to: identical
    messages are said once for all their subjects, the advice once per code, the evidence
    as sentences with units, the source of a threshold where there is one."""
    items = []
    for level, code, fs in finding_groups(report.verdict.findings):
        by_message: dict[str, list[Finding]] = {}
        for f in fs:
            by_message.setdefault(_strip_subject(f) + stance_tag(f), []).append(f)
        subs = []
        for message, same in by_message.items():
            subjects = ", ".join(f.subject for f in same)
            line = f"{subjects}: {message}"
            if len(same) == 1 and same[0].evidence:
                line += f" Evidence: {evidence_text(same[0].evidence)}."
            subs.append(line)
        advice = sorted({f.advice for f in fs if f.advice})
        sources = sorted({f.source for f in fs if f.source})
        text = ("Advice: " + " ".join(advice) if advice else "") + (
            f" Source: {'; '.join(sources)}." if sources else ""
        )
        tone = {"risk": "bad", "warning": "caution"}.get(level, "")
        items.append(
            (
                Paragraph(
                    text.strip(), lead=f"{_LEVEL_WORD.get(level, level)} `{code}`:", tone=tone
                ),
                tuple(subs),
            )
        )
    if not items:
        return Section("findings", "Findings", (Paragraph("No findings."),))
    return Section("findings", "Findings", (Bullets(tuple(items)),))
