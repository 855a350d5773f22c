"""The run plan's choices and bounds, exactly (:mod:`fsyncbench.measure.plan`): which pragma
combinations ``--journal-mode``, ``--synchronous`` and ``--fullfsync`` give (and the
defaults on Linux and macOS), every accepted spelling of ``--fullfsync``, the full text a
user reads for a bad value, each bound of :class:`RunPlan` and :class:`EvidencePlan` at
its edge (the last value accepted and the first refused), and the stop rule each kind of
plan hands its :class:`fsyncbench.measure.timing.Sampler`.

Nothing is measured: the plans are built by hand and the samplers are only constructed."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import intervals, plan
from fsyncbench.measure.audit_workloads import SWEEP_SIZES
from fsyncbench.measure.plan import (
    EvidencePlan,
    RunPlan,
    build_configs,
    default_min_samples,
    parse_choices,
    parse_fullfsync,
)
from fsyncbench.measure.timing import MAX_SAMPLES
from fsyncbench.model import Pragmas

TARGET = Path("/nonexistent/plan-target")  # a plan only holds the path
MODES = "delete, truncate, persist, memory, wal, off"  # SQLite's journal modes, lower case
SYNCS = "off, normal, full, extra"


def _refused(text: str, **fields) -> None:
    """RunPlan(**fields) raises FsyncbenchError with exactly ``text``."""
    with pytest.raises(FsyncbenchError) as caught:
        RunPlan(target=TARGET, configs=(), **fields)
    assert str(caught.value) == text


def _evidence_refused(text: str, **fields) -> None:
    with pytest.raises(FsyncbenchError) as caught:
        EvidencePlan(**fields)
    assert str(caught.value) == text


# --- pragma choices ---------------------------------------------------------------------


def test_default_matrix_off_macos_is_three_modes_by_three_syncs_without_fullfsync():
    # https://www.sqlite.org/pragma.html#pragma_fullfsync: honoured on macOS only
    assert build_configs(platform="linux") == tuple(
        Pragmas(m, s, None)
        for m in ("DELETE", "TRUNCATE", "WAL")
        for s in ("OFF", "NORMAL", "FULL")
    )


def test_default_matrix_on_macos_measures_each_combination_with_fullfsync_off_and_on():
    configs = build_configs(platform="darwin")
    assert len(configs) == 18
    assert configs[:2] == (Pragmas("DELETE", "OFF", False), Pragmas("DELETE", "OFF", True))
    assert configs[-1] == Pragmas("WAL", "FULL", True)
    assert [c.fullfsync for c in configs] == [False, True] * 9


def test_given_lists_replace_the_defaults_in_their_order_once_each():
    configs = build_configs(" Wal ,delete,WAL", "full,EXTRA", platform="linux")
    assert configs == (
        Pragmas("WAL", "FULL", None),
        Pragmas("WAL", "EXTRA", None),
        Pragmas("DELETE", "FULL", None),
        Pragmas("DELETE", "EXTRA", None),
    )


def test_a_given_fullfsync_list_applies_on_any_platform():
    assert build_configs("wal", "full", "on", platform="linux") == (Pragmas("WAL", "FULL", True),)
    assert build_configs("wal", "full", "off,on", platform="darwin") == (
        Pragmas("WAL", "FULL", False),
        Pragmas("WAL", "FULL", True),
    )
    assert [c.label for c in build_configs("delete", "normal", "no", platform="darwin")] == [
        "delete/normal/no-fullfsync"
    ]


def test_a_bad_journal_mode_names_the_option_and_the_allowed_values():
    with pytest.raises(FsyncbenchError) as caught:
        build_configs("wall", platform="linux")
    assert str(caught.value) == (
        f"invalid journal_mode wall: allowed values are {MODES}; did you mean wal?"
    )


def test_a_bad_synchronous_value_names_the_option_and_the_allowed_values():
    with pytest.raises(FsyncbenchError) as caught:
        build_configs("wal", "ful", platform="linux")
    assert str(caught.value) == (
        f"invalid synchronous ful: allowed values are {SYNCS}; did you mean full?"
    )


def test_an_empty_item_in_a_list_is_refused_with_the_allowed_values():
    with pytest.raises(FsyncbenchError) as caught:
        build_configs("wal,", platform="linux")
    assert str(caught.value) == (
        f"invalid journal_mode 'wal,': an empty item (allowed values are {MODES})"
    )
    with pytest.raises(FsyncbenchError) as caught:
        build_configs("wal", " ", platform="linux")
    assert str(caught.value) == (
        f"invalid synchronous ' ': an empty item (allowed values are {SYNCS})"
    )


def test_several_bad_values_are_all_named_each_with_its_closest_allowed_value():
    with pytest.raises(FsyncbenchError) as caught:
        parse_choices("wl,dlete,xyzzy", ("DELETE", "WAL"), "journal_mode")
    assert str(caught.value) == (
        "invalid journal_mode wl, dlete, xyzzy: allowed values are delete, wal; "
        "did you mean wal for wl, delete for dlete?"
    )


def test_one_bad_value_among_good_ones_is_refused():
    with pytest.raises(FsyncbenchError, match=r"^invalid synchronous fast: allowed values"):
        parse_choices("full,fast", ("OFF", "FULL"), "synchronous")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("on", (True,)),
        ("off", (False,)),
        ("1", (True,)),
        ("0", (False,)),
        ("true", (True,)),
        ("false", (False,)),
        ("yes", (True,)),
        ("no", (False,)),
        ("ON, Off", (True, False)),
        ("off,on,no,yes,0,1", (False, True)),
        (" TRUE ,1,on", (True,)),
    ],
)
def test_fullfsync_accepts_every_spelling_of_on_and_off_once_each(text, expected):
    assert parse_fullfsync(text) == expected


def test_fullfsync_refuses_an_empty_item():
    for text in ("on,", ",", ""):
        with pytest.raises(FsyncbenchError) as caught:
            parse_fullfsync(text)
        assert str(caught.value) == (
            f"invalid fullfsync {text!r}: an empty item (allowed values are on, off)"
        )


def test_fullfsync_names_every_bad_value():
    with pytest.raises(FsyncbenchError) as caught:
        parse_fullfsync("on,maybe,Sometimes")
    assert str(caught.value) == "invalid fullfsync maybe, sometimes: allowed values are on, off"
    with pytest.raises(FsyncbenchError) as caught:
        parse_fullfsync("enabled")
    assert str(caught.value) == "invalid fullfsync enabled: allowed values are on, off"


# --- platform defaults ------------------------------------------------------------------


def test_macos_asks_more_samples_per_workload_than_other_platforms():
    assert default_min_samples("darwin") == plan.DARWIN_MIN_SAMPLES == 1250
    assert default_min_samples("linux") == default_min_samples("win32") == 1000
    assert plan.DEFAULT_MIN_SAMPLES == 1000
    assert default_min_samples("Darwin") == 1000  # sys.platform spells it in lower case


# --- RunPlan bounds ---------------------------------------------------------------------


def test_rounds_between_one_and_fifty():
    assert plan.MAX_ROUNDS == 50
    assert RunPlan(target=TARGET, configs=(), rounds=50).rounds == 50
    assert RunPlan(target=TARGET, configs=(), rounds=1).rounds == 1
    _refused("--rounds must be between 1 and 50, got 51", rounds=51)
    _refused("--rounds must be between 1 and 50, got 0", rounds=0)


def test_a_fixed_sample_count_of_at_least_one_and_one_per_round():
    assert RunPlan(target=TARGET, configs=(), samples=1).samples == 1
    assert RunPlan(target=TARGET, configs=(), samples=3, rounds=3).samples == 3
    _refused("--samples must be at least 1, got 0", samples=0)
    _refused(
        "--samples 2 is fewer than --rounds 3: every round takes at least one sample "
        "(give --rounds 1)",
        samples=2,
        rounds=3,
    )


@pytest.mark.parametrize(
    ("field", "option"),
    [("budget_s", "--budget-seconds"), ("run_budget_s", "--run-budget-seconds")],
)
def test_budgets_are_positive_and_at_most_a_day(field, option):
    assert plan.MAX_BUDGET_S == 86_400.0
    for accepted in (0.25, 1.0, 86_400.0):
        assert getattr(RunPlan(target=TARGET, configs=(), **{field: accepted}), field) == accepted
    for refused, shown in ((0.0, "0"), (-1.0, "-1"), (86_400.5, "86400.5")):
        _refused(f"{option} must be positive and at most 86400, got {shown}", **{field: refused})


def test_no_run_budget_is_allowed():
    assert RunPlan(target=TARGET, configs=(), run_budget_s=None).run_budget_s is None


def test_ci_target_strictly_between_zero_and_a_hundred_percent():
    for accepted in (0.5, 1.0, 99.5):
        assert RunPlan(target=TARGET, configs=(), ci_target_pct=accepted).ci_target_pct == accepted
    for refused, shown in ((0.0, "0"), (100.0, "100"), (100.5, "100.5")):
        _refused(
            f"--ci-target-pct must be above 0 and below 100, got {shown}", ci_target_pct=refused
        )


def test_min_samples_from_one_up_to_the_most_samples():
    assert RunPlan(target=TARGET, configs=(), min_samples=1).min_samples == 1
    at_cap = RunPlan(target=TARGET, configs=(), min_samples=7, max_samples=7)
    assert (at_cap.min_samples, at_cap.max_samples) == (7, 7)
    _refused("--min-samples must be at least 1, got 0", min_samples=0)
    _refused(
        "--min-samples 8 is above the most samples one configuration may take (7)",
        min_samples=8,
        max_samples=7,
    )
    assert RunPlan(target=TARGET, configs=()).max_samples == MAX_SAMPLES


def test_warmup_may_be_zero_but_not_negative():
    assert RunPlan(target=TARGET, configs=(), warmup=0).warmup == 0
    _refused("--warmup must be 0 or more, got -1", warmup=-1)


def test_payload_from_one_byte_to_64_mib():
    # SQLite's own limit is far above: https://www.sqlite.org/limits.html (SQLITE_MAX_LENGTH)
    assert plan.MAX_PAYLOAD_BYTES == 64 * 1024 * 1024
    for accepted in (1, 2, 64 << 20):
        assert RunPlan(target=TARGET, configs=(), payload_bytes=accepted).payload_bytes == accepted
    for refused in (0, (64 << 20) + 1):
        _refused(
            f"--payload-bytes must be between 1 and 67108864, got {refused}",
            payload_bytes=refused,
        )


# --- the stop rule each plan hands its sampler ------------------------------------------

WORKLOAD = object()  # the sampler only holds it until it is run


def _stop_rule(sampler):
    return (
        sampler.workload,
        sampler.max_samples,
        sampler.min_samples,
        sampler.ci_target_pct,
        sampler.warmup,
        sampler.min_phases,
    )


def test_an_adaptive_plan_stops_on_the_ci_target_after_its_minimum_and_phases():
    assert plan.MIN_PHASES == intervals.MIN_BLOCKS == 5
    adaptive = RunPlan(
        target=TARGET, configs=(), min_samples=300, max_samples=4000, ci_target_pct=7.5, warmup=9
    )
    sampler = adaptive.sampler(WORKLOAD)  # type: ignore[arg-type]
    assert _stop_rule(sampler) == (WORKLOAD, 4000, 300, 7.5, 9, 5)


def test_a_round_of_several_samples_its_whole_share_without_the_ci_target():
    whole = RunPlan(
        target=TARGET,
        configs=(),
        min_samples=300,
        max_samples=4000,
        warmup=9,
        stop_on_target=False,
    )
    sampler = whole.sampler(WORKLOAD)  # type: ignore[arg-type]
    # no minimum of its own (the minimum is the cap), no CI target, one phase suffices
    assert _stop_rule(sampler) == (WORKLOAD, 4000, 4000, None, 9, 1)


def test_a_fixed_plan_takes_its_count_over_at_least_the_minimum_phases():
    for stop_on_target in (True, False):
        fixed = RunPlan(
            target=TARGET, configs=(), samples=250, warmup=3, stop_on_target=stop_on_target
        )
        sampler = fixed.sampler(WORKLOAD)  # type: ignore[arg-type]
        assert _stop_rule(sampler) == (WORKLOAD, 250, 250, None, 3, 5)


# --- EvidencePlan bounds ----------------------------------------------------------------

COMPARE = "--compare-syncs must be at least the number of blocks (4)"


def test_compare_syncs_at_least_the_blocks():
    assert EvidencePlan(compare_syncs=4).compare_syncs == 4
    assert EvidencePlan(compare_syncs=1, compare_blocks=1).compare_blocks == 1
    _evidence_refused(COMPARE, compare_syncs=3)
    _evidence_refused(COMPARE, compare_blocks=0)


def test_sweep_repeats_and_trace_commits_at_least_one():
    assert EvidencePlan(sweep_repeats=1).sweep_repeats == 1
    assert EvidencePlan(trace_commits=1).trace_commits == 1
    _evidence_refused("--sweep-repeats must be at least 1, got 0", sweep_repeats=0)
    _evidence_refused("--trace-commits must be at least 1, got 0", trace_commits=0)


def test_the_sweep_needs_at_least_two_dirty_sizes():
    assert SWEEP_SIZES[:3] == (4096, 16384, 65536)
    assert EvidencePlan(sweep_max_bytes=16384).sweep_max_bytes == 16384
    # --sweep-max-mib 0 is the only whole number of MiB below two sizes
    for refused in (0, 16383):
        _evidence_refused("--sweep-max-mib must be at least 1", sweep_max_bytes=refused)
