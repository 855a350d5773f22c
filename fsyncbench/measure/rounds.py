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
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from fsyncbench.errors import FsyncbenchError
from fsyncbench.jsonable import from_jsonable, to_jsonable
from fsyncbench.measure import runner
from fsyncbench.measure.timing import STOP_BUDGET, STOP_CI_TARGET, STOP_SAMPLES, Measurement
from fsyncbench.model import FlushDelta, Host, Pragmas, Result

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
    several each in a process of its own (:func:`run_rounds`). Raises FsyncbenchError on I/O errors;
    KeyboardInterrupt propagates after the scratch directory is removed."""
    return run_with_floors(plan, host, progress, floors=False)[0]


def run_with_floors(
    plan: RunPlan, host: Host, progress: RoundsProgress | None = None, floors: bool = True
) -> tuple[tuple[Result, ...], tuple[Result, ...]]:
    """(results, the tool's floors) of ``plan``: with several rounds each worker measures
    its share of the floors too (:func:`fsyncbench.measure.runner.measure_floors`), so the floors' intervals see the
    same process-to-process variation as the results; with one round, here. ``floors``
    False: none. Errors as in :func:`run_plan`."""
    if plan.rounds > 1:
        return run_rounds(plan, host, progress, floors)
    measured = runner.measure_floors(plan) if floors else ()
    return runner.run_round(plan, host, progress), measured


def run_rounds(
    plan: RunPlan, host: Host, progress: RoundsProgress | None = None, floors: bool = True
) -> tuple[tuple[Result, ...], tuple[Result, ...]]:
    """Run ``plan.rounds`` rounds of ``plan`` (a :class:`fsyncbench.measure.plan.RunPlan`), each in
    a worker process, one after the other, inside one scratch directory of ``plan.target``;
    the merged results and (``floors``) the merged floors, each worker having measured its
    share (:func:`merge_rounds`). Raises FsyncbenchError when a worker fails (with its
    message); KeyboardInterrupt propagates after the worker and the scratch directory are
    gone."""
    from fsyncbench.measure.workloads import scratch_dir

    start = time.monotonic()
    results, floor_sets = [], []
    with scratch_dir(plan.target) as work:
        for k in range(plan.rounds):
            sub = round_plan(plan, k, work)
            request, result = (
                work / f"round-{k + 1}-request.json",
                work / f"round-{k + 1}-results.json",
            )
            request.write_text(
                json.dumps(
                    {
                        "plan": _plan_jsonable(sub),
                        "host": to_jsonable(host),
                        "floor_budget_s": runner.FLOOR_BUDGET_S / plan.rounds if floors else 0.0,
                    }
                )
            )
            got, got_floors = _run_worker(request, result, k, plan.rounds, progress, start)
            results.append(got)
            floor_sets.append(got_floors)
    return merge_rounds(results, plan), (merge_rounds(floor_sets, plan) if floors else ())


def _run_worker(
    request: Path,
    result: Path,
    k: int,
    total_rounds: int,
    progress: RoundsProgress | None,
    start: float,
) -> tuple[tuple[Result, ...], tuple[Result, ...]]:
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
                f"{label} (round {k + 1}/{total_rounds})",
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
        return (
            tuple(from_jsonable(Result, r) for r in data["results"]),
            tuple(from_jsonable(Result, r) for r in data["floors"]),
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
        floors = runner.measure_floors(plan, budget) if budget > 0 else ()
        results = runner.run_round(plan, host, report)
        result.write_text(
            json.dumps({"results": to_jsonable(results), "floors": to_jsonable(floors)})
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
