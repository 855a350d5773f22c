"""The bottom line of a run or audit report in words: what to choose, what durability
costs, whether to trust the storage and the next step, as the full description
(:func:`fsyncbench.report.describe.describe`) and the terminal summary
(:func:`fsyncbench.report.summary.summarize`) open with; the figures behind it are
:func:`fsyncbench.report.answer.bottom_line`'s.
"""

from __future__ import annotations

from fsyncbench.fmt import fmt_interval, fmt_ns
from fsyncbench.model import UNVERIFIABLE, Report
from fsyncbench.report.answer import PAIRED, BottomLine, Choice
from fsyncbench.report.document import Paragraph, Section
from fsyncbench.report.vocabulary import VERDICT_MEANING, verdict_phrase

__all__ = ["answer_section", "choice_text", "cost_text", "trust_text"]


def _figures(c: Choice, unit: str = "commits/s") -> str:
    interval = fmt_interval(c.p99_ci_ns) if c.p99_ci_ns else "(no interval)"
    text = f"p50 {fmt_ns(c.p50_ns)}, p99 {fmt_ns(c.p99_ns)} {interval}, {c.ops_per_s:,.0f} {unit}"
    return text + (" (at the tool's floor)" if c.at_floor else "")


def _ties(c: Choice, brief: bool = False) -> str:
    text = ""
    if c.ties:
        verb = "is" if len(c.ties) == 1 else "are"
        held = "holds 1" if c.tie_basis == PAIRED else "overlap"
        text += f" {', '.join(c.ties)} {verb} not measurably slower at p50 ({c.tie_basis} {held})."
    if c.untold:
        text += (
            f" Cannot tell whether {', '.join(c.untold)} "
            f"{'is' if len(c.untold) == 1 else 'are'} slower at p50: "
            + (
                f"{c.name}'s p50 has no interval"
                if c.p50_ci_ns is None
                else f"{'its' if len(c.untold) == 1 else 'their'} p50 has no interval"
            )
            + (
                " (more samples would settle it)."
                if brief
                else " (more samples would settle it: a longer --run-budget-seconds, or fewer "
                "configurations with --journal-mode/--synchronous)."
            )
        )
    return text


def choice_text(report: Report, b: BottomLine, brief: bool = False) -> Paragraph:
    """What to choose, in one paragraph; ``brief`` (the terminal summary): what would settle
    a "cannot tell" is said in a few words, the full report says how."""
    d = b.durable
    if d is None and not any(r.kind == "commit" for r in report.results):
        return Paragraph(
            "no commit configuration was measured here, only the raw sync primitives below; "
            "`fsyncbench run DIR` measures the commits too.",
            lead="Choose:",
            tone="caution",
        )
    if d is None:
        return Paragraph(
            "no configuration measured here promises a durable commit (each syncs too little "
            "or never); measure one that does, e.g. `fsyncbench run DIR --journal-mode wal "
            "--synchronous full`.",
            lead="Choose:",
            tone="caution",
        )
    text = (
        f"{d.name}: {_figures(d)}. It is the fastest configuration measured here whose "
        f"settings promise a durable commit (it waits for {d.primitive}).{_ties(d, brief)}"
    )
    if report.kind == "audit":
        text += (
            " These figures are the audit's short look at latency (a few seconds per "
            "configuration, taken to judge the storage path, not to size it); for the cost "
            "of a commit to quote, measure it with `fsyncbench run DIR`."
        )
    if d.at_floor:
        text += (
            " Its figures lie at the tool's floor: they measure Python and SQLite, not "
            "the storage, which is implausible for a commit that waits for a disk."
        )
    if b.durable_here is False:
        return Paragraph(
            f"nothing measured here is durable on this storage: syncs do not reach stable "
            f"media (path verdict {b.path_verdict}). Were the storage fixed, the choice "
            f"would be {text[0].lower()}{text[1:]}",
            lead="Choose:",
            tone="bad",
        )
    return Paragraph(text, lead="Choose:", tone="good" if b.durable_here else "")


def cost_text(b: BottomLine, brief: bool = False) -> Paragraph | None:
    """What durability costs: against the fastest non-durable configuration and against a
    model call; ``brief``: a missing p50 interval is named in a few words."""
    d, o = b.durable, b.fastest_other
    if d is None:
        return None
    if b.durable_here is False:
        return Paragraph(
            f"none can be measured here: syncs do not reach stable media (path verdict "
            f"{b.path_verdict}), so {d.name}'s p50 of {fmt_ns(d.p50_ns)} is not what a durable "
            "commit costs. Measure the storage the journal will live on.",
            lead="Cost of durability:",
        )
    parts = []
    if o is not None and b.cost_p50_ns is not None:
        ratio = "" if b.cost_ratio is None else f" ({b.cost_ratio:.3g}x)"
        if b.cost_apart is False:
            held = "holds 1" if b.cost_basis == PAIRED else "overlap"
            parts.append(
                f"{d.name} and {o.name}, the fastest configuration that does not "
                f"promise durability ({_figures(o)}), cannot be told apart at p50 "
                f"({b.cost_basis} {held})."
            )
        else:
            untested = (
                ""
                if b.cost_apart is not None
                else (" Estimates only: " if brief else " By the estimates alone: ")
                + " and ".join(c.name for c in (d, o) if c.p50_ci_ns is None)
                + (
                    (" has" if (d.p50_ci_ns is None) != (o.p50_ci_ns is None) else " have")
                    + " no p50 interval."
                    if brief
                    else " has no p50 interval, so how sure the difference is cannot be told."
                )
            )
            more = "more" if b.cost_p50_ns >= 0 else "less"
            parts.append(
                f"{fmt_ns(abs(b.cost_p50_ns))} {more} per commit at p50{ratio} than {o.name}, "
                f"the fastest configuration that does not promise durability "
                f"({_figures(o)}).{untested}"
            )
    if b.p99_share_of_model_call is not None:
        pct = 100 * b.p99_share_of_model_call
        parts.append(
            f"At p99 a durable commit adds {pct:.2g} % to a "
            f"{fmt_ns(b.model_call_ms * 1e6)} model call per step"
            + ("." if brief else " (set yours with --model-call-ms).")
        )
    return Paragraph(" ".join(parts), lead="Cost of durability:") if parts else None


def trust_text(report: Report, b: BottomLine, brief: bool = False) -> Paragraph:
    """Whether to trust the storage: the verdict, how it is known, the deciding finding's
    message, and how many weaker signals point elsewhere. ``brief`` (the terminal summary):
    the deciding message is left out, the disagreeing signals are counted, not named, and
    the meaning of "unverifiable" is not repeated after "cannot tell from here"."""
    v = report.verdict
    deciding = next((f for f in v.findings if f.code == v.decided_by), None)
    # brief: "cannot tell from here" already is what unverifiable means
    meaning = (
        "" if brief and v.path_verdict == UNVERIFIABLE else VERDICT_MEANING.get(v.path_verdict, "")
    )
    text = (
        f"{b.trust[0].upper()}{b.trust[1:]}. Path verdict: {verdict_phrase(v.path_verdict, v.strength, v.decided_by)}."
        + (f" {meaning}" if meaning else "")
    )
    if deciding is not None and not brief:
        text += f" {deciding.message}"
    against = [f for f in v.findings if f.stance == "disagrees"]
    if against and brief:
        text += (
            f" {len(against)} weaker signal{'s' if len(against) > 1 else ''} "
            f"point{'' if len(against) > 1 else 's'} elsewhere (named in the full report)."
        )
    elif against:
        text += (
            f" {len(against)} weaker signal{'s' if len(against) > 1 else ''} "
            f"point{'' if len(against) > 1 else 's'} elsewhere: "
            + "; ".join(f"{f.code} ({f.points_to}, {f.strength})" for f in against)
            + "."
        )
    tone = {"honest_flush": "good", "unverifiable": "caution"}.get(v.path_verdict, "bad")
    return Paragraph(text.strip(), lead="Trust the storage?", tone=tone)


def answer_section(report: Report, b: BottomLine, brief: bool = False) -> Section:
    """The bottom line: choose, cost, trust, next step (``brief``: the terminal summary's
    shorter wording, see :func:`choice_text`, :func:`cost_text`, :func:`trust_text`)."""
    blocks = [
        choice_text(report, b, brief),
        cost_text(b, brief),
        trust_text(report, b, brief),
        Paragraph(b.next_step, lead="Next step:"),
    ]
    return Section("answer", "Bottom line", tuple(x for x in blocks if x is not None))
