"""The timing loop's exact bookkeeping (fsyncbench.measure.timing): argument checks and
their messages, the default and resumed warmup and its early stop at a share of the
budget, the fixed count spread over phases, the progress callback's calls and arguments,
the budget and elapsed time summed over phases, the CI target's confirming checks, and
what a sampler records before it runs and after it releases its samples.

A scripted clock stands in for ``time.perf_counter_ns``: only the workload's ``run()``
moves it, so every sample, elapsed time and progress argument is known exactly.
"""

import itertools
import math
import re

import pytest
from factories import ScriptedClock, ScriptedWorkload

from fsyncbench.measure import intervals
from fsyncbench.measure import timing as measure

SAMPLER_ARGS = "max_samples >= 1, min_samples >= 1 and warmup >= 0 are required"
MEASURE_ARGS = "target_samples >= 1, budget_s > 0 and warmup >= 0 are required"


@pytest.fixture
def clock(monkeypatch):
    c = ScriptedClock()
    c.now = 5_000  # a clock that does not start at zero
    monkeypatch.setattr(measure.time, "perf_counter_ns", c)
    return c


def _calls():
    calls = []

    def progress(done, target, elapsed_ns, budget_ns):
        calls.append((done, target, elapsed_ns, budget_ns))

    return calls, progress


# --------------------------------------------------------------------------- argument checks


@pytest.mark.parametrize(
    "kw",
    [
        {"max_samples": 0},
        {"max_samples": 0, "min_samples": 1},
        {"max_samples": 5, "min_samples": 0},
        {"max_samples": 5, "warmup": -1},
    ],
)
def test_sampler_rejects_counts_below_their_minimum_saying_which(kw):
    with pytest.raises(ValueError, match=f"^{re.escape(SAMPLER_ARGS)}$"):
        measure.Sampler(measure.EmptyOp(), **kw)


@pytest.mark.parametrize("pct", [0, 0.0, -1.0, math.nan])
def test_sampler_rejects_a_ci_target_that_is_not_positive(pct):
    with pytest.raises(ValueError, match="^ci_target_pct must be positive$"):
        measure.Sampler(measure.EmptyOp(), max_samples=5, ci_target_pct=pct)


def test_sampler_accepts_the_smallest_counts(clock):
    w = ScriptedWorkload(clock, [3, 4, 5])
    s = measure.Sampler(w, max_samples=1, min_samples=1, ci_target_pct=1e-9)
    assert s.run(1.0) == measure.STOP_SAMPLES
    assert s.measurement().samples_ns == (3,)


@pytest.mark.parametrize("budget", [0, 0.0, -1.0, math.nan])
def test_a_phase_needs_a_positive_budget(budget):
    s = measure.Sampler(measure.EmptyOp(), max_samples=5)
    with pytest.raises(ValueError, match="^budget_s must be positive$"):
        s.run(budget)


@pytest.mark.parametrize(
    "target, budget, warmup",
    [(0, 1.0, 0), (1, 0, 0), (1, 0.0, 0), (1, -1.0, 0), (1, 1.0, -1), (0, 0, 0)],
)
def test_measure_rejects_bad_arguments_with_its_own_message(target, budget, warmup):
    with pytest.raises(ValueError, match=f"^{re.escape(MEASURE_ARGS)}$"):
        measure.measure(measure.EmptyOp(), target, budget, warmup)


def test_measure_takes_a_single_sample_when_asked(clock):
    m = measure.measure(ScriptedWorkload(clock, [7, 8]), target_samples=1, budget_s=1.0, warmup=0)
    assert m.samples_ns == (7,) and m.target_reached and m.stop_reason == measure.STOP_SAMPLES


# --------------------------------------------------------------------------- warmup and budget


def test_no_warmup_by_default(clock):
    w = ScriptedWorkload(clock, [3, 4, 5])
    s = measure.Sampler(w, max_samples=2)
    s.run(1.0)
    m = s.measurement()
    assert w.prepared == [0, 1] and m.warmup == 0 and m.samples_ns == (3, 4)


def test_warmup_stops_at_its_share_of_the_budget_then_sampling_goes_on(clock):
    # budget 1000 ns: warmup may use 10 % (100 ns); two 50 ns operations use all of it
    w = ScriptedWorkload(clock, [50, 50, 50, 50, 7, 8, 9])
    s = measure.Sampler(w, max_samples=3, warmup=10)
    assert s.run(budget_s=1e-6) == measure.STOP_SAMPLES
    m = s.measurement()
    assert m.warmup == 2
    # the timed phase then starts afresh: the samples are the durations after the warmup
    assert w.prepared == [-1, -2, 0, 1, 2]
    assert m.samples_ns == (50, 50, 7)
    assert m.elapsed_ns == 107 and m.target_reached


def test_a_budget_under_a_nanosecond_still_takes_one_sample(clock):
    calls, progress = _calls()
    w = ScriptedWorkload(clock, [1, 1, 1])
    s = measure.Sampler(w, max_samples=3)
    assert s.run(budget_s=1e-12, progress=progress) == measure.STOP_BUDGET
    m = s.measurement()
    assert m.samples_ns == (1,) and not m.target_reached
    assert calls[-1] == (1, 3, 1, 1)  # the budget is rounded up to one nanosecond


def test_later_phases_rewarm_with_at_most_two_operations(clock):
    # 1 ns operations in 1 us phases: the warmup's 10 % share (100 ns) is never reached
    w = ScriptedWorkload(clock, itertools.repeat(1))
    s = measure.Sampler(w, max_samples=10**6, warmup=5)
    for _ in range(3):
        s.run(budget_s=1e-6)
    assert s.measurement().warmup == 5 + 2 * measure.RESUME_WARMUP == 9
    s = measure.Sampler(ScriptedWorkload(clock, itertools.repeat(1)), max_samples=10**6, warmup=1)
    for _ in range(3):
        s.run(budget_s=1e-6)
    assert s.measurement().warmup == 3  # never more than the first phase's warmup


def test_fixed_count_is_spread_over_min_phases_and_budgets_add_up(clock):
    # 5 samples over 2 phases: at most ceil(5 / 2) = 3 in a phase
    w = ScriptedWorkload(clock, [100] * 5 + [10, 20, 30] + [100] * 2 + [40, 50])
    s = measure.Sampler(w, max_samples=5, min_samples=1, min_phases=2, warmup=5)
    assert s.run(budget_s=0.5) == measure.STOP_BUDGET
    assert s.done is False
    assert s.run(budget_s=0.25) == measure.STOP_SAMPLES
    assert s.done is True
    m = s.measurement()
    assert m.samples_ns == (10, 20, 30, 40, 50)
    assert m.slice_counts == (3, 2) and m.phases == 2
    assert m.warmup == 5 + 2
    assert m.budget_s == 0.75  # every phase's budget, summed
    assert m.elapsed_ns == 150  # timed regions only, over both phases
    # a fixed count: the target is max_samples, not min_samples; no interval was computed
    assert m.target_samples == 5 and m.target_reached
    assert m.ci_target_pct is None and m.p99_ci_halfwidth_pct is None
    assert m.stop_reason == measure.STOP_SAMPLES


def test_adaptive_mode_is_not_capped_per_phase(clock):
    w = ScriptedWorkload(clock, [1] * 100)
    s = measure.Sampler(w, max_samples=6, min_samples=1, ci_target_pct=1e-9, min_phases=3)
    assert s.run(budget_s=1.0) == measure.STOP_SAMPLES
    m = s.measurement()
    assert m.slice_counts == (6,) and m.ci_target_pct == 1e-9 and m.target_samples == 1


# --------------------------------------------------------------------------- progress


def test_progress_is_reported_at_the_first_sample_every_100_ms_and_at_the_end(clock):
    calls, progress = _calls()
    # 10 ns, then 100 ms - 1 ns (no report), then 1 ns: exactly 100 ms after the first
    # report, so it is reported; then 5 ns (no report); the end is always reported
    durations = [10, measure.PROGRESS_INTERVAL_NS - 1, 1, 5]
    m = measure.measure(
        ScriptedWorkload(clock, durations), 4, budget_s=1.0, warmup=0, progress=progress
    )
    interval = measure.PROGRESS_INTERVAL_NS
    assert calls == [
        (1, 4, 10, 1_000_000_000),
        (3, 4, interval + 10, 1_000_000_000),
        (4, 4, interval + 15, 1_000_000_000),
    ]
    assert m.elapsed_ns == interval + 15


def test_progress_target_is_max_samples_for_a_fixed_count(clock):
    calls, progress = _calls()
    s = measure.Sampler(ScriptedWorkload(clock, [2, 3, 4]), max_samples=3, min_samples=2)
    s.run(budget_s=0.5, progress=progress)
    assert calls == [(1, 3, 2, 500_000_000), (3, 3, 9, 500_000_000)]


def test_progress_target_is_min_samples_in_adaptive_mode(clock):
    calls, progress = _calls()
    w = ScriptedWorkload(clock, [2, 3, 4])
    s = measure.Sampler(w, max_samples=10**6, min_samples=7, ci_target_pct=5.0)
    s.run(budget_s=5e-9, progress=progress)
    assert calls == [(1, 7, 2, 5), (2, 7, 5, 5)]


def test_progress_of_a_later_phase_counts_all_samples_and_this_phase_s_time(clock):
    calls, progress = _calls()
    w = ScriptedWorkload(clock, [2, 3, 4, 6])
    s = measure.Sampler(w, max_samples=4, min_phases=2)
    s.run(budget_s=1.0)
    s.run(budget_s=1.0, progress=progress)
    assert calls == [(3, 4, 4, 1_000_000_000), (4, 4, 10, 1_000_000_000)]
    assert s.measurement().elapsed_ns == 15


# --------------------------------------------------------------------------- the CI target


def _scripted_halfwidths(monkeypatch, values):
    it = iter(values)
    monkeypatch.setattr(intervals, "p99_ci_halfwidth_pct", lambda samples, counts: next(it))


@pytest.mark.parametrize(
    "halfwidths, reasons",
    [
        # one narrow interval is not enough; a half-width equal to the target meets it
        ([4.0, 5.0], ["budget", "ci-target"]),
        # a miss (or no interval) restarts the count
        ([4.0, 6.0, 4.0, 4.0], ["budget", "budget", "budget", "ci-target"]),
        ([4.0, None, 4.0, 4.0], ["budget", "budget", "budget", "ci-target"]),
        ([5.000001, 5.0, 5.0], ["budget", "budget", "ci-target"]),
    ],
)
def test_ci_target_is_met_at_two_consecutive_checks(clock, monkeypatch, halfwidths, reasons):
    _scripted_halfwidths(monkeypatch, halfwidths)
    w = ScriptedWorkload(clock, [1] * 1000)
    s = measure.Sampler(w, max_samples=10**6, min_samples=1, ci_target_pct=5.0)
    assert [s.run(budget_s=3e-9) for _ in reasons] == reasons
    m = s.measurement()
    assert m.p99_ci_halfwidth_pct == halfwidths[len(reasons) - 1]
    assert m.ci_target_pct == 5.0 and m.stop_reason == "ci-target" and s.done


def test_a_real_interval_equal_to_the_target_meets_it(clock):
    """Identical 1000 ns samples in 300-sample phases: the half-width narrows with each
    phase from MIN_BLOCKS phases on. A target equal to the half-width after MIN_BLOCKS + 1
    phases is met there (at most the target, not strictly under it) and confirmed at the
    next phase."""
    phases = intervals.MIN_BLOCKS + 1
    width = intervals.p99_ci_halfwidth_pct([1000] * 300 * phases, [300] * phases)
    assert width is not None
    w = ScriptedWorkload(clock, [1000] * 10**5)
    s = measure.Sampler(w, max_samples=10**6, min_samples=1000, ci_target_pct=width)
    reasons = [s.run(budget_s=300e-6) for _ in range(phases + 1)]
    assert reasons == [measure.STOP_BUDGET] * phases + [measure.STOP_CI_TARGET]
    assert s.measurement().slice_counts == (300,) * (phases + 1)


# --------------------------------------------------------------------------- the record


def test_a_sampler_never_run_records_nothing_taken():
    s = measure.Sampler(measure.EmptyOp(), max_samples=10, min_samples=3, ci_target_pct=2.0)
    assert s.done is False
    m = s.measurement()
    assert m == measure.Measurement(
        samples_ns=(),
        warmup=0,
        target_samples=3,
        budget_s=0.0,
        target_reached=False,
        elapsed_ns=0,
        ci_target_pct=2.0,
        p99_ci_halfwidth_pct=None,
        stop_reason=measure.STOP_SAMPLES,
        phases=0,
        slice_counts=(),
    )


def test_release_hands_over_the_samples_and_ends_the_sampler(clock):
    w = ScriptedWorkload(clock, [3, 4, 5, 6, 7])
    s = measure.Sampler(w, max_samples=5, min_phases=2)
    s.run(budget_s=1.0)
    assert s.done is False
    m = s.measurement(release=True)
    assert m.samples_ns == (3, 4, 5) and m.target_samples == 5 and not m.target_reached
    assert len(s.samples) == 0 and s.done is True
    # a later phase takes nothing
    assert s.run(budget_s=1.0) == measure.STOP_SAMPLES
    assert s.measurement().samples_ns == () and w.prepared == [0, 1, 2]
