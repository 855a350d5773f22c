"""compare: the statistics (deterministic) and `fsyncbench compare` end to end."""

import dataclasses
import json

import numpy as np
import pytest
import sampled
from clitools import fsb

from fsyncbench import compare, stats, store
from fsyncbench.errors import FsyncbenchError

# --------------------------------------------------------------------------- statistics


def test_holm_adjustment():
    assert compare.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert compare.holm([0.5]) == [0.5]
    assert compare.holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])


def _dependent_report(seed: int, scale: float = 1.0, slices: int = 12, per_slice: int = 400):
    """A report whose samples come from one process with bursts: each slice has its own
    level (a stall, a quiet spell), and samples within a slice move together."""
    rng = np.random.default_rng(seed)
    rep = sampled.report(scale, seed=seed, n=slices * per_slice)
    results = []
    for r in rep.results:
        levels = np.repeat(rng.lognormal(0, 0.25, slices), per_slice)
        data = tuple(int(v) for v in np.asarray(r.samples_ns) * levels)
        counts = (per_slice,) * slices
        results.append(dataclasses.replace(r, samples_ns=data, slice_counts=counts,
                                           summary=stats.summarize(data, counts)))
    return dataclasses.replace(rep, results=tuple(results))


def test_two_reports_of_the_same_process_differ_in_nothing_significant():
    """A/A: the same dependent process twice, many times over; with intervals that allow
    for the bursts and Holm over all statistics, a false alarm is rare (~5 % of pairs),
    and --fail-on-regression fires at most at that rate."""
    alarms = gates = 0
    for k in range(40):
        pair = compare.compare_pair(_dependent_report(2 * k), _dependent_report(2 * k + 1))
        alarms += any(q.significant for c in pair.configs for q in (c.p50, c.p99))
        gates += bool(compare.regressions(pair, 20, "A", "B"))
    # 5 % family-wise error rate: about 2 of 40 pairs; a binomial 95 % bound is 4
    assert alarms <= 4 and gates <= 4


def test_intervals_that_assume_independence_would_cry_wolf():
    """The same pairs, with every sample its own slice: the dependence is ignored and
    almost every pair shows a 'significant' difference. (Why the slices matter.)"""
    def independent(rep):
        return dataclasses.replace(rep, results=tuple(dataclasses.replace(
            r, slice_counts=(1,) * len(r.samples_ns)) for r in rep.results))
    alarms = sum(
        any(q.significant for c in compare.compare_pair(
            independent(_dependent_report(2 * k)), independent(_dependent_report(2 * k + 1))).configs
            for q in (c.p50, c.p99))
        for k in range(10))
    assert alarms >= 8


def test_rank_test_sees_a_shift_and_not_its_absence():
    a = sampled.samples(1_000_000, seed=1)
    same = compare.rank_test(a, sampled.samples(1_000_000, seed=2))
    slower = compare.rank_test(a, sampled.samples(1_300_000, seed=2))
    assert same.p_value > 0.01 and 0.4 < same.prob_b_slower < 0.6
    assert slower.p_value < 1e-6 and slower.prob_b_slower > 0.65
    assert compare.rank_test([], a) is None
    assert compare.rank_test([5, 5], [5, 5]) is None  # every value tied: nothing to rank


def test_compare_pair_finds_a_real_slowdown_and_is_repeatable():
    a, b = sampled.report(1.0, seed=0), sampled.report(1.5, seed=100)
    pair = compare.compare_pair(a, b)
    again = compare.compare_pair(a, b)
    assert pair == again  # deterministic
    full = next(c for c in pair.configs if c.name == "wal/full")
    assert full.p50.ratio == pytest.approx(1.5, rel=0.1)
    assert full.p50.significant and full.p50.ratio_ci[0] > 1
    assert full.p99.significant and full.p99.p_adjusted < 0.05
    assert full.rank.prob_b_slower > 0.7
    # the intervals are the reports' own
    assert full.p99.a_ci_ns == next(r for r in a.results if r.name == "wal/full").summary.p99_ci_ns

    same = compare.compare_pair(a, sampled.report(1.0, seed=100))
    assert not any(c.p50.significant for c in same.configs)


def test_without_raw_samples_significance_is_unknown():
    """A hand-written report: summaries with bounds only, no samples, no interval records."""
    a = sampled.report()
    bare = dataclasses.replace(a, results=tuple(dataclasses.replace(
        r, samples_ns=(), slice_counts=(),
        summary=dataclasses.replace(r.summary, p50_interval=None, p99_interval=None))
        for r in a.results))
    pair = compare.compare_pair(bare, a)
    assert all(c.p99.significant is None and c.rank is None for c in pair.configs)
    assert all(c.p99.ratio == pytest.approx(1.0) for c in pair.configs)
    assert all("no slices" in c.p99.reason for c in pair.configs)
    # a summary-only report that kept its interval records can still be tested
    summaries = dataclasses.replace(a, results=tuple(
        dataclasses.replace(r, samples_ns=()) for r in a.results))
    assert all(c.p50.significant is False for c in compare.compare_pair(summaries, a).configs)


def test_schema_1_reports_are_shown_but_not_called_significant():
    a = sampled.report(1.0, seed=0)
    old = dataclasses.replace(a, schema_version=1, results=tuple(
        dataclasses.replace(r, slice_counts=()) for r in a.results))
    pair = compare.compare_pair(old, sampled.report(3.0, seed=1))
    full = next(c for c in pair.configs if c.name == "wal/full")
    assert full.p50.significant is None and full.p50.ratio == pytest.approx(3.0, rel=0.1)
    assert "A has no slices" in full.p50.reason


def test_regression_needs_size_and_significance():
    a = sampled.report(1.0, seed=0)
    pair = compare.compare_pair(a, sampled.report(1.5, seed=100))
    names = {r.name for r in compare.regressions(pair, 20, "A", "B")}
    assert "wal/full" in names and "write (no sync)" not in names  # baseline is skipped
    assert "wal/off" not in names  # no sync: not what a durability gate is about
    assert [r.name for r in compare.regressions(pair, 20, "A", "B", ["wal/off"])] == ["wal/off"]
    assert compare.regressions(pair, 200, "A", "B") == []
    assert [r.name for r in compare.regressions(pair, 20, "A", "B", ["wal/full"])] == ["wal/full"]
    faster = compare.compare_pair(a, sampled.report(0.5, seed=100))
    assert compare.regressions(faster, 0, "A", "B") == []


def test_check_comparable_refuses_mixed_reports():
    a = sampled.report()
    with pytest.raises(FsyncbenchError, match="512-byte payloads in a but 4096-byte"):
        compare.check_comparable([a, sampled.report(payload_bytes=4096)], ["a", "b"])
    with pytest.raises(FsyncbenchError, match="'run' report but b is a 'audit'"):
        compare.check_comparable([a, dataclasses.replace(a, kind="audit")], ["a", "b"])
    other = dataclasses.replace(a, results=tuple(
        dataclasses.replace(r, name="x" + r.name) for r in a.results))
    with pytest.raises(FsyncbenchError, match="no configuration in common"):
        compare.check_comparable([a, other], ["a", "b"])


def test_fleet_sorted_by_p99_of_the_chosen_config():
    reps = [sampled.report(s, seed=i) for i, s in enumerate((3.0, 1.0, 2.0))]
    assert compare.fleet_config(reps, None) == "wal/full"
    rows = compare.fleet(reps, ["slow", "fast", "mid"], "wal/full")
    assert [r.label for r in rows] == ["fast", "mid", "slow"]
    assert compare.fleet_config(reps, "WRITE+FDATASYNC") == "write+fdatasync"
    with pytest.raises(FsyncbenchError, match="not in every report"):
        compare.fleet_config(reps, "delete/full")


# --------------------------------------------------------------------------- CLI


@pytest.fixture()
def two_runs(tmp_path):
    a = sampled.save(sampled.report(1.0, seed=0), tmp_path / "before.json")
    b = sampled.save(sampled.report(1.6, seed=100), tmp_path / "after.json")
    return a, b


def test_cli_compare_two_reports_prints_ratios_and_significance(two_runs):
    a, b = two_runs
    proc = fsb("compare", a, b)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.index("Host differences") < out.index("configuration")
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith(("wal/full", "write+"))}
    assert "1.6" in lines["wal/full"] and "yes, slower" in lines["wal/full"]
    assert "P(B>A)" in out and "B/A" in out and "p (Holm)" in out
    assert "REGRESSION" not in out


def test_cli_fail_on_regression_exits_1_with_the_reason(two_runs):
    a, b = two_runs
    proc = fsb("compare", a, b, "--fail-on-regression", "20")
    assert proc.returncode == 1, proc.stderr
    assert "REGRESSION wal/full: p99" in proc.stdout and "more than --fail-on-regression 20 % worse" in proc.stdout
    # B against itself: nothing got worse
    same = fsb("compare", b, b, "--fail-on-regression", "20")
    assert same.returncode == 0 and "No p99 regression above 20 %" in same.stdout
    # an allowance bigger than the change passes
    assert fsb("compare", a, b, "--fail-on-regression", "500").returncode == 0


def test_cli_compare_three_reports_prints_the_fleet(tmp_path):
    paths = []
    for name, scale, seed in (("laptop", 2.0, 1), ("server", 0.5, 2), ("vm", 1.0, 3)):
        rep = sampled.report(scale, seed=seed)
        rep = dataclasses.replace(rep, host=dataclasses.replace(rep.host, hostname=name))
        paths.append(sampled.save(rep, tmp_path / f"{name}.json"))
    proc = fsb("compare", *paths)
    assert proc.returncode == 0, proc.stderr
    assert "sorted by p99 of wal/full" in proc.stdout
    rows = [ln for ln in proc.stdout.splitlines() if ln[:1].isdigit()]
    assert [r.split()[1] for r in rows] == ["server.json", "vm.json", "laptop.json"]
    assert all("honest_flush" in r or "unverifiable" in r or "volatile" in r or "no_flush" in r
               for r in rows)
    by_write = fsb("compare", *paths, "--config", "write+fdatasync")
    assert by_write.returncode == 0 and "sorted by p99 of write+fdatasync" in by_write.stdout


def test_cli_compare_refuses_mismatched_reports(tmp_path):
    a = sampled.save(sampled.report(), tmp_path / "a.json")
    big = sampled.save(sampled.report(payload_bytes=4096), tmp_path / "big.json")
    proc = fsb("compare", a, big)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "fsyncbench: error: wal/off wrote 512-byte payloads in a.json but 4096-byte payloads in "
        "big.json: re-run with the same --payload-bytes to compare"]

    data = json.loads(a.read_text())
    data["schema_version"] = 0
    old = sampled.save_raw(data, tmp_path / "old.json")
    proc = fsb("compare", a, old)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "old.json has an invalid schema_version 0" in proc.stderr

    newer = sampled.save_raw({**data, "schema_version": store.SCHEMA_VERSION + 1}, tmp_path / "new.json")
    proc = fsb("compare", a, newer)
    assert proc.returncode == 2 and proc.stderr.rstrip().endswith("upgrade fsyncbench")

    for args, msg in (((a,), "compare needs at least two reports"),
                      ((a, a, "--config", "nope"), "unknown configuration nope: every report has"),
                      ((a, a, "--fail-on-regression", "-5"), "invalid percentage '-5'")):
        proc = fsb("compare", *args)
        assert proc.returncode == 2 and msg in proc.stderr and len(proc.stderr.splitlines()) == 1
