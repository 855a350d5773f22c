"""Physics as a check on concurrent writers (``run --writers``).

SQLite does not group commits: a durable commit holds the write lock while it syncs (the WAL
at each commit under synchronous=FULL; the rollback journal and the database in the other
modes), and the next writer gets the lock only afterwards
(https://www.sqlite.org/lockingv3.html, https://www.sqlite.org/wal.html#concurrency). So
however many writers commit, they finish at most one commit per sync: commits/s cannot
exceed 1 / (the sync's time). This run times that sync on its own (the ``write+<primitive>``
row), so it can state the bound and notice a result beyond it: commits that did not wait
for the sync the primitive waited for, a sign the commits' syncs did not reach the disk.
"""

from __future__ import annotations

from collections.abc import Sequence

from fsyncbench.fmt import fmt_ns
from fsyncbench.judge.rule_facts import REAL_IO_FLOOR_NS
from fsyncbench.measure import disturbance
from fsyncbench.measure.workloads import per_commit_sync
from fsyncbench.model import INFO, MEASURED, RISK, Finding, Result, RoundActivity, WritersPoint

#: A point is flagged only above this multiple of its bound: the primitive's p50 was timed
#: in the rounds, the writers afterwards, and a p50 moves up to about 1.5x between runs on a
#: shared machine (docs/method.md, "Regression gate": the A/A detectable ratios); an
#: unsynced commit beats the bound by far more (a no-op sync costs ~1 us, a flush 100s).
BOUND_SLACK = 1.5

#: The code of a point beyond its bound while the machine was disturbed (cannot tell).
UNTOLD_CODE = "writers-bound-untold"

SOURCE = (
    "SQLite holds the write lock through each commit's sync and does not group commits "
    "(https://www.sqlite.org/lockingv3.html; https://www.sqlite.org/wal.html#concurrency)"
)


def sync_primitive_result(point: WritersPoint, results: Sequence[Result]) -> Result | None:
    """The run's raw-primitive row timing the sync behind ``point``'s commits (kind
    "flush", the same primitive), or None when the run measured none."""
    name = point.primitive.split(" (")[0]
    return next((r for r in results if r.kind == "flush" and r.primitive == name), None)


def bound_commits_per_s(point: WritersPoint, results: Sequence[Result]) -> float | None:
    """The most commits/s ``point`` can reach if each commit waits for one sync as long as
    the primitive row's p50 (ns -> 1/s); None without a per-commit sync or its row."""
    prim = sync_primitive_result(point, results)
    if not per_commit_sync(point.primitive) or prim is None or prim.summary.p50_ns <= 0:
        return None
    return 1e9 / prim.summary.p50_ns


def sync_bound(
    point: WritersPoint, results: Sequence[Result], activity: Sequence[RoundActivity] = ()
) -> Finding | None:
    """The physics check of one point against the run's primitive ``results``: a risk when
    the sync behind each commit took less than any flush reaching a block device takes
    (:data:`fsyncbench.judge.rule_facts.REAL_IO_FLOOR_NS`) or when the writers committed
    more than :data:`BOUND_SLACK` x :func:`bound_commits_per_s`; info when within it or
    when the run timed no primitive; None for a configuration without a per-commit sync
    (WAL at synchronous=NORMAL, OFF): nothing bounds it.

    Beyond the bound while the machine was disturbed (the point's own activity, or rounds
    of ``activity``, the run's, that stayed disturbed: the primitive was timed in them) is
    info, ``writers-bound-untold``: a flush waits for what other processes wrote, so the
    primitive's time and the commits' were taken on different disks in effect. Measured on
    this VM with other processes writing and flushing: the fdatasync row's p50 3.7 ms while
    a single writer's commits ran at 1,086/s (p50 0.32 ms), 4x the bound, in 1 run of 3."""
    if not per_commit_sync(point.primitive):
        return None
    rate = point.summary.commits_per_s
    prim = sync_primitive_result(point, results)
    evidence: dict[str, object] = {"writers": point.writers, "commits_per_s": round(rate, 1)}
    if prim is None:
        return Finding(
            "writers-bound-unknown",
            INFO,
            point.name,
            f"{point.name}: no {point.primitive} row was timed (--no-primitives), so the "
            "bound one sync per commit puts on commits/s is not known.",
            "Run without --no-primitives to check the commits against their sync.",
            evidence,
            SOURCE,
        )
    p50 = prim.summary.p50_ns
    bound = 1e9 / p50
    evidence |= {"sync_p50_ns": p50, "bound_commits_per_s": round(bound, 1)}
    if p50 < REAL_IO_FLOOR_NS:
        return Finding(
            "writers-sync-reaches-no-device",
            RISK,
            point.name,
            f"{point.name}: {rate:,.0f} commits/s, bounded by no sync: {prim.name} took "
            f"p50 {fmt_ns(p50)}, less than the {fmt_ns(REAL_IO_FLOOR_NS)} any flush "
            "that reaches a block device takes; these commits wait for the CPU and the "
            "lock, not for the disk.",
            "Find the layer that acknowledges syncs from memory (tmpfs, eatmydata, a "
            "no-op sync) before reading these rates as durable commits.",
            evidence,
            SOURCE,
            MEASURED,
        )
    disturbed = [point.activity] if point.activity is not None and point.activity.disturbed else []
    disturbed += disturbance.stayed_disturbed(activity)
    if rate > BOUND_SLACK * bound and disturbed:
        return Finding(
            UNTOLD_CODE,
            INFO,
            point.name,
            f"{point.name}: {rate:,.0f} commits/s, {rate / bound:.2g}x the {bound:,.0f}/s "
            f"that one {point.primitive} of p50 {fmt_ns(p50)} per commit allows, but "
            f"the machine was disturbed ({disturbance.phrase(disturbed)}): a sync waits for "
            "what other processes wrote, so this bound cannot tell whether the commits "
            "skipped their syncs.",
            "Run again on a quiet machine, or trace the commits' syncs (fsyncbench audit).",
            evidence | {"disturbed": True},
            SOURCE,
            MEASURED,
        )
    if rate > BOUND_SLACK * bound:
        return Finding(
            "writers-beyond-sync-bound",
            RISK,
            point.name,
            f"{point.name}: {rate:,.0f} commits/s, {rate / bound:.2g}x the {bound:,.0f}/s "
            f"that one {point.primitive} of p50 {fmt_ns(p50)} per commit allows: these "
            "commits did not wait for the sync the primitive waited for.",
            "Trace the commits' syncs (fsyncbench audit) and find the layer that skips them.",
            evidence,
            SOURCE,
            MEASURED,
        )
    return Finding(
        "writers-within-sync-bound",
        INFO,
        point.name,
        f"{point.name}: {rate:,.0f} commits/s, within the {bound:,.0f}/s one "
        f"{point.primitive} of p50 {fmt_ns(p50)} per commit allows.",
        "",
        evidence,
        SOURCE,
        MEASURED,
    )
