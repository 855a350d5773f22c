"""Platform simulation for scheduling: fsyncbench's own plan, scheduler, rounds, statistics
and judge, driven on Linux with workloads that take the time a Mac's would.

Only the I/O is simulated: each operation sleeps for a latency drawn from a log-normal
distribution fitted to the seed case (an Apple M3: a durable SQLite commit with
``PRAGMA fullfsync`` 3.02 ms p50, 4.78 ms p99, one F_FULLFSYNC per WAL commit; 0.04 ms for a
plain fsync, which stops at the drive's cache). Rollback-journal commits make several
syncs each (SQLite's pager: the journal, its header at FULL, the database), so their
latency is that many syncs. The rounds run in this process (``runner.run_round`` per round,
merged by ``rounds.merge_rounds``), as the worker processes would, so the time budget, the
slices, the adaptive stop and the intervals are the real ones.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fsyncbench.measure import rounds, runner
from fsyncbench.measure.plan import RunPlan
from fsyncbench.measure.workloads import SyncPrimitive
from fsyncbench.model import Host, Pragmas, Result

#: The seed's F_FULLFSYNC commit: p50 3.02 ms, p99 4.78 ms -> log-normal sigma
#: ln(4.78 / 3.02) / 2.326 = 0.197.
FULLFSYNC_P50_S = 3.02e-3
PLAIN_FSYNC_P50_S = 0.04e-3
SIGMA = math.log(4.78 / 3.02) / 2.326

#: Syncs per commit by (journal_mode, synchronous), from strace of SQLite 3.40 (fsyncbench
#: audit's traced commits): rollback modes sync the journal and the database, FULL adds the
#: journal header; WAL syncs the WAL at FULL only (NORMAL: at checkpoints).
SYNCS_PER_COMMIT = {
    ("DELETE", "NORMAL"): 2,
    ("DELETE", "FULL"): 3,
    ("DELETE", "EXTRA"): 4,
    ("TRUNCATE", "NORMAL"): 2,
    ("TRUNCATE", "FULL"): 3,
    ("TRUNCATE", "EXTRA"): 3,
    ("PERSIST", "NORMAL"): 2,
    ("PERSIST", "FULL"): 3,
    ("WAL", "FULL"): 1,
    ("WAL", "EXTRA"): 1,
}

#: Primitive -> p50 of one sync on the seed's Mac (F_BARRIERFSYNC orders, does not flush:
#: taken as twice a plain fsync; O_DSYNC/O_SYNC as fsync there).
PRIMITIVE_P50_S = {
    "none": 0.0,
    "fsync": PLAIN_FSYNC_P50_S,
    "O_DSYNC": PLAIN_FSYNC_P50_S,
    "O_SYNC": PLAIN_FSYNC_P50_S,
    "F_BARRIERFSYNC": 2 * PLAIN_FSYNC_P50_S,
    "F_FULLFSYNC": FULLFSYNC_P50_S,
}


class _Sleeper:
    """One simulated workload: each operation sleeps ``p50_s`` x a log-normal factor."""

    def __init__(self, p50_s: float, seed: str) -> None:
        self.p50_s = p50_s
        self.rng = random.Random(seed)
        self.syncs = 0

    def prepare(self, i: int) -> None:
        return None

    def run(self, _args: Any) -> None:
        if self.p50_s:
            time.sleep(self.p50_s * self.rng.lognormvariate(0.0, SIGMA))
            self.syncs += 1

    def close(self) -> None:
        return None


class SimulatedFlush(_Sleeper):
    """Stands in for :class:`fsyncbench.measure.workloads.FlushWorkload`."""

    def __init__(self, _directory: Path, primitive: SyncPrimitive) -> None:
        super().__init__(PRIMITIVE_P50_S.get(primitive.name, PLAIN_FSYNC_P50_S), primitive.name)
        self.primitive = primitive


class SimulatedCommit(_Sleeper):
    """Stands in for :class:`fsyncbench.measure.workloads.JournalCommit` on a Mac."""

    def __init__(self, _directory: Path | None, pragmas: Pragmas, _payload_bytes: int) -> None:
        syncs = (
            0
            if pragmas.synchronous == "OFF"
            else SYNCS_PER_COMMIT.get((pragmas.journal_mode, pragmas.synchronous), 0)
        )
        one = FULLFSYNC_P50_S if pragmas.fullfsync else PLAIN_FSYNC_P50_S
        super().__init__(syncs * one or 20e-6, pragmas.label)
        self.requested = self.effective = pragmas
        self.checkpoint_fullfsync = False


def nominal_p50_ns(r: Result) -> float:
    """The p50 (ns) the simulation asks of result ``r``: what a loaded machine's sleeps
    overshoot is measured against it."""
    p = r.effective or r.requested
    if p is None:
        return PRIMITIVE_P50_S.get(r.primitive, PLAIN_FSYNC_P50_S) * 1e9
    return SimulatedCommit(None, p, 0).p50_s * 1e9


@contextlib.contextmanager
def simulated_mac(monkeypatch: Any) -> Iterator[None]:
    """Patch the runner so it plans and schedules as on macOS with simulated I/O."""
    from fsyncbench.measure import workloads

    monkeypatch.setattr(runner, "FlushWorkload", SimulatedFlush)
    monkeypatch.setattr(runner, "JournalCommit", SimulatedCommit)
    monkeypatch.setattr(
        runner,
        "sync_primitives",
        lambda platform="darwin", refused=None: workloads.sync_primitives("darwin", refused),
    )
    monkeypatch.setattr(runner, "fcntl_refusals", lambda _work: {})
    yield


def run_in_process(plan: RunPlan, host: Host) -> tuple[Result, ...]:
    """Every round of ``plan`` in this process, merged as :func:`rounds.measure_rounds` does."""
    got = [
        runner.run_round(rounds.round_plan(plan, k, plan.target), host) for k in range(plan.rounds)
    ]
    return rounds.merge_rounds(got, plan)
