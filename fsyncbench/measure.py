"""The timing loop: warmup, then time each operation with ``time.perf_counter_ns``.

Only the workload's ``run(args)`` call is inside the timed region; argument building
(``prepare``), progress reporting and the stop checks are outside it. Raw samples are
returned untouched; statistics are derived elsewhere (``stats``).
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

#: How often (ns) the progress callback may be called: often enough for a live ETA, rare
#: enough to cost nothing next to a sync.
PROGRESS_INTERVAL_NS = 100_000_000

#: Warmup stops early once it has used this share of the time budget, so a slow disk does
#: not spend its budget warming up.
WARMUP_BUDGET_SHARE = 0.1


class Workload(Protocol):
    def prepare(self, i: int) -> Any: ...
    def run(self, args: Any) -> None: ...


@dataclass(frozen=True)
class Measurement:
    """Raw samples (ns, in order) of one workload and how the loop stopped.

    ``target_reached`` is False when the time budget ran out before ``target_samples``.
    ``elapsed_ns`` is wall time of the timed phase (warmup excluded).
    """

    samples_ns: tuple[int, ...]
    warmup: int
    target_samples: int
    budget_s: float
    target_reached: bool
    elapsed_ns: int


#: progress(done_samples, target_samples, elapsed_ns, budget_ns)
Progress = Callable[[int, int, int, int], None]


def measure(
    workload: Workload,
    target_samples: int,
    budget_s: float,
    warmup: int,
    progress: Progress | None = None,
) -> Measurement:
    """Run ``warmup`` untimed operations, then time operations until ``target_samples``
    are collected or ``budget_s`` seconds of wall time have passed (at least one sample
    is always taken). Exceptions from the workload propagate unchanged.
    """
    if target_samples < 1 or budget_s <= 0 or warmup < 0:
        raise ValueError("target_samples >= 1, budget_s > 0 and warmup >= 0 are required")
    clock = time.perf_counter_ns
    budget_ns = int(budget_s * 1e9)
    start = clock()
    done_warmup = 0
    while done_warmup < warmup and clock() - start < budget_ns * WARMUP_BUDGET_SHARE:
        workload.run(workload.prepare(-1 - done_warmup))
        done_warmup += 1

    samples = array("q")
    prepare, run, append = workload.prepare, workload.run, samples.append
    start = clock()
    next_report = start
    i = 0
    t1 = start
    while i < target_samples and t1 - start < budget_ns:
        args = prepare(i)
        t0 = clock()
        run(args)
        t1 = clock()
        append(t1 - t0)
        i += 1
        if progress is not None and t1 >= next_report:
            progress(i, target_samples, t1 - start, budget_ns)
            next_report = t1 + PROGRESS_INTERVAL_NS
    if progress is not None:
        progress(i, target_samples, t1 - start, budget_ns)
    return Measurement(
        samples_ns=tuple(samples),
        warmup=done_warmup,
        target_samples=target_samples,
        budget_s=budget_s,
        target_reached=i >= target_samples,
        elapsed_ns=t1 - start,
    )
