"""The bottom line of a report: what to choose, what it costs, whether to trust the disk.

Derived from a :class:`fsyncbench.model.Report` only (its results, their summaries and the
verdict); nothing is measured or judged here, so the answer can be no stronger than the
verdict and the intervals under it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fsyncbench.measure import stats
from fsyncbench.measure.headtohead import paired_ratio
from fsyncbench.model import Finding, Report, Result

#: Model-call time a commit is set against when the user names none: the seed's comparison,
#: a journal commit against a one-second model call (the same default as ``crash
#: --model-call-ms``).
DEFAULT_MODEL_CALL_MS = 1000.0

#: The next step for each path verdict when no finding gives advice, and for
#: ``honest_flush``, where the advice is how to make the verdict stronger: strengths in
#: fsyncbench.model.STRENGTHS; ``fsyncbench powercut`` is the only thing that proves.
NEXT_STEP: dict[str, str | dict[str, str]] = {
    "honest_flush": {
        "proven": "Nothing to do: a power cut kept every acknowledged commit.",
        "measured": "For proof, pull the power: `fsyncbench powercut` (two machines) counts "
        "acknowledged commits lost to a real power cut.",
        "inferred": "Measure it: `fsyncbench audit DIR` reads the device flush counters and "
        "traces the syncs; `fsyncbench powercut` proves it with a real power cut.",
    },
    "unverifiable": "Settle it where the flush ends: run fsyncbench on the host, or "
    "`fsyncbench powercut` across a real power cut.",
    "volatile_cache": "Do not rely on this storage for durable commits until the cache is "
    "flushed or protected (see the findings).",
    "no_flush": "Do not rely on this storage for durable commits: move the journal to a "
    "directory on a real disk.",
}

#: Whether to trust storage judged ``honest_flush`` by anything short of a power cut: the
#: proving ground (lab/README.md) showed a drive that acknowledges every FLUSH and drops it
#: judged honest_flush (inferred, flushes-reach-device) exactly as an honest one, its
#: fdatasync as slow: counters and latency see a flush arrive, not reach the media.
TRUST_UNPROVEN = (
    "probably, not proven: a drive that drops flushes at the pace of real ones looks the "
    "same until a power cut"
)
#: Whether to trust the storage, in a few words, per path verdict (honest_flush: when a
#: power cut proved it; else TRUST_UNPROVEN).
TRUST = {
    "honest_flush": "yes",
    "unverifiable": "cannot tell from here",
    "volatile_cache": "no",
    "no_flush": "no",
}


@dataclass(frozen=True)
class Choice:
    """One commit configuration as the bottom line names it: its label, sync primitive,
    p50/p99 in ns with their 95 % intervals (None: no interval), commits per second,
    whether it lies at the tool's floor, ``ties``: other configurations of the same kind
    (durable or not) whose p50 is not measurably higher (both have a 95 % interval and they
    overlap), and ``untold``: those for which that cannot be told (this one's p50 or
    theirs has no interval)."""

    name: str
    primitive: str
    p50_ns: float
    p99_ns: float
    p50_ci_ns: tuple[float, float] | None
    p99_ci_ns: tuple[float, float] | None
    ops_per_s: float
    at_floor: bool
    ties: tuple[str, ...] = ()
    untold: tuple[str, ...] = ()
    tie_basis: str = ""


@dataclass(frozen=True)
class BottomLine:
    """The answer a design review asks for.

    ``durable``: the fastest (lowest p50) commit configuration whose pragmas promise a
    durable commit, None when none was measured; ``fastest_other``: the fastest one that
    does not promise it. ``cost_apart``: whether their p50s differ measurably (None: cannot
    tell), told by ``cost_basis`` (:func:`apart`: :data:`PAIRED` or :data:`INTERVALS`;
    ``cost_ratio`` is then the paired rounds' geometric mean where they were paired).
    ``cost_p50_ns`` and ``cost_ratio``: what the durable one costs at
    p50 above the other (ns, and durable / other). ``model_call_ms`` and
    ``p99_share_of_model_call``: the durable p99 as a fraction (0..) of one model call.
    ``path_verdict``, ``strength``, ``decided_by``: the storage path's verdict;
    ``durable_here``: True only when the path verdict is ``honest_flush``, False when
    syncs do not reach stable media, None when it cannot be told; ``trust`` says that in a
    few words (:data:`TRUST`) and ``next_step`` is the one thing to do next (the deciding
    finding's advice, or :data:`NEXT_STEP`).
    """

    durable: Choice | None
    fastest_other: Choice | None
    cost_p50_ns: float | None
    cost_ratio: float | None
    model_call_ms: float
    p99_share_of_model_call: float | None
    path_verdict: str
    strength: str
    decided_by: str
    durable_here: bool | None
    trust: str
    next_step: str
    cost_apart: bool | None = None
    cost_basis: str = ""


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


#: How :func:`apart` told two p50s apart (the words the answer gives for it).
PAIRED = "the ratio's 95 % interval over the paired rounds"
INTERVALS = "the 95 % intervals"


def apart(a: Result, b: Result) -> tuple[bool | None, str, float | None]:
    """Whether the p50s of two results of one run differ measurably, how that was told and
    A/B: by the paired ratio over their rounds where both have at least 3 (its 95 %
    interval leaves out 1; :func:`fsyncbench.measure.headtohead.paired_ratio`, the same
    the head to head gives), else by their own 95 % intervals not overlapping (a weaker
    test); (None, "", None) when neither can tell."""
    r = paired_ratio(a, b, 50.0)
    if r.bounds is not None:
        return r.separated, PAIRED, r.ratio
    ca, cb = a.summary.p50_ci_ns, b.summary.p50_ci_ns
    if ca is not None and cb is not None:
        return not _overlap(ca, cb), INTERVALS, stats.ratio(a.summary.p50_ns, b.summary.p50_ns)
    return None, "", None


def _choice(results: list[Result], report: Report) -> Choice | None:
    if not results:
        return None
    best = min(results, key=lambda r: (r.summary.p50_ns, r.name))
    s = best.summary
    others = [r for r in results if r is not best]
    told = {r.name: apart(best, r) for r in others}
    untold = tuple(r.name for r in others if told[r.name][0] is None)
    ties = tuple(r.name for r in others if told[r.name][0] is False)
    bases = {told[n][1] for n in ties}
    return Choice(
        name=best.name,
        primitive=best.primitive,
        p50_ns=s.p50_ns,
        p99_ns=s.p99_ns,
        p50_ci_ns=s.p50_ci_ns,
        p99_ci_ns=s.p99_ci_ns,
        ops_per_s=s.ops_per_s,
        at_floor=stats.at_tool_floor(best, report.floors),
        ties=ties,
        untold=untold,
        tie_basis=PAIRED if bases == {PAIRED} else INTERVALS if ties else "",
    )


def _deciding(report: Report) -> Finding | None:
    v = report.verdict
    return next(
        (f for f in v.findings if f.code == v.decided_by and f.subject == "path"),
        next((f for f in v.findings if f.code == v.decided_by), None),
    )


def next_step(report: Report) -> str:
    """The one next step: for ``honest_flush`` how to make the verdict stronger (by its
    strength; an audit has done what audit can, so a power cut), otherwise the deciding
    finding's advice, else :data:`NEXT_STEP`."""
    v = report.verdict
    steps = NEXT_STEP.get(v.path_verdict, "")
    if isinstance(steps, dict):
        strength = "measured" if report.kind == "audit" and v.strength != "proven" else v.strength
        return steps.get(strength, steps["inferred"])
    f = _deciding(report)
    return f.advice if f is not None and f.advice else steps


def bottom_line(report: Report, model_call_ms: float = DEFAULT_MODEL_CALL_MS) -> BottomLine:
    """The bottom line of ``report``; ``model_call_ms`` (> 0) is the unit a durable commit
    is set against. Configurations are the commit results the verdict judged for
    durability (``ResultVerdict.config_durable`` True or False)."""
    durable_of = {v.subject: v.config_durable for v in report.verdict.results}
    commits = [r for r in report.results if r.kind == "commit" and r.summary.count]
    durable = _choice([r for r in commits if durable_of.get(r.name) is True], report)
    other = _choice([r for r in commits if durable_of.get(r.name) is False], report)
    cost = ratio = share = None
    told: bool | None = None
    basis = ""
    if durable is not None and other is not None:
        cost = durable.p50_ns - other.p50_ns
        by_name = {r.name: r for r in commits}
        told, basis, ratio = apart(by_name[durable.name], by_name[other.name])
        if ratio is None:
            ratio = stats.ratio(durable.p50_ns, other.p50_ns)
    if durable is not None:
        share = durable.p99_ns / (model_call_ms * 1e6)
    v = report.verdict
    here = {"honest_flush": True, "no_flush": False, "volatile_cache": False}.get(v.path_verdict)
    return BottomLine(
        durable=durable,
        fastest_other=other,
        cost_p50_ns=cost,
        cost_ratio=ratio,
        cost_apart=told,
        cost_basis=basis,
        model_call_ms=model_call_ms,
        p99_share_of_model_call=share,
        path_verdict=v.path_verdict,
        strength=v.strength,
        decided_by=v.decided_by,
        durable_here=here,
        trust=TRUST_UNPROVEN
        if v.path_verdict == "honest_flush" and v.strength != "proven"
        else TRUST.get(v.path_verdict, "cannot tell from here"),
        next_step=next_step(report),
    )
