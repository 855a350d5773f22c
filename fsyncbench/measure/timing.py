"""The timing loop: warmup, then time each operation with ``time.perf_counter_ns``, with
an optional adaptive stop on the precision of p99.

Only the workload's ``run(args)`` call is inside the timed region; argument building
(``prepare``), progress reporting and the stop checks are outside it. Raw samples are
returned untouched; statistics are derived elsewhere (``stats``).

Adaptive stop (``ci_target_pct`` set): after each phase (see below) the loop computes the
95 % interval of p99 the report will show (:func:`fsyncbench.measure.intervals.quantile_interval`,
over the phases as blocks, outside the timed region) and ends sampling when it lies within
+-``ci_target_pct`` % of p99 at :data:`CONFIRM_CHECKS` consecutive checks (one lucky narrow
interval does not end sampling), never before ``min_samples`` samples and ``min_phases``
phases. Otherwise it stops at ``max_samples``; each phase ends when its budget runs out.

A :class:`Sampler` is run in several phases (``run`` called again with a new budget): the
runner interleaves configurations in short slices, round-robin, so each one's samples
spread over the whole run, slow drifts or periodic stalls of the storage hit every
configuration alike, and one configuration's slices lie a rotation apart: the blocks whose
spread is the interval. The sample count of every phase is kept (``slice_counts``).
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fsyncbench.measure import intervals

#: How often (ns) the progress callback may be called: often enough for a live ETA, rare
#: enough to cost nothing next to a sync.
PROGRESS_INTERVAL_NS = 100_000_000

#: Warmup stops early once it has used this share of the time budget, so a slow disk does
#: not spend its budget warming up.
WARMUP_BUDGET_SHARE = 0.1

#: Consecutive checks that must meet the CI target before sampling stops.
CONFIRM_CHECKS = 2
#: Untimed warmup operations when a sampler resumes in a later phase of the same round
#: (caches of the workload run before it were just in use; two operations bring this
#: one's back).
RESUME_WARMUP = 2

#: Hard cap of samples per configuration in adaptive mode (8 bytes each while measuring).
#: Only the microsecond operations reach it (the no-sync write, the floors, commits at
#: synchronous=OFF): their p99 then rests on 2,000 samples above it, and their run-to-run
#: spread (15 % at p50 on this project's VM, docs/method.md) is far wider than what more
#: samples would narrow. A project choice that keeps a default run's raw samples near 1 MB
#: on disk (1,000,000 made 2.8 million samples, 3.4 MB compressed).
MAX_SAMPLES = 200_000

#: Why sampling stopped.
STOP_CI_TARGET = "ci-target"  # the p99 CI met the target
STOP_SAMPLES = "samples"  # the fixed (or maximum) sample count was reached
STOP_BUDGET = "budget"  # the time budget ran out first


class Workload(Protocol):
    def prepare(self, i: int) -> Any: ...
    def run(self, args: Any) -> None: ...


class EmptyOp:
    """The empty operation: timing it measures the timing loop itself (the tool's floor)."""

    def prepare(self, i: int) -> None:
        return None

    def run(self, _args: None) -> None:
        return None

    def close(self) -> None:
        return None


@dataclass(frozen=True)
class Measurement:
    """Raw samples (ns, in order) of one workload and how the loop stopped.

    ``target_samples`` is the fixed sample count, or in adaptive mode the minimum;
    ``target_reached`` is False when the time budget ran out before it. ``elapsed_ns`` is
    wall time of the timed phases (warmup excluded); ``warmup`` counts every untimed
    operation (initial warmup, re-warm after checks, warmup of later phases).
    ``ci_target_pct`` is None for a fixed sample count; ``p99_ci_halfwidth_pct`` is the
    half-width at the last check (None: never checked, or no interval yet). ``stop_reason``
    is one of ``ci-target``, ``samples``, ``budget``; ``phases`` counts ``Sampler.run``
    calls, ``slice_counts`` the samples each took (in order) and ``slice_rounds`` the round
    of each (empty for one round; rounds are merged by :mod:`fsyncbench.measure.rounds`).
    """

    samples_ns: tuple[int, ...]
    warmup: int
    target_samples: int
    budget_s: float
    target_reached: bool
    elapsed_ns: int
    ci_target_pct: float | None = None
    p99_ci_halfwidth_pct: float | None = None
    stop_reason: str = STOP_SAMPLES
    phases: int = 1
    slice_counts: tuple[int, ...] = ()
    slice_rounds: tuple[int, ...] = ()


#: progress(done_samples, target_samples, elapsed_ns, budget_ns)
Progress = Callable[[int, int, int, int], None]


class Sampler:
    """Samples one workload over one or more phases (module docstring).

    Fixed mode (``ci_target_pct`` None): stop at ``max_samples``, taking at most
    ``max_samples / min_phases`` (rounded up) in one phase, so the samples come from at
    least ``min_phases`` phases (the blocks of their intervals). Adaptive mode: stop when
    the p99 interval meets ``ci_target_pct`` (never before ``min_samples`` samples and
    ``min_phases`` phases) or at ``max_samples``. Either way a phase ends when its budget
    runs out (at least one sample per phase).
    """

    def __init__(
        self,
        workload: Workload,
        *,
        max_samples: int,
        min_samples: int | None = None,
        ci_target_pct: float | None = None,
        warmup: int = 0,
        min_phases: int = 1,
    ) -> None:
        min_samples = max_samples if min_samples is None else min_samples
        if max_samples < 1 or min_samples < 1 or warmup < 0:
            raise ValueError("max_samples >= 1, min_samples >= 1 and warmup >= 0 are required")
        if ci_target_pct is not None and not ci_target_pct > 0:
            raise ValueError("ci_target_pct must be positive")
        self.workload = workload
        self.max_samples = max_samples
        self.min_samples = min(min_samples, max_samples)
        self.ci_target_pct = ci_target_pct
        self.warmup = warmup
        self.min_phases = min_phases
        self.samples = array("q")
        self.slice_counts: list[int] = []
        self.untimed = 0
        self.elapsed_ns = 0
        self.budget_s = 0.0
        self.phases = 0
        self.halfwidth_pct: float | None = None
        self.stop_reason = STOP_SAMPLES
        self._met_streak = 0

    @property
    def target_met(self) -> bool:
        """The p99 interval met the CI target at the last :data:`CONFIRM_CHECKS` checks,
        with at least ``min_samples`` samples from at least ``min_phases`` phases."""
        return (
            self._met_streak >= CONFIRM_CHECKS
            and len(self.samples) >= self.min_samples
            and self.phases >= self.min_phases
        )

    @property
    def done(self) -> bool:
        """True when more phases would add nothing: the sample cap is reached, or the CI
        target is met."""
        return len(self.samples) >= self.max_samples or self.target_met

    @property
    def mean_ns(self) -> float:
        """Mean wall time per sample so far, checks included (0 before any)."""
        return self.elapsed_ns / len(self.samples) if self.samples else 0.0

    def run(self, budget_s: float, progress: Progress | None = None) -> str:
        """One phase of at most ``budget_s`` seconds; returns (and keeps) the stop reason.

        The first phase runs ``warmup`` untimed operations, later ones
        :data:`RESUME_WARMUP`; warmup stops early at :data:`WARMUP_BUDGET_SHARE` of the
        budget. Exceptions from the workload propagate unchanged.
        """
        if not budget_s > 0:
            raise ValueError("budget_s must be positive")
        clock = time.perf_counter_ns
        budget_ns = max(1, int(budget_s * 1e9))
        prepare, run = self.workload.prepare, self.workload.run
        warmup = self.warmup if self.phases == 0 else min(self.warmup, RESUME_WARMUP)
        self.phases += 1
        self.budget_s += budget_s
        start = clock()
        for _ in range(warmup):
            if clock() - start >= budget_ns * WARMUP_BUDGET_SHARE:
                break
            self._untimed_op()

        append = self.samples.append
        report_target = self.max_samples if self.ci_target_pct is None else self.min_samples
        first = i = len(self.samples)
        limit = self.max_samples
        if self.ci_target_pct is None:  # a fixed count is spread over min_phases phases
            limit = min(limit, first + -(-self.max_samples // self.min_phases))
        start = clock()
        deadline = start + budget_ns
        next_report = start
        t1 = start
        while i < limit and t1 < deadline:
            args = prepare(i)
            t0 = clock()
            run(args)
            t1 = clock()
            append(t1 - t0)
            i += 1
            if progress is not None and t1 >= next_report:
                progress(i, report_target, t1 - start, budget_ns)
                next_report = t1 + PROGRESS_INTERVAL_NS
        self.elapsed_ns += t1 - start
        self.slice_counts.append(i - first)
        if self.ci_target_pct is not None:
            self._check()
        if progress is not None:
            progress(i, report_target, t1 - start, budget_ns)
        if i >= self.max_samples:
            self.stop_reason = STOP_SAMPLES
        elif self.target_met:
            self.stop_reason = STOP_CI_TARGET
        else:
            self.stop_reason = STOP_BUDGET
        return self.stop_reason

    def _untimed_op(self) -> None:
        self.untimed += 1
        self.workload.run(self.workload.prepare(-self.untimed))

    def _check(self) -> None:
        """The p99 interval's half-width over all phases so far (None while there is no
        interval), and whether it met the target."""
        self.halfwidth_pct = intervals.p99_ci_halfwidth_pct(self.samples, self.slice_counts)
        assert self.ci_target_pct is not None
        if self.halfwidth_pct is not None and self.halfwidth_pct <= self.ci_target_pct:
            self._met_streak += 1
        else:
            self._met_streak = 0

    def measurement(self, release: bool = False) -> Measurement:
        """The samples and stop facts so far, as a frozen record. ``release``: also drop
        the sampler's own copy of the samples (the record's tuple is then the only one;
        no further phase may run)."""
        n = len(self.samples)
        target = self.max_samples if self.ci_target_pct is None else self.min_samples
        samples = tuple(self.samples)
        if release:
            self.samples = array("q")
            self.max_samples = 0  # done: a later run() would take nothing
        return Measurement(
            samples_ns=samples,
            warmup=self.untimed,
            target_samples=target,
            budget_s=self.budget_s,
            target_reached=n >= target,
            elapsed_ns=self.elapsed_ns,
            ci_target_pct=self.ci_target_pct,
            p99_ci_halfwidth_pct=self.halfwidth_pct,
            stop_reason=self.stop_reason,
            phases=self.phases,
            slice_counts=tuple(self.slice_counts),
        )


def measure(
    workload: Workload,
    target_samples: int,
    budget_s: float,
    warmup: int,
    progress: Progress | None = None,
) -> Measurement:
    """Run ``warmup`` untimed operations, then time operations until ``target_samples``
    are collected or ``budget_s`` seconds of wall time have passed (at least one sample
    is always taken): one phase of a fixed-count :class:`Sampler`. Exceptions from the
    workload propagate unchanged."""
    if target_samples < 1 or budget_s <= 0 or warmup < 0:
        raise ValueError("target_samples >= 1, budget_s > 0 and warmup >= 0 are required")
    sampler = Sampler(workload, max_samples=target_samples, warmup=warmup)
    sampler.run(budget_s, progress)
    return sampler.measurement()
