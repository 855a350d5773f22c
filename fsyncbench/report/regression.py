"""The regression gate (``compare --fail-on-regression PCT``): which statistics it checks,
the slowdown each could have caught, and what it says of each.

The gate asks one question of every statistic it checks (p50 and p99 of each checked
configuration, in every candidate): did this one get slower? Each is tested one-sided
("slower than the baseline": half the two-sided p of
:func:`fsyncbench.measure.between.shift` when the ratio is above 1), the p-values
Holm-adjusted over exactly those statistics (Holm 1979), so the chance that a gate over
unchanged machines fires anywhere stays at 1 - confidence however many it checks. A
statistic **fails** (a regression) when its adjusted p is below 1 - confidence and its
ratio to the baseline is above 1 + PCT/100: airspeed velocity's rule
(https://asv.readthedocs.io/en/stable/commands.html#asv-compare).

A test that could not have seen a slowdown of the limit's size must not pass: each
statistic's **detectable slowdown** is the one its test catches 4 times in 5 at the level
Holm holds a lone regression to (1 - confidence over the number of statistics tested:
:func:`fsyncbench.measure.between.detectable_ratio`). A statistic that did not fail
**passes** only when that is at most 1 + PCT/100; otherwise it is **cannot tell**, with the
size it could have caught. So are the statistics the gate could not test at all: a
configuration of the baseline missing from the candidate, a run whose rounds stayed
disturbed, runs measured with different settings (rounds, budgets, sample counts), a
figure without a spread. Every one is named; none passes in silence.

Which configurations: those ``--config`` names, by default every configuration a journal
could commit with, the commits at synchronous=OFF and NORMAL and the sync primitives
included; only the no-sync write (the page cache alone, a baseline of the tool) is left
out. Configurations without a per-commit sync carry their own label: a journal in WAL at
NORMAL does not sync on commit, and a regression there is the CPU's or the page cache's,
but it is still the journal's cost.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fsyncbench.measure import between
from fsyncbench.measure.workloads import per_commit_sync
from fsyncbench.model import Report, recorded_options
from fsyncbench.report.compare import (
    ConfigComparison,
    PairComparison,
    QuantileComparison,
    alpha,
    holm,
    in_gate,
)

#: The label of a checked configuration that syncs on every commit, and of one that does
#: not (a commit at synchronous=OFF, or NORMAL in WAL mode).
SYNCS = "syncs"
NO_SYNC = "no per-commit sync"
#: What the gate says of one statistic.
REGRESSION = "regression"
PASSED = "passed"
CANNOT_TELL = "cannot tell"

#: The run options that change what a run measures or how precisely; two runs measured with
#: different ones are not compared by the gate (their difference would be the options').
SETTINGS = (
    "--rounds",
    "--run-budget-seconds",
    "--budget-seconds",
    "--samples",
    "--min-samples",
    "--ci-target-pct",
    "--warmup",
    "--payload-bytes",
)


@dataclass(frozen=True)
class Regression:
    """A configuration's p50 or p99 (``statistic``) that is significantly slower than the
    baseline (Holm-adjusted p ``p_adjusted`` over every statistic tested) and slower by
    more than ``limit_pct`` %."""

    name: str
    baseline: str
    candidate: str
    statistic: QuantileComparison
    limit_pct: float
    p_adjusted: float = 0.0


@dataclass(frozen=True)
class GatedStatistic:
    """What the gate says of one statistic: ``outcome`` is :data:`REGRESSION`,
    :data:`PASSED` or :data:`CANNOT_TELL`; ``label`` :data:`SYNCS` or :data:`NO_SYNC`;
    ``ratio`` candidate / baseline with its interval ``ratio_ci``; ``p_adjusted`` the
    one-sided Holm-adjusted p; ``detectable_ratio`` the slowdown its test catches 4 times
    in 5 (None without a test); ``reason`` why it cannot tell, with what would settle it."""

    candidate: str
    name: str
    percentile: float
    label: str
    outcome: str
    ratio: float | None = None
    ratio_ci: tuple[float, float] | None = None
    p_adjusted: float | None = None
    detectable_ratio: float | None = None
    reason: str | None = None
    basis: str | None = None
    reason_other: bool = False

    @property
    def too_uncertain(self) -> bool:
        """Cannot tell only because its test could not have caught the limit's slowdown."""
        return (
            self.outcome == CANNOT_TELL
            and self.detectable_ratio is not None
            and not self.reason_other
        )


@dataclass(frozen=True)
class RegressionGate:
    """The gate over every candidate against one ``baseline`` at ``limit_pct`` %: each
    gated statistic (:class:`GatedStatistic`) and the ``regressions`` among them."""

    baseline: str
    limit_pct: float
    statistics: tuple[GatedStatistic, ...]
    regressions: tuple[Regression, ...]

    def count(self, outcome: str) -> int:
        """How many statistics have ``outcome``."""
        return sum(1 for s in self.statistics if s.outcome == outcome)

    @property
    def untold(self) -> tuple[GatedStatistic, ...]:
        """The statistics the gate cannot tell of."""
        return tuple(s for s in self.statistics if s.outcome == CANNOT_TELL)

    def detectable_range(self) -> tuple[float, float] | None:
        """(smallest, largest) detectable slowdown over the statistics tested; None if none."""
        ds = [s.detectable_ratio for s in self.statistics if s.detectable_ratio is not None]
        return (min(ds), max(ds)) if ds else None


def gated(c: ConfigComparison, names: Sequence[str] | None = None) -> bool:
    """Whether the gate checks ``c``: those ``names`` name (case-insensitive), by default
    every configuration but the no-sync write (module text;
    :func:`fsyncbench.report.compare.in_gate`)."""
    return in_gate(c.kind, c.name, names)


def label(c: ConfigComparison) -> str:
    """:data:`NO_SYNC` for a configuration without a per-commit sync in either run, else
    :data:`SYNCS`."""
    both = per_commit_sync(c.primitive_a) and per_commit_sync(c.primitive_b)
    return SYNCS if both else NO_SYNC


def _settings(rep: Report) -> dict[str, str]:
    """The measuring options of ``rep``'s command line (:data:`SETTINGS`) with their values,
    and its rounds (the most any result recorded)."""
    given = recorded_options(rep.command_line)
    out = {flag: value for flag, value in given.items() if flag in SETTINGS}
    rounds = max((len(r.summary.round_p50_ns) for r in rep.results), default=0)
    out["rounds measured"] = str(rounds)
    return out


def run_differences(a: Report, b: Report) -> list[str]:
    """How ``b`` was measured differently from ``a`` (each "what: A x, B y"): the measuring
    options of their command lines (:data:`SETTINGS`; "default" where one did not give it),
    the rounds measured, and each common configuration's payload size. Empty when alike."""
    sa, sb = _settings(a), _settings(b)
    out = [
        f"{k}: A {sa.get(k, 'default')}, B {sb.get(k, 'default')}"
        for k in list(sa) + [k for k in sb if k not in sa]
        if sa.get(k) != sb.get(k)
    ]
    theirs = {r.name: r for r in b.results}
    for r in a.results:
        o = theirs.get(r.name)
        if o is not None and o.payload_bytes != r.payload_bytes:
            out.append(f"{r.name} payload: A {r.payload_bytes} B, B {o.payload_bytes} B")
    return out


def check(
    pairs: Sequence[tuple[str, PairComparison]],
    limit_pct: float,
    baseline: str,
    names: Sequence[str] | None = None,
    untestable: Mapping[str, str] | None = None,
    missing: Mapping[str, Sequence[tuple[str, str, str]]] | None = None,
    baseline_disturbed: str = "",
    disturbed: Mapping[str, str] | None = None,
) -> RegressionGate:
    """The gate (module text) over ``pairs`` of (candidate label, its comparison with the
    ``baseline``) at ``limit_pct`` %. ``untestable``: candidate label -> why none of its
    statistics can be told (measured differently, the same run as the baseline);
    ``missing``: candidate label -> (kind, name, primitive) of the baseline's configurations
    it lacks. A run that stayed disturbed by other processes can only have been slowed by
    them: with a disturbed baseline (``baseline_disturbed``, why) a candidate significantly
    slower still regressed, but one not slower may only look so (cannot tell); with a
    disturbed candidate (``disturbed``: label -> why) one not slower passed, but a slowdown
    may be the other processes' (cannot tell)."""
    untestable = untestable or {}
    missing = missing or {}
    disturbed = disturbed or {}
    tested = [
        (candidate, c, q)
        for candidate, pair in pairs
        if candidate not in untestable
        for c in pair.configs
        if gated(c, names)
        for q in (c.p50, c.p99)
        if q.p_value is not None and q.ratio is not None and q.se_log is not None
    ]
    one_sided = [
        q.p_value / 2.0 if q.ratio > 1.0 else 1.0 - q.p_value / 2.0  # type: ignore[operator]
        for *_, q in tested
    ]
    adjusted = dict(zip((id(q) for *_, q in tested), holm(one_sided)))
    confidence = pairs[0][1].confidence if pairs else 0.95
    level = alpha(confidence)
    lone = level / max(1, len(tested))  # Holm's first step: a lone regression's level
    limit = 1.0 + limit_pct / 100.0
    out: list[GatedStatistic] = []
    found: list[Regression] = []
    for candidate, pair in pairs:
        for c in pair.configs:
            if not gated(c, names):
                continue
            for q in (c.p50, c.p99):
                head = GatedStatistic(
                    candidate,
                    c.name,
                    float(q.percentile),
                    label(c),
                    CANNOT_TELL,
                    q.ratio,
                    q.ratio_ci,
                )
                why = untestable.get(candidate)
                if why is not None or id(q) not in adjusted:
                    out.append(dataclasses.replace(head, reason=why or q.reason or "no test"))
                    continue
                pa = adjusted[id(q)]
                assert q.se_log is not None and q.ratio is not None  # tested
                detect = between.detectable_ratio(q.se_log, q.df or math.inf, lone)
                told = dataclasses.replace(
                    head, p_adjusted=pa, detectable_ratio=detect, basis=q.basis
                )
                fired = pa < level and math.log(q.ratio) > math.log(limit)
                if fired and disturbed.get(candidate):
                    out.append(
                        dataclasses.replace(
                            told,
                            reason=f"{candidate} is slower, but {disturbed[candidate]}: the "
                            "slowdown may be the other processes'",
                            reason_other=True,
                        )
                    )
                elif fired:
                    found.append(Regression(c.name, baseline, candidate, q, limit_pct, pa))
                    out.append(dataclasses.replace(told, outcome=REGRESSION))
                elif detect <= limit and baseline_disturbed:
                    out.append(
                        dataclasses.replace(
                            told,
                            reason=f"{baseline} {baseline_disturbed}: its figures may be "
                            f"slower than its storage's, so {candidate} is not shown to be as fast",
                            reason_other=True,
                        )
                    )
                elif detect <= limit:
                    out.append(dataclasses.replace(told, outcome=PASSED))
                else:
                    out.append(
                        dataclasses.replace(
                            told,
                            reason=f"it could have caught only a slowdown of {detect:.2f}x or "
                            f"more (4 times in 5), not one of {limit:.2f}x",
                        )
                    )
        for kind, name, primitive in missing.get(candidate, ()):
            if in_gate(kind, name, names):
                out += [
                    GatedStatistic(
                        candidate,
                        name,
                        pct,
                        SYNCS if per_commit_sync(primitive) else NO_SYNC,
                        CANNOT_TELL,
                        reason=f"{name} is in {baseline} but missing from {candidate}",
                    )
                    for pct in (50.0, 99.0)
                ]
    return RegressionGate(baseline, limit_pct, tuple(out), tuple(found))


def regressions(
    pair: PairComparison,
    limit_pct: float,
    baseline: str,
    candidate: str,
    names: Sequence[str] | None = None,
) -> list[Regression]:
    """The regressions of one candidate (:func:`check` of one pair)."""
    return list(check([(candidate, pair)], limit_pct, baseline, names).regressions)


def fleet_regressions(
    pairs: Sequence[tuple[str, PairComparison]],
    limit_pct: float,
    baseline: str,
    names: Sequence[str] | None = None,
) -> list[Regression]:
    """The regressions of several candidates against one baseline (:func:`check`)."""
    return list(check(pairs, limit_pct, baseline, names).regressions)
