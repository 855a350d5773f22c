"""What the judge stage concludes (:mod:`fsyncbench.judge`): the path verdicts and
strengths, :class:`Finding`, :class:`ResultVerdict` and :class:`Verdict`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Path verdicts, strongest claim last (docs/verdicts.md says what each means).
NO_FLUSH = "no_flush"
VOLATILE_CACHE = "volatile_cache"
HONEST_FLUSH = "honest_flush"
UNVERIFIABLE = "unverifiable"
PATH_VERDICTS = (NO_FLUSH, VOLATILE_CACHE, UNVERIFIABLE, HONEST_FLUSH)

#: How a path verdict was established (docs/verdicts.md, "strength"), strongest
#: first: a power cut lost acknowledged commits; measured facts (filesystem and stack facts,
#: device flush/write counters, libc vs raw syscall, the dirty-size sweep); inferred from
#: identity, platform semantics or latency bands; "none" when nothing decided.
PROVEN = "proven"
MEASURED = "measured"
INFERRED = "inferred"
NO_STRENGTH = "none"
STRENGTHS = (PROVEN, MEASURED, INFERRED, NO_STRENGTH)

#: Finding levels, mildest first.
INFO = "info"
WARNING = "warning"
RISK = "risk"


@dataclass(frozen=True)
class Finding:
    """One thing the verdict engine concluded.

    ``code`` is a stable kebab-case id; ``level`` is info/warning/risk; ``subject`` is the
    result name or "path"; ``evidence`` holds the values the rule used; ``source`` cites the
    threshold or platform fact. Path-rule findings also say how they know (``strength``,
    one of ``STRENGTHS``), which path verdict they point to (``points_to``) and their
    ``stance`` towards the verdict given: ``decides``, ``agrees`` or ``disagrees`` (a
    weaker signal pointing elsewhere, shown, never hidden); "" for other findings.
    """

    code: str
    level: str
    subject: str
    message: str
    advice: str
    evidence: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    strength: str = ""
    points_to: str | None = None
    stance: str = ""


@dataclass(frozen=True)
class ResultVerdict:
    """Verdict for one result: is the storage path honest, does the pragma promise durability.

    ``strength`` says how the path verdict was established (``STRENGTHS``; "" in reports
    written before it existed).
    """

    subject: str
    path_verdict: str
    config_durable: bool | None
    decided_by: str
    strength: str = ""


@dataclass(frozen=True)
class Verdict:
    """All verdicts of a report; ``path_verdict`` is the storage path's overall verdict and
    ``strength`` how it was established (``STRENGTHS``; "" in older reports).
    ``device_knowledge_version`` is the version of the device knowledge table the judge read
    (fsyncbench/host/device_knowledge.json; None in reports before it existed)."""

    path_verdict: str
    decided_by: str
    results: tuple[ResultVerdict, ...] = ()
    findings: tuple[Finding, ...] = ()
    strength: str = ""
    device_knowledge_version: int | None = None
