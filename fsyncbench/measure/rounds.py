"""Rounds: the whole measurement repeated, each round in a process of its own.

Two runs of the same configuration on an unchanged machine differ by more than one run's
samples can show: each run has its own files (placed elsewhere on the disk), its own
process (memory layout, hash seed) and its own stretch of the storage's slow drifts. Like
pyperf's worker processes (https://pyperf.readthedocs.io/en/latest/run_benchmark.html:
"spawn multiple worker processes"), ``run --rounds N`` runs N rounds one after the other,
each a fresh ``python -m fsyncbench.measure.rounds`` worker measuring every configuration on fresh
files with its own warmup and an equal share of the budgets. The samples of all rounds
form one result per configuration, its slices tagged with their round, so the interval
(:func:`fsyncbench.measure.intervals.quantile_interval`) widens where the rounds disagree and each
round's p50/p99 is kept beside the figures.

Worker protocol: the parent writes the round's plan and the host record as JSON into its
scratch directory and starts ``python -m fsyncbench.measure.rounds REQUEST RESULT``; the worker
prints one progress line per update on stdout (``label<TAB>index<TAB>total<TAB>done<TAB>
target``), writes its results as JSON to RESULT and exits 0, or prints one line on stderr
and exits 2 (3 when interrupted). An interrupted parent terminates its worker and waits
for it before removing the scratch directory.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from fsyncbench import host as hostmod
from fsyncbench.errors import FsyncbenchError
from fsyncbench.jsonable import from_jsonable, to_jsonable
from fsyncbench.measure import disturbance, runner
from fsyncbench.measure.disturbance import QuietWindow, RunQueueWait
from fsyncbench.measure.timing import STOP_BUDGET, STOP_CI_TARGET, STOP_SAMPLES, Measurement
from fsyncbench.model import FlushDelta, Host, Pragmas, Result, RoundActivity

if TYPE_CHECKING:
    from fsyncbench.measure.plan import RunPlan

#: Seconds an interrupted worker gets to clean up after SIGTERM before it is killed.
TERMINATE_GRACE_S = 10.0
#: Worker exit code after an interrupt (SIGINT, SIGTERM).
EXIT_INTERRUPTED = 3

#: progress(label, index, total, done, target, elapsed_ns, budget_ns), as
#: :data:`fsyncbench.measure.runner.RunProgress`; ``index`` here is a float (the rounds
#: done, in workloads)
RoundsProgress = Callable[[str, float, int, int, int, int, int], None]


def round_plan(plan: RunPlan, k: int, target: Path) -> RunPlan:
    """The plan of round ``k`` (0-based) of ``plan``: one round in ``target`` with an equal
    share of the run budget, of each configuration's budget, of the fixed sample count
    (shares add up to ``plan.samples``) and of the minimum sample count."""
    r = plan.rounds

    def share(total: int) -> int:
        return max(1, total * (k + 1) // r - total * k // r)

    minimum = share(plan.min_samples)
    return dataclasses.replace(
        plan,
        target=target,
        rounds=1,
        samples=None if plan.samples is None else share(plan.samples),
        budget_s=plan.budget_s / r,
        run_budget_s=None if plan.run_budget_s is None else plan.run_budget_s / r,
        min_samples=minimum,
        max_samples=max(minimum, share(plan.max_samples)),
        stop_on_target=r == 1 and plan.stop_on_target,
    )


def run_plan(
    plan: RunPlan, host: Host, progress: RoundsProgress | None = None
) -> tuple[Result, ...]:
    """Measure every raw primitive and every configuration of ``plan``; results in that
    order. One round runs in this process (:func:`fsyncbench.measure.runner.run_round`),
    several each in a process of its own (:func:`measure_rounds`). Raises FsyncbenchError on I/O errors;
    KeyboardInterrupt propagates after the scratch directory is removed."""
    return measure_rounds(plan, host, progress, floors=False, retake_fraction=0.0).results


def run_with_floors(
    plan: RunPlan, host: Host, progress: RoundsProgress | None = None, floors: bool = True
) -> tuple[tuple[Result, ...], tuple[Result, ...]]:
    """(results, the tool's floors) of ``plan``, as :func:`measure_rounds` without retakes."""
    got = measure_rounds(plan, host, progress, floors, retake_fraction=0.0)
    return got.results, got.floors


#: Default extra time, as a share of the rounds' own time, that retakes of disturbed rounds
#: may use (``run --retake-disturbed``): at most +50 % of the run's measuring time.
DEFAULT_RETAKE_FRACTION = 0.5
#: Most retakes of one round: a disturbance that outlasts two retakes is a property of this
#: machine at this time, not of one round, and the report says so instead.
MAX_RETAKES_PER_ROUND = 2


@dataclass(frozen=True)
class Measured:
    """What :func:`measure_rounds` measured: ``results`` and ``floors`` merged from the kept
    attempts of every round, ``activity`` one record per attempt (first measurements and
    retakes, in time order) and ``retake_budget_s`` the extra time retakes were allowed."""

    results: tuple[Result, ...]
    floors: tuple[Result, ...]
    activity: tuple[RoundActivity, ...]
    retake_budget_s: float


#: What one round returns: results, floors, its windows without a sync, fsyncbench's pids,
#: the measuring thread's run-queue wait.
_RoundOut = tuple[
    tuple[Result, ...], tuple[Result, ...], tuple[QuietWindow, ...], tuple[int, ...], RunQueueWait
]


@dataclass(frozen=True)
class _Attempt:
    results: tuple[Result, ...]
    floors: tuple[Result, ...]
    activity: RoundActivity
    wall_s: float


def measure_rounds(
    plan: RunPlan,
    host: Host,
    progress: RoundsProgress | None = None,
    floors: bool = True,
    retake_fraction: float = DEFAULT_RETAKE_FRACTION,
) -> Measured:
    """Run ``plan.rounds`` rounds of ``plan`` (a :class:`fsyncbench.measure.plan.RunPlan`) one
    after the other inside one scratch directory of ``plan.target``: one round in this
    process, several each in a worker process of its own; with ``floors`` each round also
    measures its share of the tool's floors, so their intervals see the same
    process-to-process variation as the results.

    Each round is bracketed by readings of what else the machine did
    (:func:`fsyncbench.host.activity_snapshot`, judged by
    :func:`fsyncbench.measure.disturbance.round_activity`). Once every round has run, the
    rounds judged disturbed are taken again, first rounds first, at most
    :data:`MAX_RETAKES_PER_ROUND` times each, while the retakes' time stays within
    ``retake_fraction`` x the rounds' own time (0: none); a quiet retake replaces the
    disturbed round's samples, a disturbed one is recorded and the first attempt kept.
    Raises FsyncbenchError when a worker fails (with its message); KeyboardInterrupt
    propagates after the worker and the scratch directory are gone."""
    from fsyncbench.measure.workloads import scratch_dir

    device = _media_device(host)
    start = time.monotonic()
    with scratch_dir(plan.target) as work:

        def attempt(k: int, number: int) -> _Attempt:
            began = time.monotonic()
            before = hostmod.activity_snapshot()
            cpu0 = _own_cpu_s()
            if plan.rounds == 1:
                results, got_floors, quiet, pids, waited = _in_process(plan, host, progress, floors)
            else:
                results, got_floors, quiet, pids, waited = _worker_round(
                    plan, host, work, k, number, progress, floors
                )
            own_cpu = _own_cpu_s() - cpu0
            after = hostmod.activity_snapshot()
            act = disturbance.round_activity(
                k + 1, before, after, results, quiet, own_cpu, pids, device, number, waited
            )
            return _Attempt(results, got_floors, act, time.monotonic() - began)

        kept = [attempt(k, 1) for k in range(plan.rounds)]
        history = [a.activity for a in kept]
        first_pass_s = time.monotonic() - start
        budget_s = max(0.0, retake_fraction) * first_pass_s
        spent = 0.0
        tries = [1] * plan.rounds
        while True:
            todo = [
                k
                for k, a in enumerate(kept)
                if a.activity.disturbed and tries[k] <= MAX_RETAKES_PER_ROUND
            ]
            if not todo:
                break
            k = todo[0]
            if spent + kept[k].wall_s > budget_s:
                break
            tries[k] += 1
            again = attempt(k, tries[k])
            spent += again.wall_s
            if again.activity.disturbed:
                history.append(dataclasses.replace(again.activity, kept=False))
                continue
            history = [
                dataclasses.replace(a, kept=False) if a is kept[k].activity else a for a in history
            ]
            history.append(again.activity)
            kept[k] = again
    results = merge_rounds([a.results for a in kept], plan) if plan.rounds > 1 else kept[0].results
    merged_floors: tuple[Result, ...] = ()
    if floors:
        merged_floors = (
            merge_rounds([a.floors for a in kept], plan) if plan.rounds > 1 else kept[0].floors
        )
    return Measured(results, merged_floors, tuple(history), round(budget_s, 3))


def _media_device(host: Host) -> str | None:
    """The bottom block device with flush counters (the disk holding the bytes)."""
    names = hostmod.counter_devices(host.target)
    return names[-1] if names else None


def _own_cpu_s() -> float:
    """CPU seconds of this process and its waited-for children so far."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _floors_with_quiet(
    plan: RunPlan, host: Host, budget_s: float
) -> tuple[tuple[Result, ...], QuietWindow]:
    """The floors (in memory: no sync under the target) with the device counters read
    around them: a window in which fsyncbench issued no sync."""
    disks = hostmod.counter_devices(host.target)
    t0, c0 = time.monotonic_ns(), hostmod.read_flush_counters(disks)
    measured = runner.measure_floors(plan, budget_s) if budget_s > 0 else ()
    c1, t1 = hostmod.read_flush_counters(disks), time.monotonic_ns()
    return measured, QuietWindow(t1 - t0, tuple(hostmod.flush_deltas(c0, c1)))


def _timed_round(
    plan: RunPlan, host: Host, progress: RoundsProgress | None
) -> tuple[tuple[Result, ...], RunQueueWait]:
    """:func:`fsyncbench.measure.runner.run_round` with this thread's run-queue wait read
    around it."""
    t0, w0 = time.monotonic_ns(), hostmod.run_queue_wait_ns()
    results = runner.run_round(plan, host, progress)
    w1, t1 = hostmod.run_queue_wait_ns(), time.monotonic_ns()
    return results, RunQueueWait(t1 - t0, None if w0 is None or w1 is None else w1 - w0)


def _in_process(
    plan: RunPlan, host: Host, progress: RoundsProgress | None, floors: bool
) -> _RoundOut:
    measured, quiet = _floors_with_quiet(plan, host, runner.FLOOR_BUDGET_S if floors else 0.0)
    results, waited = _timed_round(plan, host, progress)
    return results, measured, (quiet,), (os.getpid(),), waited


def _worker_round(
    plan: RunPlan,
    host: Host,
    work: Path,
    k: int,
    number: int,
    progress: RoundsProgress | None,
    floors: bool,
) -> _RoundOut:
    sub = round_plan(plan, k, work)
    tag = f"{k + 1}" if number == 1 else f"{k + 1}-retake-{number - 1}"
    request, result = work / f"round-{tag}-request.json", work / f"round-{tag}-results.json"
    request.write_text(
        json.dumps(
            {
                "plan": _plan_jsonable(sub),
                "host": to_jsonable(host),
                "floor_budget_s": runner.FLOOR_BUDGET_S / plan.rounds if floors else 0.0,
            }
        )
    )
    label = f"round {k + 1}/{plan.rounds}" if number == 1 else f"retake of round {k + 1}"
    return _run_worker(request, result, k, plan.rounds, progress, label)


def _run_worker(
    request: Path,
    result: Path,
    k: int,
    total_rounds: int,
    progress: RoundsProgress | None,
    label_round: str,
) -> _RoundOut:
    proc = None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fsyncbench.measure.rounds", str(request), str(result)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            parts = line.rstrip("\n").split("\t")
            if progress is None or len(parts) != 5:
                continue
            label, index, total, done, target = parts
            n = float(total)
            progress(
                f"{label} ({label_round})",
                min(n - 0.01, (k * n + float(index)) / total_rounds),
                int(n),
                int(done),
                int(target),
                0,
                0,
            )
        proc.wait()
    finally:
        if proc is not None and proc.poll() is None:  # interrupted: it cleans up on SIGTERM
            proc.terminate()
            try:
                proc.wait(TERMINATE_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    err = proc.stderr.read().strip() if proc.stderr else ""
    if proc.returncode == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if proc.returncode != 0:
        last = err.splitlines()[-1] if err else f"exit status {proc.returncode}"
        raise FsyncbenchError(f"round {k + 1} failed: {last.removeprefix('fsyncbench: ')}")
    try:
        data = json.loads(result.read_text())
        quiet = data.get("quiet")
        return (
            tuple(from_jsonable(Result, r) for r in data["results"]),
            tuple(from_jsonable(Result, r) for r in data["floors"]),
            () if quiet is None else (from_jsonable(QuietWindow, quiet),),
            (os.getpid(), proc.pid),
            from_jsonable(RunQueueWait, data.get("waited") or {"wall_ns": 0, "wait_ns": None}),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FsyncbenchError(f"round {k + 1} left no readable results ({exc})") from exc


def _plan_jsonable(plan: RunPlan) -> dict[str, Any]:
    data = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}
    data["target"] = str(plan.target)
    data["configs"] = to_jsonable(plan.configs)
    return data


def _plan_from_jsonable(data: dict[str, Any]) -> RunPlan:
    from fsyncbench.measure.plan import RunPlan

    data = dict(data)
    data["target"] = Path(data["target"])
    data["configs"] = tuple(from_jsonable(Pragmas, c) for c in data["configs"])
    return RunPlan(**data)


def merge_rounds(
    rounds: Sequence[Sequence[Result]], plan: RunPlan | None = None
) -> tuple[Result, ...]:
    """One result per configuration from the same configuration's result in every round
    (same order in each): samples and slices joined in round order, each slice tagged
    with its round, counters and counts summed, the summary and the CI-target check made
    anew from all samples. With ``plan`` (the whole run's), the sample target, the CI target
    and the stop reason are the plan's: each round sampled for its share of the budget
    ("budget") or of a fixed count ("samples"); none stopped on the CI target. Raises
    FsyncbenchError when the rounds measured different configurations."""
    if not rounds or not rounds[0]:
        return ()
    first = rounds[0]
    if any([r.name for r in rr] != [r.name for r in first] for rr in rounds):
        raise FsyncbenchError("the rounds measured different configurations")
    merged = []
    for i, head in enumerate(first):
        parts = [rr[i] for rr in rounds]
        samples = tuple(itertools.chain.from_iterable(p.samples_ns for p in parts))
        slice_counts = tuple(c for p in parts for c in p.slice_counts)
        slice_rounds = tuple(k for k, p in enumerate(parts) for _ in p.slice_counts)
        target = sum(p.target_samples for p in parts)
        target_pct = head.ci_target_pct
        if plan is not None:
            target = plan.min_samples if plan.adaptive else (plan.samples or target)
            target_pct = plan.ci_target_pct if plan.adaptive else None
        stop = (
            STOP_SAMPLES
            if all(p.stop_reason == STOP_SAMPLES for p in parts)
            else STOP_BUDGET
            if any(p.stop_reason == STOP_BUDGET for p in parts)
            else STOP_CI_TARGET
        )
        m = Measurement(
            samples_ns=samples,
            warmup=sum(p.warmup for p in parts),
            target_samples=target,
            budget_s=sum(p.budget_s for p in parts),
            target_reached=len(samples) >= target,
            elapsed_ns=sum(p.elapsed_ns for p in parts),
            ci_target_pct=target_pct,
            stop_reason=stop,
            phases=sum(p.phases for p in parts),
            slice_counts=slice_counts,
            slice_rounds=slice_rounds,
        )
        syncs = (
            None
            if any(p.syncs_issued is None for p in parts)
            else sum(p.syncs_issued or 0 for p in parts)
        )
        result = runner.result_from(
            m,
            _sum_deltas(parts),
            kind=head.kind,
            name=head.name,
            primitive=head.primitive,
            payload_bytes=head.payload_bytes,
            requested=head.requested,
            effective=head.effective,
            syncs_issued=syncs,
        )
        merged.append(result)
    return tuple(merged)


def _sum_deltas(parts: Sequence[Result]) -> tuple[FlushDelta, ...]:
    """Flush counter changes summed per device over the rounds (None stays None)."""

    def add(a: int | None, b: int | None) -> int | None:
        return None if a is None or b is None else a + b

    total: dict[str, FlushDelta] = {}
    for p in parts:
        for d in p.device_flushes:
            old = total.get(d.device)
            total[d.device] = (
                d
                if old is None
                else FlushDelta(
                    d.device,
                    add(old.flushes, d.flushes),
                    add(old.flush_time_ms, d.flush_time_ms),
                    add(old.writes, d.writes),
                )
            )
    return tuple(total.values())


# --------------------------------------------------------------------------- the worker


def _interrupted(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def worker_main(argv: Sequence[str]) -> int:
    """``python -m fsyncbench.measure.rounds REQUEST RESULT``: one round (module docstring)."""
    signal.signal(signal.SIGTERM, _interrupted)
    if len(argv) != 2:
        print(
            "fsyncbench: usage: python -m fsyncbench.measure.rounds REQUEST RESULT", file=sys.stderr
        )
        return 2
    request, result = Path(argv[0]), Path(argv[1])

    def report(
        label: str, index: float, total: int, done: int, target: int, _elapsed: int, _budget: int
    ) -> None:
        print(f"{label}\t{index}\t{total}\t{done}\t{target}", flush=True)

    try:
        data = json.loads(request.read_text())
        plan = _plan_from_jsonable(data["plan"])
        host = from_jsonable(Host, data["host"])
        budget = float(data.get("floor_budget_s", 0.0))
        floors, quiet = _floors_with_quiet(plan, host, budget)
        results, waited = _timed_round(plan, host, report)
        result.write_text(
            json.dumps(
                {
                    "results": to_jsonable(results),
                    "floors": to_jsonable(floors),
                    "quiet": to_jsonable(quiet),
                    "waited": to_jsonable(waited),
                }
            )
        )
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the parent is gone
        return EXIT_INTERRUPTED
    except FsyncbenchError as exc:
        print(f"fsyncbench: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as exc:
        print(f"fsyncbench: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))
