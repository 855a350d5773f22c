"""The plans of the measuring commands: ``run`` (:func:`run_plan`, its concurrent writers
:func:`writers_plan`), ``audit`` (:func:`audit_plans`) and the one pragma combination of
``crash`` and ``powercut write`` (:func:`one_pragmas`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import writers as writers_measure
from fsyncbench.measure.plan import (
    DEFAULT_CI_TARGET_PCT,
    DEFAULT_PAYLOAD_BYTES,
    DEFAULT_ROUNDS,
    DEFAULT_WARMUP,
    RunPlan,
    build_configs,
    default_budgets,
    default_min_samples,
    parse_choices,
    parse_fullfsync,
)
from fsyncbench.model import Pragmas
from fsyncbench.options.values import (
    check_integer,
    check_list,
    check_number,
    check_text,
    choice,
    comma_list,
    fullfsync_list,
    int_list,
)

if TYPE_CHECKING:  # imported where used: measure.evidence is heavy
    from fsyncbench.measure.evidence import EvidencePlan


def run_plan(
    target: Path,
    *,
    journal_modes: str | Sequence[str] | None = None,
    synchronous: str | Sequence[str] | None = None,
    fullfsync: str | bool | Sequence[str | bool] | None = None,
    samples: int | None = None,
    ci_target_pct: float | None = None,
    min_samples: int | None = None,
    budget_seconds: float | None = None,
    run_budget_seconds: float | None = None,
    rounds: int = DEFAULT_ROUNDS,
    warmup: int = DEFAULT_WARMUP,
    payload_bytes: int = DEFAULT_PAYLOAD_BYTES,
    primitives: bool = True,
    platform: str = sys.platform,
) -> RunPlan:
    """The plan of ``fsyncbench run`` (``target`` already checked) on ``platform``: the
    pragma lists parsed (comma strings or sequences), the defaults of an adaptive or a fixed
    run filled in (the budgets: :func:`fsyncbench.measure.plan.default_budgets`), and every
    bound checked (:class:`fsyncbench.measure.plan.RunPlan`)."""
    check_list(journal_modes, "journal_modes")
    check_list(synchronous, "synchronous")
    check_list(fullfsync, "fullfsync", flags=True)
    check_integer(samples, "samples", optional=True)
    check_number(ci_target_pct, "ci_target_pct", optional=True)
    check_integer(min_samples, "min_samples", optional=True)
    check_number(budget_seconds, "budget_seconds", optional=True)
    check_number(run_budget_seconds, "run_budget_seconds", optional=True)
    check_integer(rounds, "rounds")
    check_integer(warmup, "warmup")
    check_integer(payload_bytes, "payload_bytes")
    if samples is not None and (ci_target_pct is not None or min_samples is not None):
        raise FsyncbenchError(
            "--samples fixes the sample count; it cannot be combined with "
            "--ci-target-pct or --min-samples"
        )
    adaptive = samples is None
    default_run_budget_s, default_budget_s = default_budgets(platform)
    return RunPlan(
        target=target,
        configs=build_configs(
            comma_list(journal_modes),
            comma_list(synchronous),
            fullfsync_list(fullfsync),
            platform,
        ),
        samples=samples,
        budget_s=default_budget_s if budget_seconds is None else budget_seconds,
        warmup=warmup,
        payload_bytes=payload_bytes,
        primitives=primitives,
        ci_target_pct=DEFAULT_CI_TARGET_PCT if ci_target_pct is None else ci_target_pct,
        min_samples=default_min_samples(platform) if min_samples is None else min_samples,
        run_budget_s=run_budget_seconds
        if run_budget_seconds is not None
        else (default_run_budget_s if adaptive else None),
        rounds=rounds,
    )


def audit_plans(
    target: Path,
    *,
    samples: int = 200,
    budget_seconds: float = 5.0,
    compare_syncs: int = 200,
    sweep_repeats: int = 3,
    sweep_max_mib: int = 64,
    trace_commits: int = 20,
    trace: bool = True,
) -> tuple[RunPlan, EvidencePlan]:
    """(RunPlan, EvidencePlan) of ``fsyncbench audit`` (``target`` already checked): a fixed
    sample count of the flush primitives and :data:`fsyncbench.measure.evidence.TIMED_CONFIGS`
    in one round, then the evidence (:class:`fsyncbench.measure.evidence.EvidencePlan`)."""
    from fsyncbench.measure import evidence

    audit_types(samples, budget_seconds, compare_syncs, sweep_repeats, sweep_max_mib, trace_commits)
    if samples < 1:
        raise FsyncbenchError(f"--samples must be at least 1, got {samples}")
    plan = RunPlan(
        target=target,
        configs=evidence.TIMED_CONFIGS,
        samples=samples,
        budget_s=budget_seconds,
        warmup=10,
        run_budget_s=None,
    )
    ev_plan = evidence.EvidencePlan(
        compare_syncs=compare_syncs,
        sweep_repeats=sweep_repeats,
        sweep_max_bytes=sweep_max_mib << 20,
        trace_commits=trace_commits,
        trace=trace,
    )
    return plan, ev_plan


def audit_types(
    samples: Any,
    budget_seconds: Any,
    compare_syncs: Any,
    sweep_repeats: Any,
    sweep_max_mib: Any,
    trace_commits: Any,
) -> None:
    """The types of ``audit``'s numbers (checked with ``from_report`` too, where they are
    not used)."""
    check_integer(samples, "samples")
    check_number(budget_seconds, "budget_seconds")
    check_integer(compare_syncs, "compare_syncs")
    check_integer(sweep_repeats, "sweep_repeats")
    check_integer(sweep_max_mib, "sweep_max_mib")
    check_integer(trace_commits, "trace_commits")


def one_pragmas(
    journal_mode: str, synchronous: str, fullfsync: str | bool | None = None, *, command: str
) -> Pragmas:
    """One pragma combination (``crash``, ``powercut write``): ``fullfsync`` None or empty
    means on on macOS, unset elsewhere (``crash`` has no fullfsync)."""
    from fsyncbench.measure.workloads import JOURNAL_MODES, SYNCHRONOUS

    check_text(journal_mode, "journal_mode")
    check_text(synchronous, "synchronous")
    check_list(fullfsync, "fullfsync", flags=True)
    mode = parse_choices(journal_mode, JOURNAL_MODES, "journal_mode")
    sync = parse_choices(synchronous, SYNCHRONOUS, "synchronous")
    if command == "crash":
        if len(mode) != 1 or len(sync) != 1:
            raise FsyncbenchError("crash takes one journal_mode and one synchronous value")
        return Pragmas(mode[0], sync[0])
    text = fullfsync_list(fullfsync)
    full = parse_fullfsync(text) if text else (True,) if sys.platform == "darwin" else (None,)
    if len(mode) != 1 or len(sync) != 1 or len(full) != 1:
        raise FsyncbenchError(f"{command} takes one journal_mode, synchronous and fullfsync value")
    return Pragmas(mode[0], sync[0], full[0])


#: Most steps one commit of ``run --steps-per-commit`` may hold.
MAX_STEPS_PER_COMMIT = 10_000
#: Longest busy timeout ``run --busy-timeout-ms`` takes (ms): 10 minutes.
MAX_BUSY_TIMEOUT_MS = 600_000


def writers_plan(
    configs: Sequence[Pragmas],
    *,
    writers: str | int | Sequence[int] | None,
    steps_per_commit: str | int | Sequence[int] | None = None,
    payload_bytes: Sequence[int] = (DEFAULT_PAYLOAD_BYTES,),
    begin: str = "immediate",
    busy_timeout_ms: int = writers_measure.DEFAULT_BUSY_TIMEOUT_MS,
    seconds: float = writers_measure.DEFAULT_WINDOW_S,
) -> writers_measure.WritersPlan | None:
    """The concurrent-writers plan of ``run --writers`` over the run's ``configs``; None
    when neither ``writers`` nor ``steps_per_commit`` is given and ``payload_bytes`` holds
    one size (the default run). Steps per commit or payload sizes alone measure one writer.
    Raises FsyncbenchError with one line on a bad value."""
    counts = int_list(writers, "--writers", 1, writers_measure.MAX_WRITERS)
    steps = int_list(steps_per_commit, "--steps-per-commit", 1, MAX_STEPS_PER_COMMIT)
    sizes = tuple(payload_bytes) or (DEFAULT_PAYLOAD_BYTES,)
    # every value checked, used or not: a bad one is refused before anything is measured
    check_integer(busy_timeout_ms, "busy_timeout_ms")
    if not 0 <= busy_timeout_ms <= MAX_BUSY_TIMEOUT_MS:
        raise FsyncbenchError(
            f"--busy-timeout-ms must be between 0 and {MAX_BUSY_TIMEOUT_MS}, got {busy_timeout_ms}"
        )
    check_number(seconds, "writers_seconds")
    if not 0.5 <= seconds <= 3600 or seconds != seconds:
        raise FsyncbenchError(f"--writers-seconds must be between 0.5 and 3600, got {seconds}")
    mode = choice(begin, writers_measure.BEGIN_MODES, "--begin")
    if not counts and not steps and len(sizes) < 2:
        return None
    return writers_measure.WritersPlan(
        configs=tuple(configs),
        counts=counts or (1,),
        begin=mode,
        busy_timeout_ms=busy_timeout_ms,
        steps_per_commit=steps or (1,),
        payload_bytes=sizes,
        window_s=float(seconds),
    )
