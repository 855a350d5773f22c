"""The run plan: which configurations to measure (``--journal-mode``, ``--synchronous``,
``--fullfsync``) and how (:class:`RunPlan`: sample counts, time budgets, the CI target,
rounds), every bound checked before anything is measured. Executing a plan is
:mod:`fsyncbench.measure.runner`. The audit's evidence plan (:class:`EvidencePlan`: how much
evidence beyond the latency to gather) is here too; gathering it is
:mod:`fsyncbench.measure.evidence`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fsyncbench.errors import FsyncbenchError, did_you_mean
from fsyncbench.measure import intervals
from fsyncbench.measure.audit_workloads import SWEEP_SIZES
from fsyncbench.measure.timing import MAX_SAMPLES, Sampler, Workload
from fsyncbench.measure.workloads import JOURNAL_MODES, SYNCHRONOUS
from fsyncbench.model import Pragmas

DEFAULT_JOURNAL_MODES = ("DELETE", "TRUNCATE", "WAL")
DEFAULT_SYNCHRONOUS = ("OFF", "NORMAL", "FULL")
FULLFSYNC_VALUES = {
    "on": True,
    "off": False,
    "1": True,
    "0": False,
    "true": True,
    "false": False,
    "yes": True,
    "no": False,
}


def parse_choices(text: str, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    """``"delete,wal"`` -> ``("DELETE", "WAL")``, checked against ``allowed``.
    Raises FsyncbenchError listing the allowed values."""
    given = [v.strip() for v in text.split(",")]
    if any(not g for g in given):
        raise FsyncbenchError(
            f"invalid {what} {text!r}: an empty item (allowed values are "
            f"{', '.join(a.lower() for a in allowed)})"
        )
    values = tuple(v.upper() for v in given)
    bad = [g for g, v in zip(given, values) if v not in allowed]
    if bad or not values:
        raise FsyncbenchError(
            f"invalid {what} {', '.join(bad) or repr(text)}: allowed values are "
            f"{', '.join(a.lower() for a in allowed)}"
            + did_you_mean(bad, [a.lower() for a in allowed])
        )
    return tuple(dict.fromkeys(values))


def parse_fullfsync(text: str) -> tuple[bool, ...]:
    """``"on,off"`` -> ``(True, False)``. Raises FsyncbenchError listing allowed values."""
    values = [v.strip().lower() for v in text.split(",")]
    if any(not v for v in values):
        raise FsyncbenchError(
            f"invalid fullfsync {text!r}: an empty item (allowed values are on, off)"
        )
    bad = [v for v in values if v not in FULLFSYNC_VALUES]
    if bad or not values:
        raise FsyncbenchError(
            f"invalid fullfsync {', '.join(bad) or repr(text)}: allowed values are on, off"
        )
    return tuple(dict.fromkeys(FULLFSYNC_VALUES[v] for v in values))


def default_min_samples(platform: str = sys.platform) -> int:
    """The default minimum samples per workload on ``platform``: :data:`DARWIN_MIN_SAMPLES`
    on macOS, else :data:`DEFAULT_MIN_SAMPLES`."""
    return DARWIN_MIN_SAMPLES if platform == "darwin" else DEFAULT_MIN_SAMPLES


def default_budgets(platform: str = sys.platform) -> tuple[float, float]:
    """(time all workloads of an adaptive run share, most time one workload may take), in
    seconds, on ``platform`` (a ``sys.platform`` value): 90 and 20 on macOS
    (:data:`DARWIN_RUN_BUDGET_S`), else 30 and 10 (:data:`DEFAULT_RUN_BUDGET_S`)."""
    if platform == "darwin":
        return DARWIN_RUN_BUDGET_S, DARWIN_BUDGET_S
    return DEFAULT_RUN_BUDGET_S, DEFAULT_BUDGET_S


def build_configs(
    journal_modes: str | None = None,
    synchronous: str | None = None,
    fullfsync: str | None = None,
    platform: str = sys.platform,
) -> tuple[Pragmas, ...]:
    """The pragma combinations to measure: journal_mode x synchronous (x fullfsync).

    Defaults: DELETE, TRUNCATE, WAL x OFF, NORMAL, FULL; on macOS each with fullfsync OFF
    and ON (SQLite honours fullfsync only there: https://www.sqlite.org/pragma.html).
    """
    modes = (
        DEFAULT_JOURNAL_MODES
        if journal_modes is None
        else parse_choices(journal_modes, JOURNAL_MODES, "journal_mode")
    )
    syncs = (
        DEFAULT_SYNCHRONOUS
        if synchronous is None
        else parse_choices(synchronous, SYNCHRONOUS, "synchronous")
    )
    if fullfsync is not None:
        fulls: tuple[bool | None, ...] = parse_fullfsync(fullfsync)
    else:
        fulls = (False, True) if platform == "darwin" else (None,)
    return tuple(Pragmas(m, s, f) for m in modes for s in syncs for f in fulls)


#: Default most time (s) one configuration may take (``--budget-seconds``).
DEFAULT_BUDGET_S = 10.0
#: Default untimed warmup operations per workload (``--warmup``).
DEFAULT_WARMUP = 50
#: Default size (bytes) of each step's JSON output (``--payload-bytes``).
DEFAULT_PAYLOAD_BYTES = 512
#: Default time (s) all workloads of an adaptive run share: with the host record, the floors,
#: eight worker processes' start and warmup and the summaries a default run on this
#: project's 2-core VM takes about 36 s, so that the README's first command (a fresh venv,
#: the install and this run) ends within a minute. Chosen with
#: :data:`DEFAULT_ROUNDS` so that every configuration of the default matrix gets a spread
#: between rounds a test between runs can use (README "Regression gate").
DEFAULT_RUN_BUDGET_S = 30.0
#: macOS defaults: its default run has 24 workloads (6 sync primitives, 9 configurations with
#: fullfsync off and on) against Linux's 14, and every fullfsync commit waits for
#: F_FULLFSYNC (the seed Mac: 3.02 ms p50 for one, up to three per rollback commit), so
#: 1,000 samples of each (a p99 interval) take about 36 s and the slowest configuration
#: about 11 s with its warmups. Simulated with those latencies through the real scheduler
#: (tests/test_macos_schedule.py): at 30 s and 10 s no F_FULLFSYNC-bound row got a p99
#: interval (144-385 samples); at 60 s the slowest durable one (truncate/full/fullfsync,
#: three F_FULLFSYNC per commit) got 626-1,030 of the 1,000 it needs, as the minima of all
#: the fullfsync rows (about 44 s with each slice's re-warming) and one slice per round of
#: each of the 16 fast workloads (about 13 s) do not fit in 60 s; at 90 s every durable row
#: got 1,083-1,264 samples, at the edge of the minimum (a simulation with the seed's spread
#: left 4 % of such rows without an interval), and 120 s alone did not help (1,036: once
#: every row has its minimum the rotation shares the time out slice by slice); so macOS's
#: minimum is :data:`DARWIN_MIN_SAMPLES`, which the scheduler gives first.
DARWIN_RUN_BUDGET_S = 90.0
DARWIN_BUDGET_S = 20.0
#: Default precision target: the 95 % CI of p99 within +-10 % of p99.
DEFAULT_CI_TARGET_PCT = 10.0
#: Default minimum samples per workload before the adaptive stop may end it: below 1,000
#: samples a p99 has fewer than 10 samples beyond it and gets no interval at all
#: (:data:`fsyncbench.measure.intervals.MIN_TAIL_SAMPLES`).
DEFAULT_MIN_SAMPLES = 1000
#: macOS's default minimum: 25 % over the 1,000 a p99 interval needs, so that every durable
#: fullfsync row gets its interval with a margin rather than at the edge
#: (tests/test_macos_schedule.py checks every one at 1,200 or more).
DARWIN_MIN_SAMPLES = 1250
#: The CI target ends a configuration only once its samples come from this many slices:
#: the fewest an interval is computed from (:data:`fsyncbench.measure.intervals.MIN_BLOCKS`).
MIN_PHASES = intervals.MIN_BLOCKS
#: Rounds of a default run: the replicates a test between runs rests on
#: (:mod:`fsyncbench.measure.between`, degrees of freedom rounds - 1). With 3 (t on 2 df:
#: 4.30) a planted 2x slowdown of fdatasync was caught in 5 of 9 back-to-back pairs, with
#: 8 (t on 7: 2.36) in 7 of 7, offline on this project's VM; each round costs about 0.5 s of
#: process start and warmup outside the budget.
DEFAULT_ROUNDS = 8
#: Most rounds (``--rounds``) one run may have: each starts a process (about a second of
#: Python and numpy imports plus warmup on a 2-core VM) outside the time budget.
MAX_ROUNDS = 50


#: Upper bounds of user-set sizes: a day per configuration; a 64 MiB step output (SQLite's
#: default SQLITE_MAX_LENGTH is 1e9 bytes, https://www.sqlite.org/limits.html, but a
#: journal step that large is no longer a commit-latency benchmark).
MAX_BUDGET_S = 86_400.0
MAX_PAYLOAD_BYTES = 64 << 20


@dataclass(frozen=True)
class RunPlan:
    """What to measure.

    Adaptive (``samples`` None, the default): sample each workload until the 95 % CI of its
    p99 is within +-``ci_target_pct`` % of p99 (never before ``min_samples``, at most
    ``max_samples``), the workloads sharing ``run_budget_s`` seconds (None: no shared
    budget) and none using more than ``budget_s`` seconds. Fixed: exactly ``samples`` per
    workload unless its ``budget_s`` (or its share of ``run_budget_s``, when set) runs out.

    ``rounds`` repeats the whole measurement that many times, one round after the other,
    each with fresh files and its own warmup, and each with an equal share of the budgets
    (and, with ``samples``, of the sample count): every configuration is sampled in every
    round, and the report shows each round's p50/p99 beside the figures.

    ``stop_on_target`` False (one round of several, :func:`fsyncbench.measure.rounds.
    round_plan`): sample every workload for its whole share of the budget, without the
    adaptive stop: the rounds are the replicates a test between runs rests on
    (:mod:`fsyncbench.measure.between`), so every configuration is measured in every round,
    and the CI target is checked once, over all rounds.
    """

    target: Path
    configs: tuple[Pragmas, ...]
    samples: int | None = None
    budget_s: float = DEFAULT_BUDGET_S
    warmup: int = DEFAULT_WARMUP
    payload_bytes: int = DEFAULT_PAYLOAD_BYTES
    primitives: bool = True
    ci_target_pct: float = DEFAULT_CI_TARGET_PCT
    min_samples: int = DEFAULT_MIN_SAMPLES
    max_samples: int = MAX_SAMPLES
    run_budget_s: float | None = DEFAULT_RUN_BUDGET_S
    rounds: int = 1
    stop_on_target: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.rounds <= MAX_ROUNDS:
            raise FsyncbenchError(f"--rounds must be between 1 and {MAX_ROUNDS}, got {self.rounds}")
        if self.samples is not None and self.samples < 1:
            raise FsyncbenchError(f"--samples must be at least 1, got {self.samples}")
        if self.samples is not None and self.samples < self.rounds:
            raise FsyncbenchError(
                f"--samples {self.samples} is fewer than --rounds {self.rounds}: "
                "every round takes at least one sample (give --rounds 1)"
            )
        if not 0 < self.budget_s <= MAX_BUDGET_S:
            raise FsyncbenchError(
                f"--budget-seconds must be positive and at most {MAX_BUDGET_S:g}, got {self.budget_s:g}"
            )
        if self.run_budget_s is not None and not 0 < self.run_budget_s <= MAX_BUDGET_S:
            raise FsyncbenchError(
                f"--run-budget-seconds must be positive and at most {MAX_BUDGET_S:g}, got {self.run_budget_s:g}"
            )
        if not 0 < self.ci_target_pct < 100:
            raise FsyncbenchError(
                f"--ci-target-pct must be above 0 and below 100, got {self.ci_target_pct:g}"
            )
        if self.min_samples < 1:
            raise FsyncbenchError(f"--min-samples must be at least 1, got {self.min_samples}")
        if self.max_samples < self.min_samples:
            raise FsyncbenchError(
                f"--min-samples {self.min_samples} is above the most samples "
                f"one configuration may take ({self.max_samples})"
            )
        if self.warmup < 0:
            raise FsyncbenchError(f"--warmup must be 0 or more, got {self.warmup}")
        if not 1 <= self.payload_bytes <= MAX_PAYLOAD_BYTES:
            raise FsyncbenchError(
                f"--payload-bytes must be between 1 and {MAX_PAYLOAD_BYTES}, got {self.payload_bytes}"
            )

    @property
    def adaptive(self) -> bool:
        """True when sampling stops on the p99 CI target rather than a fixed count."""
        return self.samples is None

    def sampler(self, workload: Workload) -> Sampler:
        """A :class:`Sampler` of ``workload`` with this plan's stop rule."""
        if self.adaptive and not self.stop_on_target:
            return Sampler(workload, max_samples=self.max_samples, warmup=self.warmup)
        if self.adaptive:
            return Sampler(
                workload,
                max_samples=self.max_samples,
                min_samples=self.min_samples,
                ci_target_pct=self.ci_target_pct,
                warmup=self.warmup,
                min_phases=MIN_PHASES,
            )
        assert self.samples is not None
        return Sampler(
            workload, max_samples=self.samples, warmup=self.warmup, min_phases=MIN_PHASES
        )


@dataclass(frozen=True)
class EvidencePlan:
    """How much evidence to gather (the ``audit`` command's sample options;
    :func:`fsyncbench.measure.evidence.collect`)."""

    compare_syncs: int = 200  # per side of libc vs syscall (and of the second-fd check)
    compare_blocks: int = 4  # interleaved blocks per side
    sweep_repeats: int = 3  # syncs per dirty size
    sweep_max_bytes: int = SWEEP_SIZES[-1]
    trace_commits: int = 20  # commits traced per pragma combination
    payload_bytes: int = DEFAULT_PAYLOAD_BYTES
    trace: bool = True
    budget_s: float = 20.0  # per timed block set

    def __post_init__(self) -> None:
        if self.compare_syncs < self.compare_blocks or self.compare_blocks < 1:
            raise FsyncbenchError("--compare-syncs must be at least the number of blocks (4)")
        if self.sweep_repeats < 1:
            raise FsyncbenchError(f"--sweep-repeats must be at least 1, got {self.sweep_repeats}")
        if self.sweep_max_bytes < SWEEP_SIZES[1]:
            raise FsyncbenchError(
                f"--sweep-max-mib must be at least {max(1, SWEEP_SIZES[1] >> 20)}"
            )
        if self.trace_commits < 1:
            raise FsyncbenchError(f"--trace-commits must be at least 1, got {self.trace_commits}")
