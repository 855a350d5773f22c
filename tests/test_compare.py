"""compare: the statistics (deterministic) and `fsyncbench compare` end to end."""

import dataclasses
import json
import math

import numpy as np
import pytest
import reference
import sampled
from clitools import fsb
from factories import host
from scipy.stats import mannwhitneyu
from scipy.stats import t as student_t

from fsyncbench.errors import FsyncbenchError
from fsyncbench.measure import stats
from fsyncbench.model import BlockDevice, Virtualization
from fsyncbench.report import compare, fleet, regression, store

# rows read whole (tests/test_screen_width.py checks the layout at 80 and 100)
pytestmark = pytest.mark.usefixtures("wide_screen")


# --------------------------------------------------------------------------- statistics


def test_holm_adjustment():
    assert compare.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert compare.holm([0.5]) == [0.5]
    assert compare.holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])


def _dependent_report(
    seed: int, scale: float = 1.0, slices: int = 12, per_slice: int = 400, run_sd: float = 0.0
):
    """A report whose samples come from one process with bursts: each slice has its own
    level (a stall, a quiet spell), samples within a slice move together, three slices make
    a round (4 rounds), and with ``run_sd`` the whole run has a level of its own (another
    hour on a shared host)."""
    rng = np.random.default_rng(seed)
    rep = sampled.report(scale, seed=seed, n=slices * per_slice)
    run_level = rng.lognormal(0, run_sd) if run_sd else 1.0
    results = []
    for r in rep.results:
        levels = np.repeat(rng.lognormal(0, 0.25, slices), per_slice) * run_level
        data = tuple(int(v) for v in np.asarray(r.samples_ns) * levels)
        counts = (per_slice,) * slices
        rounds = tuple(i // 3 for i in range(slices))
        results.append(
            dataclasses.replace(
                r,
                samples_ns=data,
                slice_counts=counts,
                slice_rounds=rounds,
                summary=stats.summarize(data, counts, rounds),
            )
        )
    return dataclasses.replace(rep, results=tuple(results))


@pytest.mark.slow
def test_two_reports_of_the_same_process_differ_in_nothing_significant():
    """A/A: the same dependent process twice, many times over, runs differing by a level of
    their own (sd 0.1) but less than their rounds do: a false alarm anywhere in the table
    is rare (~5 % of pairs), and --fail-on-regression fires at most at that rate."""
    alarms = gates = 0
    for k in range(40):
        pair = compare.compare_pair(
            _dependent_report(2 * k, run_sd=0.1), _dependent_report(2 * k + 1, run_sd=0.1)
        )
        alarms += any(q.significant for c in pair.configs for q in (c.p50, c.p99))
        gates += bool(regression.regressions(pair, 20, "A", "B"))
    # 5 % family-wise error rate: about 2 of 40 pairs; a binomial 95 % bound is 4
    assert alarms <= 4 and gates <= 4


@pytest.mark.slow
def test_a_test_on_each_runs_own_interval_would_cry_wolf():
    """The same pairs judged as before this method (Welch over each run's own jackknife
    SE): a run's own level (sd 0.15, about that of a round's figure here) is invisible
    inside it, so most pairs show a 'significant' difference. (Why runs are judged by their
    rounds' spread.)"""
    alarms = 0
    for k in range(10):
        a, b = _dependent_report(2 * k, run_sd=0.15), _dependent_report(2 * k + 1, run_sd=0.15)
        ps = []
        for ra, rb in zip(a.results, b.results):
            for pct in (50, 99):
                ja = reference.jackknife(ra.samples_ns, ra.slice_counts, pct)
                jb = reference.jackknife(rb.samples_ns, rb.slice_counts, pct)
                if ja[1] and jb[1]:
                    ps.append(reference.welch_p(ja, jb))
        alarms += min(reference.holm(ps)) < 0.05
    assert alarms >= 5


def test_rank_test_sees_a_shift_and_not_its_absence():
    a = sampled.samples(1_000_000, seed=1)
    same = compare.rank_test(a, sampled.samples(1_000_000, seed=2))
    slower = compare.rank_test(a, sampled.samples(1_300_000, seed=2))
    assert 0.45 < same.prob_b_slower < 0.55
    assert slower.prob_b_slower > 0.65
    assert compare.rank_test([], a) is None
    assert compare.rank_test([5, 5], [5, 5]).prob_b_slower == 0.5  # every pair tied


def test_compare_pair_finds_a_real_slowdown_and_survives_a_save(tmp_path):
    """B is A's workload 1.5x slower (another seed), both in 5 rounds, no earlier runs: the
    pair basis. Every figure is recomputed here without fsyncbench: ratios of numpy
    percentiles, each run's spread from its rounds' percentiles, Welch's test, Holm's
    adjustment, scipy's Mann-Whitney U."""
    a, b = sampled.report(1.0, seed=0, rounds=5), sampled.report(1.5, seed=100, rounds=5)
    pair = compare.compare_pair(a, b)
    assert (
        [c.name for c in pair.configs]
        == [r.name for r in a.results]
        == ["write (no sync)", "write+fdatasync", "wal/off", "wal/normal", "wal/full"]
    )
    p_values = []
    for c, ra, rb in zip(pair.configs, a.results, b.results):
        for q, pct in ((c.p50, 50), (c.p99, 99)):
            pa = np.percentile(ra.samples_ns, pct, method="linear")
            pb = np.percentile(rb.samples_ns, pct, method="linear")
            assert q.ratio == pytest.approx(pb / pa, rel=1e-12), (c.name, pct)
            assert q.basis == "pair" and q.baseline_runs == 1
            (wa, da), (wb, db) = reference.run_variance(ra, pct), reference.run_variance(rb, pct)
            assert q.se_log == pytest.approx(math.sqrt(wa + wb), rel=1e-9)
            df = (wa + wb) ** 2 / (wa**2 / da + wb**2 / db)
            assert q.df == pytest.approx(df, rel=1e-9)
            p = 2 * student_t.sf(abs(math.log(pb / pa)) / math.sqrt(wa + wb), df)
            assert q.p_value == pytest.approx(p, rel=1e-6)
            p_values.append(p)
        u = mannwhitneyu(rb.samples_ns, ra.samples_ns, method="asymptotic", use_continuity=True)
        assert c.rank.prob_b_slower == pytest.approx(u.statistic / (2000 * 2000), rel=1e-12)
    adjusted = reference.holm(p_values)
    assert [q.p_adjusted for c in pair.configs for q in (c.p50, c.p99)] == pytest.approx(
        adjusted, rel=1e-6, abs=0
    )
    full = next(c for c in pair.configs if c.name == "wal/full")
    assert full.p50.significant and full.p50.ratio_ci[0] > 1
    # the same comparison from the reports saved and read back: nothing depends on the
    # objects in memory
    a2 = store.load_report(sampled.save(a, tmp_path / "a.json"))
    b2 = store.load_report(sampled.save(b, tmp_path / "b.json"))
    assert compare.compare_pair(a2, b2) == pair

    # the same workload again (another seed): nothing is significant
    same = compare.compare_pair(a, sampled.report(1.0, seed=100, rounds=5))
    assert [q.significant for c in same.configs for q in (c.p50, c.p99)] == [False] * 10


def test_without_rounds_significance_is_unknown_and_says_what_settles_it():
    """Reports measured in one round (and schema 1 reports) show how much each run moves
    nowhere: every statistic is "cannot tell", with the reason."""
    a = sampled.report()
    pair = compare.compare_pair(a, sampled.report(3.0, seed=1))
    full = next(c for c in pair.configs if c.name == "wal/full")
    assert full.p50.significant is None and full.p50.ratio == pytest.approx(3.0, rel=0.1)
    assert full.p50.reason.startswith("the baseline and B measured fewer than 3 rounds")
    assert "--rounds 3 or more" in full.p50.reason
    # a summary-only report that kept its rounds' figures can still be tested
    r5 = sampled.report(rounds=5)
    summaries = dataclasses.replace(
        r5, results=tuple(dataclasses.replace(r, samples_ns=()) for r in r5.results)
    )
    assert all(
        c.p50.significant is False
        for c in compare.compare_pair(summaries, sampled.report(seed=7, rounds=5)).configs
    )


def test_regression_needs_size_and_significance():
    a = sampled.report(1.0, seed=0, rounds=5)
    pair = compare.compare_pair(a, sampled.report(1.5, seed=100, rounds=5))
    found = {(r.name, r.statistic.percentile) for r in regression.regressions(pair, 20, "A", "B")}
    names = {n for n, _ in found}
    assert ("wal/full", 50) in found and "write (no sync)" not in names  # baseline skipped
    # no per-commit sync: gated too, with its own label
    gate = regression.check([("B", pair)], 20, "A")
    assert {s.label for s in gate.statistics if s.name == "wal/off"} == {regression.NO_SYNC}
    assert {s.label for s in gate.statistics if s.name == "wal/full"} == {regression.SYNCS}
    assert "write (no sync)" not in {s.name for s in gate.statistics}
    assert {r.name for r in regression.regressions(pair, 20, "A", "B", ["wal/off"])} <= {"wal/off"}
    assert regression.regressions(pair, 200, "A", "B") == []
    assert {r.name for r in regression.regressions(pair, 20, "A", "B", ["wal/full"])} == {
        "wal/full"
    }
    faster = compare.compare_pair(a, sampled.report(0.5, seed=100, rounds=5))
    assert regression.regressions(faster, 0, "A", "B") == []


def test_check_comparable_refuses_mixed_reports():
    a = sampled.report()
    with pytest.raises(FsyncbenchError, match="512-byte payloads in a but 4096-byte"):
        compare.check_comparable([a, sampled.report(payload_bytes=4096)], ["a", "b"])
    with pytest.raises(FsyncbenchError, match="of kind 'run' but b of kind 'audit'"):
        compare.check_comparable([a, dataclasses.replace(a, kind="audit")], ["a", "b"])
    other = dataclasses.replace(
        a, results=tuple(dataclasses.replace(r, name="x" + r.name) for r in a.results)
    )
    with pytest.raises(FsyncbenchError, match="no configuration in common"):
        compare.check_comparable([a, other], ["a", "b"])


def test_fleet_sorted_by_p99_of_the_chosen_config():
    reps = [sampled.report(s, seed=i) for i, s in enumerate((3.0, 1.0, 2.0))]
    assert fleet.fleet_config(reps, None) == "wal/full"
    rows = fleet.fleet(reps, ["slow", "fast", "mid"], "wal/full")
    assert [r.label for r in rows] == ["fast", "mid", "slow"]
    assert fleet.fleet_config(reps, "WRITE+FDATASYNC") == "write+fdatasync"
    with pytest.raises(FsyncbenchError, match="not in every report"):
        fleet.fleet_config(reps, "delete/full")


# --------------------------------------------------------------------------- CLI


@pytest.fixture()
def two_runs(tmp_path):
    a = sampled.save(sampled.report(1.0, seed=0, rounds=5), tmp_path / "before.json")
    b = sampled.save(sampled.report(1.6, seed=100, rounds=5), tmp_path / "after.json")
    return a, b


def test_cli_compare_two_reports_prints_ratios_and_significance(two_runs):
    a, b = two_runs
    proc = fsb("compare", a, b, "--verbose")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.index("Host differences") < out.index("configuration")
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith(("wal/full", "write+"))}
    assert "1.6" in lines["wal/full"] and "yes, slower" in lines["wal/full"]
    assert "P(B>A)" in out and "B/base" in out and "p (Holm)" in out and "basis" in out
    assert "REGRESSION" not in out


def _cli_fail_on_regression_exits_1_with_the_reason(fsb, two_runs):
    a, b = two_runs
    proc = fsb("compare", a, b, "--fail-on-regression", "20")
    assert proc.returncode == 1, proc.stderr
    assert "REGRESSION wal/full p50:" in proc.stdout
    assert "slower by more than 20 %" in proc.stdout
    assert "Gate REGRESSION at --fail-on-regression 20 %" in proc.stdout
    # B against itself: the same run, nothing to tell
    same = fsb("compare", b, b, "--fail-on-regression", "20")
    assert same.returncode == 4 and "REGRESSION" not in same.stdout
    assert "is the same run as" in " ".join(same.stdout.split())
    # an allowance bigger than the change passes
    assert fsb("compare", a, b, "--fail-on-regression", "500").returncode == 0


@pytest.mark.slow
def test_cli_fail_on_regression_exits_1_with_the_reason(two_runs):
    _cli_fail_on_regression_exits_1_with_the_reason(fsb, two_runs)


def test_cli_fail_on_regression_exits_1_with_the_reason_in_process(two_runs, here):
    _cli_fail_on_regression_exits_1_with_the_reason(here, two_runs)


def _cli_fail_on_regression_exits_4_when_it_cannot_tell(fsb, tmp_path):
    """Reports of one round each: nothing can be tested, and the gate says so with exit 4,
    never 0 (a pass in silence) nor 1 (a risk it did not find)."""
    a = sampled.save(sampled.report(1.0, seed=0), tmp_path / "a.json")
    b = sampled.save(sampled.report(1.6, seed=100), tmp_path / "b.json")
    proc = fsb("compare", a, b, "--fail-on-regression", "20")
    assert proc.returncode == 4, proc.stderr
    # p50 and p99 of the 4 configurations a journal could use (all but the no-sync write)
    flat = " ".join(proc.stdout.split())
    assert "8 statistics gated (p50 and p99), 0 failed, 0 passed, 8 cannot tell" in flat
    assert "measured fewer than 3 rounds" in flat and "exit 4" in flat
    # one configuration asked for: only its two statistics
    one = fsb("compare", a, b, "--fail-on-regression", "20", "--gate", "wal/full")
    assert one.returncode == 4 and "2 statistics gated" in one.stdout


@pytest.mark.slow
def test_cli_fail_on_regression_exits_4_when_it_cannot_tell(tmp_path):
    _cli_fail_on_regression_exits_4_when_it_cannot_tell(fsb, tmp_path)


def test_cli_fail_on_regression_exits_4_when_it_cannot_tell_in_process(tmp_path, here):
    _cli_fail_on_regression_exits_4_when_it_cannot_tell(here, tmp_path)


def test_cli_compare_three_reports_prints_the_fleet(tmp_path):
    """Three hosts, each with its own verdict; the table must show each report's own."""
    ssd = BlockDevice(
        "sda",
        model="Samsung SSD 870",
        rotational=False,
        write_cache="write back",
        has_flush_counters=True,
    )
    hosts = {
        # bare metal, the SSD's counters show a flush per fdatasync (sampled.flush: n of n)
        # and p50 ~450 us is above the 150 us floor of an SSD with a volatile write cache
        # and no known power-loss protection: flushes-reach-device, honest_flush
        "server": host(disks=(ssd,), virt=Virtualization(hypervisor_flag=False)),
        # the same disk inside a VM: nothing stronger speaks, so virtualized-storage decides:
        # unverifiable
        "vm": host(disks=(ssd,), virt=Virtualization(hypervisor_flag=True)),
        # tmpfs keeps data in RAM: no-flush-filesystem, no_flush
        "laptop": host(fs_type="tmpfs"),
    }
    paths = []
    for name, scale, seed in (("laptop", 2.0, 1), ("server", 0.5, 2), ("vm", 1.0, 3)):
        rep = sampled.report(scale, seed=seed, the_host=hosts[name])
        rep = dataclasses.replace(rep, host=dataclasses.replace(rep.host, hostname=name))
        paths.append(sampled.save(rep, tmp_path / f"{name}.json"))
    proc = fsb("compare", *paths)
    assert proc.returncode == 0, proc.stderr
    assert "sorted by p99 of wal/full" in proc.stdout
    rows = [
        ln.split() for ln in proc.stdout.splitlines() if ln.split()[:1] and ln.split()[0].isdigit()
    ]
    # the fleet table (one group per host), then the reports table (group, file)
    fleet_rows, report_rows = rows[:3], rows[3:]
    # wal/full p99 scales with 0.5, 1.0, 2.0: server, vm, laptop
    assert [r[:2] for r in fleet_rows] == [["1", "server"], ["2", "vm"], ["3", "laptop"]]
    assert [r[:2] for r in report_rows] == [
        ["1", "server.json"],
        ["2", "vm.json"],
        ["3", "laptop.json"],
    ]
    # last three columns: wal/full verdict, durable config (WAL + FULL: yes), path verdict
    assert [r[-3:] for r in fleet_rows] == [
        ["honest_flush", "durable", "honest_flush"],
        ["unverifiable", "durable", "unverifiable"],
        ["no_flush", "durable", "no_flush"],
    ]
    assert [r[-1] for r in report_rows] == ["honest_flush", "unverifiable", "no_flush"]
    assert [next(c for c in r if c in ("ext4", "tmpfs")) for r in fleet_rows] == [
        "ext4",
        "ext4",
        "tmpfs",
    ]


def _cli_compare_refuses_mismatched_reports(fsb, tmp_path):
    a = sampled.save(sampled.report(), tmp_path / "a.json")
    big = sampled.save(sampled.report(payload_bytes=4096), tmp_path / "big.json")
    proc = fsb("compare", a, big)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "fsyncbench: error: wal/off wrote 512-byte payloads in a.json but 4096-byte payloads in "
        "big.json: re-run with the same --payload-bytes to compare"
    ]

    data = json.loads(a.read_text())
    data["schema_version"] = 0
    old = sampled.save_raw(data, tmp_path / "old.json")
    proc = fsb("compare", a, old)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "old.json has an invalid schema_version 0" in proc.stderr

    newer = sampled.save_raw(
        {**data, "schema_version": store.SCHEMA_VERSION + 1}, tmp_path / "new.json"
    )
    proc = fsb("compare", a, newer)
    assert proc.returncode == 2 and proc.stderr.rstrip().endswith("upgrade fsyncbench")

    for args, msg in (
        ((a,), "compare needs at least two reports"),
        ((a, a, "--config", "nope"), "unknown configuration nope: every report has"),
        ((a, a, "--fail-on-regression", "-5"), "invalid percentage '-5'"),
    ):
        proc = fsb("compare", *args)
        assert proc.returncode == 2 and msg in proc.stderr and len(proc.stderr.splitlines()) == 1


@pytest.mark.slow
def test_cli_compare_refuses_mismatched_reports(tmp_path):
    _cli_compare_refuses_mismatched_reports(fsb, tmp_path)


def test_cli_compare_refuses_mismatched_reports_in_process(tmp_path, here):
    _cli_compare_refuses_mismatched_reports(here, tmp_path)


def test_a_statistic_without_an_interval_is_still_tested_on_its_rounds():
    """The report's own interval may be "none" (its slices disagree too much) while its
    rounds still show how much the run moves: the test between runs rests on those, and
    says so."""
    from factories import _result

    rounds = tuple(i // 2 for i in range(10))
    a = _result(
        "flush",
        "write+fdatasync",
        "fdatasync",
        0,
        samples=list(range(1, 10_001)),
        slice_rounds=rounds,
    )
    b = _result(
        "flush",
        "write+fdatasync",
        "fdatasync",
        0,
        samples=[int(1.3 * x) for x in range(1, 10_001)],
        slice_rounds=rounds,
    )
    assert a.summary.p50_interval.bounds is None
    q = compare.compare_quantile(a, b, 50)
    assert q.p_value is not None and q.basis == "pair"
    assert q.ratio == pytest.approx(1.3, rel=1e-3)
