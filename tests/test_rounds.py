"""Rounds: the measurement repeated in worker processes and merged (real processes for the
end-to-end cases; recorded results for the merge itself)."""

import dataclasses
import json
import subprocess
import sys

import pytest
import sampled
import this_platform
from clitools import fsb, leftovers

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import intervals, rounds, stats
from fsyncbench.measure.plan import RunPlan, build_configs, default_min_samples
from fsyncbench.model import FlushDelta
from fsyncbench.report import compare, store


def _round(seed, scale=1.0, flushes=100):
    rep = sampled.report(scale, seed=seed, n=1000)
    return tuple(
        dataclasses.replace(r, device_flushes=(FlushDelta("vda", flushes, 5, 200),))
        if r.kind == "flush"
        else r
        for r in rep.results
    )


def test_merge_joins_samples_in_round_order_and_tags_each_slice():
    parts = [_round(1), _round(2, 1.5), _round(3)]
    merged = rounds.merge_rounds(parts)
    assert [r.name for r in merged] == [r.name for r in parts[0]]
    full = next(r for r in merged if r.name == "wal/full")
    pieces = [next(r for r in p if r.name == "wal/full") for p in parts]
    assert full.samples_ns == sum((p.samples_ns for p in pieces), ())
    assert full.slice_counts == sum((p.slice_counts for p in pieces), ())
    assert full.slice_rounds == (0,) * 10 + (1,) * 10 + (2,) * 10
    assert full.summary == stats.summarize(full.samples_ns, full.slice_counts, full.slice_rounds)
    assert len(full.summary.round_p99_ns) == 3
    # the middle round is 1.5x slower: the rounds disagree and the interval says so
    assert full.summary.p50_interval.method == intervals.METHOD_ROUNDS
    flush = next(r for r in merged if r.kind == "flush")
    assert flush.device_flushes == (FlushDelta("vda", 300, 15, 600),)
    assert flush.syncs_issued == sum(
        next(r for r in p if r.kind == "flush").syncs_issued for p in parts
    )


def test_merge_with_the_run_plan_says_what_stopped_sampling(tmp_path):
    """Merged with the whole run's plan: the plan's sample target and CI target, and the
    stop reason of the rounds ("budget" if any round ran out of time, "samples" if every
    round reached its count), never "ci-target", which no round of several uses."""
    parts = [_round(1), _round(2), _round(3)]
    plan = RunPlan(target=tmp_path, configs=build_configs("wal", "full"), rounds=3)
    with_budget = [tuple(dataclasses.replace(r, stop_reason="budget") for r in p) for p in parts]
    merged = rounds.merge_rounds(with_budget, plan)
    assert {r.stop_reason for r in merged} == {"budget"}
    assert {(r.target_samples, r.ci_target_pct) for r in merged} == {(1000, 10.0)}
    counted = [tuple(dataclasses.replace(r, stop_reason="samples") for r in p) for p in parts]
    fixed = dataclasses.replace(plan, samples=3000, run_budget_s=None)
    merged = rounds.merge_rounds(counted, fixed)
    assert {(r.stop_reason, r.target_samples, r.ci_target_pct) for r in merged} == {
        ("samples", 3000, None)
    }
    assert all(r.target_reached for r in merged)  # 3 x 1000 samples each


def test_a_round_of_several_never_stops_on_the_ci_target(tmp_path):
    plan = RunPlan(target=tmp_path, configs=build_configs("wal", "full"), rounds=8)
    sub = rounds.round_plan(plan, 0, tmp_path)
    assert sub.stop_on_target is False
    sampler = sub.sampler(object())  # type: ignore[arg-type]
    assert sampler.ci_target_pct is None and sampler.max_samples == sub.max_samples
    one = rounds.round_plan(dataclasses.replace(plan, rounds=1), 0, tmp_path)
    assert one.stop_on_target is True and one.sampler(object()).ci_target_pct == 10.0


def test_merge_refuses_rounds_that_measured_different_things():
    a, b = _round(1), _round(2)
    with pytest.raises(FsyncbenchError, match="different configurations"):
        rounds.merge_rounds([a, b[::-1]])


def test_round_plans_share_budgets_and_counts_exactly(tmp_path):
    plan = RunPlan(
        target=tmp_path,
        configs=build_configs("wal", "full"),
        samples=100,
        run_budget_s=9.0,
        budget_s=6.0,
        rounds=3,
    )
    subs = [rounds.round_plan(plan, k, tmp_path) for k in range(3)]
    assert sum(s.samples for s in subs) == 100
    assert all(s.rounds == 1 and s.run_budget_s == 3.0 and s.budget_s == 2.0 for s in subs)
    adaptive = dataclasses.replace(plan, samples=None, min_samples=1000)
    assert sum(rounds.round_plan(adaptive, k, tmp_path).min_samples for k in range(3)) == 1000


def test_a_failing_worker_is_one_line(tmp_path):
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"plan": {"target": str(tmp_path / "gone")}, "host": {}}))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsyncbench.measure.rounds",
            str(request),
            str(tmp_path / "out.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith("fsyncbench: ") and "Traceback" not in proc.stderr


def test_a_round_plan_crosses_to_its_worker_unchanged(tmp_path):
    """What a round's worker is sent (rounds._plan_jsonable, as JSON) is the plan it measures
    (rounds._plan_from_jsonable): every field, the configurations and the target."""
    plan = RunPlan(
        target=tmp_path,
        configs=build_configs("wal,delete", "off,full"),
        samples=100,
        run_budget_s=9.0,
        budget_s=6.0,
        rounds=3,
    )
    sub = rounds.round_plan(plan, 1, tmp_path / "work")
    sent = json.loads(json.dumps(rounds._plan_jsonable(sub)))
    assert rounds._plan_from_jsonable(sent) == sub


@pytest.mark.slow
def test_run_with_rounds_end_to_end(tmp_path):
    out = tmp_path / "out"
    proc = fsb(
        "run",
        tmp_path,
        "--rounds",
        "3",
        "--no-primitives",
        "--journal-mode",
        "wal",
        "--synchronous",
        "off,full",
        *this_platform.ONE_FULLFSYNC,
        "--run-budget-seconds",
        "3",
        "--quiet",
        "--verbose",
        "--report-dir",
        out,
    )
    assert proc.returncode == 0, proc.stderr
    assert leftovers(tmp_path) == []
    report = store.load_report(next(out.glob("*.json")))
    for r in (*report.results, *report.floors):
        assert set(r.slice_rounds) == {0, 1, 2}, r.name
        assert sum(r.slice_counts) == len(r.samples_ns) == r.summary.count
    assert all(len(r.summary.round_p99_ns) == 3 for r in report.results)
    # every configuration sampled for its share of every round: stopped by the budget,
    # never relabelled "ci-target"; the target checked once over all rounds
    assert {r.stop_reason for r in report.results} == {"budget"}
    least = default_min_samples()  # 1,000; macOS's 1,250
    assert all(r.ci_target_pct == 10.0 and r.target_samples == least for r in report.results)
    assert "p99 of each round" in proc.stdout and "(3 rounds)" in proc.stdout
    assert "The run had 3 rounds" in (out / next(out.glob("*.md")).name).read_text()


def test_compare_says_when_the_machine_itself_changed():
    """The tool's floors (CPU-only work) moving between runs is reported, apart from the
    storage figures: the machine changed."""
    a, b = sampled.report(1.0, seed=0), sampled.report(1.0, seed=1)
    floor = sampled.result("floor", stats.FLOOR_COMMIT, "none", 10_000, 2000, 7)
    slower = sampled.result("floor", stats.FLOOR_COMMIT, "none", 20_000, 2000, 8)
    same = compare.compare_pair(
        dataclasses.replace(a, floors=(floor,)), dataclasses.replace(b, floors=(floor,))
    )
    assert same.floor_moved == ()
    moved = compare.compare_pair(
        dataclasses.replace(a, floors=(floor,)), dataclasses.replace(b, floors=(slower,))
    )
    assert [name for name, _ in moved.floor_moved] == [stats.FLOOR_COMMIT]
    from fsyncbench.report import tables as render

    assert "The machine itself changed between the runs" in render.render_compare(
        a, b, moved, ["a", "b"]
    )


def test_minimum_first_gives_the_slow_workloads_their_minimum_only_when_time_is_short():
    from types import SimpleNamespace

    from fsyncbench.measure.plan import default_budgets
    from fsyncbench.measure.runner import PLENTY_FACTOR, SLICE_S, _minimum_first

    def job(n, per_sample_ms, per_slice_s=SLICE_S):
        return SimpleNamespace(
            sampler=SimpleNamespace(samples=[0] * n),
            seconds_per_sample=per_sample_ms / 1e3,
            seconds_per_slice=per_slice_s,
        )

    fast, slow = job(5000, 0.04), job(25, 9.0)  # a plain fsync; a fullfsync TRUNCATE commit
    active = [fast, slow]
    need_s = 100 * 9e-3  # 100 more samples of 9 ms to reach 125
    assert _minimum_first(active, need_s + SLICE_S + 0.01, 125) == active  # time enough
    assert _minimum_first(active, need_s + SLICE_S - 0.01, 125) == [slow]  # only the short
    # the others are costed at what their slices cost (settling included), not SLICE_S
    costly = job(5000, 0.04, per_slice_s=0.3)
    assert _minimum_first([costly, slow], need_s + SLICE_S + 0.01, 125) == [slow]
    # and the short ones at what a sample costs with its slice's overheads
    rewarmed = job(25, 11.0)
    assert _minimum_first([fast, rewarmed], need_s + SLICE_S + 0.01, 125) == [rewarmed]
    # every one has its minimum: the rotation goes to those short of plenty
    done = [fast, job(125, 9.0)]
    assert _minimum_first(done, 0.01, 125) == [done[1]]
    plenty = [fast, job(PLENTY_FACTOR * 125, 9.0)]
    assert _minimum_first(plenty, 0.01, 125) == plenty  # all have plenty: all of them
    unsampled = job(0, 0.0)
    assert _minimum_first([fast, unsampled], 1e9, 125) == [unsampled]  # unknown need
    assert default_budgets("darwin") == (90.0, 20.0)
    assert default_budgets("linux") == default_budgets("win32") == (30.0, 10.0)
