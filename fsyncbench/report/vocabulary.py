"""The words every format says one thing with: text, Markdown, HTML and the JSON of
``compare``/``fleet`` read them from here, so a configuration is not "NO" on one screen
and "not stated" on another, nor a verdict "unverifiable" and "measured" at once.

- A configuration's **promise** (does SQLite promise each acknowledged commit survives a
  power cut?): ``durable``, ``not durable``, ``not stated``
  (:mod:`fsyncbench.judge.promises`, which cites the documentation) or ``-`` (not a commit).
- A **verdict** with how it was established (``measured``, ``inferred``, ``proven``), except
  ``unverifiable``: a verdict that says the machine cannot tell is not itself measured or
  inferred; its phrase names what decided it instead.
"""

from __future__ import annotations

from fsyncbench.judge.promises import DURABLE, NOT_DURABLE, NOT_STATED, documented
from fsyncbench.model import NO_FLUSH, VOLATILE_CACHE, Report, Result, ResultVerdict, Verdict

__all__ = [
    "CANNOT_TELL",
    "DURABLE",
    "LOSES_FLUSHES",
    "NOT_DURABLE",
    "NOT_STATED",
    "PROMISE_HEADER",
    "STRENGTH_DEFINITION",
    "STRENGTH_MEANING",
    "VERDICT_MEANING",
    "promise",
    "promise_of",
    "promise_tone",
    "strength_word",
    "verdict_cell",
    "verdict_phrase",
]

#: The column that holds :func:`promise` in every table.
PROMISE_HEADER = "durable"

#: What each verdict strength means (fsyncbench.model.STRENGTHS), for the method section.
STRENGTH_DEFINITION = {
    "proven": "a real power cut showed it",
    "measured": "timings or counters taken here showed it",
    "inferred": "reasoned from facts read here (a model string, a latency floor), not measured",
}

#: How each verdict strength reads in a sentence (fsyncbench.model.STRENGTHS).
STRENGTH_MEANING = {
    "proven": "proven by a power cut",
    "measured": "measured",
    "inferred": "inferred, not measured",
    "none": "nothing decided it",
}

#: One sentence per path verdict, for readers who have not seen the vocabulary.
VERDICT_MEANING = {
    "no_flush": "Syncs never reach stable storage here.",
    "volatile_cache": "Syncs return once data sits in a volatile cache.",
    "unverifiable": "Nothing visible from here can tell whether flushes are honoured.",
    "honest_flush": "Facts and timings are consistent with stable media.",
}

#: The path verdicts under which syncs do not reach stable media: a promise does not hold.
LOSES_FLUSHES = (NO_FLUSH, VOLATILE_CACHE)

#: The verdict that says the machine cannot tell: it carries no strength of its own.
CANNOT_TELL = "unverifiable"


def verdict_phrase(path_verdict: str, strength: str, decided_by: str) -> str:
    """``honest_flush, inferred, not measured (decided by flush-latency-plausible)``;
    ``unverifiable (decided by virtualized-storage)``: no strength beside a verdict that
    cannot tell. The strength is left out for reports written before it was recorded."""
    how = "" if path_verdict == CANNOT_TELL else STRENGTH_MEANING.get(strength, strength)
    return f"{path_verdict}" + (f", {how}" if how else "") + f" (decided by {decided_by})"


def verdict_cell(v: Verdict | ResultVerdict) -> str:
    """``honest_flush (inferred)``; ``unverifiable`` alone (:func:`verdict_phrase`)."""
    if v.path_verdict == CANNOT_TELL or not v.strength:
        return v.path_verdict
    return f"{v.path_verdict} ({v.strength})"


def strength_word(v: Verdict | ResultVerdict) -> str:
    """A verdict's strength for a table cell: ``-`` beside ``unverifiable`` (and where
    none was recorded)."""
    return "-" if v.path_verdict == CANNOT_TELL or not v.strength else v.strength


def promise(config_durable: bool | None, result: Result | None, os_name: str) -> str:
    """What a commit configuration's pragmas promise after a power cut: ``durable`` where
    the judge found them durable (``config_durable`` True), else ``not stated`` where the
    documentation leaves it open (:func:`fsyncbench.judge.promises.documented` of the
    result's pragmas on ``os_name``), else ``not durable``; ``-`` for what is not a commit
    configuration (``config_durable`` None)."""
    if config_durable is None:
        return "-"
    if config_durable:
        return DURABLE
    pragmas = None if result is None else (result.effective or result.requested)
    if pragmas is not None and documented(pragmas, os_name).durable == NOT_STATED:
        return NOT_STATED
    return NOT_DURABLE


def promise_of(report: Report, name: str) -> str:
    """:func:`promise` of the configuration ``name`` in ``report``."""
    v = next((v for v in report.verdict.results if v.subject == name), None)
    r = next((r for r in report.results if r.name == name), None)
    return promise(None if v is None else v.config_durable, r, report.host.os_name)


def promise_tone(word: str) -> str:
    """The tone of a :func:`promise` cell: good for durable, bad for the others."""
    return {DURABLE: "good", NOT_DURABLE: "bad", NOT_STATED: "bad"}.get(word, "")
