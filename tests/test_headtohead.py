"""Two configurations head to head (``run --vs``, ``show --vs``): the paired ratio over
rounds, calibrated both ways (A/A pairs against planted ratios), the default pair, the
screen and bad input."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import this_platform
from factories import commit

from fsyncbench import cli
from fsyncbench.measure import headtohead
from fsyncbench.report import headtohead as view

ROUNDS = 8


def _with_rounds(r, p50_rounds, p99_rounds=None):
    p50_rounds = tuple(float(x) for x in p50_rounds)
    p99_rounds = tuple(
        float(x) for x in (p99_rounds if p99_rounds is not None else [x * 2 for x in p50_rounds])
    )
    s = dataclasses.replace(
        r.summary,
        p50_ns=float(np.median(p50_rounds)),
        p99_ns=float(np.median(p99_rounds)),
        round_p50_ns=p50_rounds,
        round_p99_ns=p99_rounds,
    )
    return dataclasses.replace(r, summary=s)


def _pair(rng, ratio, sd_round=0.10, sd_own=0.05, rounds=ROUNDS):
    """Rounds of A and B: a shared per-round factor (the machine at that moment, which
    the pairing removes) and each one's own noise; A = ratio x B in truth."""
    shared = rng.normal(0, sd_round, rounds)
    a = 200_000 * ratio * np.exp(shared + rng.normal(0, sd_own, rounds))
    b = 200_000 * np.exp(shared + rng.normal(0, sd_own, rounds))
    return _with_rounds(commit("WAL", "FULL", 1), a), _with_rounds(commit("TRUNCATE", "FULL", 1), b)


def test_a_known_ratio_is_found_and_its_interval_holds_it():
    rng = np.random.default_rng(1)
    a, b = _pair(rng, 4.0)
    r = headtohead.paired_ratio(a, b, 50.0)
    assert r.paired and r.rounds == ROUNDS and r.df == ROUNDS - 1
    assert r.low < 4.0 < r.high and r.separated
    assert "faster" not in view.ratio_phrase(r) and "slower at p50" in view.ratio_phrase(r)
    back = headtohead.paired_ratio(b, a, 50.0)
    assert back.ratio == pytest.approx(1 / r.ratio) and "faster at p50" in view.ratio_phrase(back)


def test_a_and_a_are_told_apart_about_one_time_in_twenty_and_a_real_gap_almost_always():
    """Calibration both ways: the 95 % interval leaves out 1 in ~5 % of A/A pairs, and a
    planted 1.25x (twice the rounds' own noise) is separated in >= 80 %."""
    rng = np.random.default_rng(7)
    n = 2000
    aa = sum(headtohead.paired_ratio(*_pair(rng, 1.0), 50.0).separated for _ in range(n)) / n
    assert 0.02 <= aa <= 0.08, aa
    planted = (
        sum(headtohead.paired_ratio(*_pair(rng, 1.25), 50.0).separated for _ in range(400)) / 400
    )
    assert planted >= 0.8, planted
    # unpaired (two reports): the shared round factor is not removed, so it needs more
    un_aa = sum(headtohead.unpaired_ratio(*_pair(rng, 1.0), 50.0).separated for _ in range(n)) / n
    assert un_aa <= 0.08, un_aa
    un_2x = (
        sum(headtohead.unpaired_ratio(*_pair(rng, 2.0), 50.0).separated for _ in range(400)) / 400
    )
    assert un_2x >= 0.8, un_2x


def test_no_interval_below_three_rounds_or_with_a_zero_round():
    rng = np.random.default_rng(2)
    a, b = _pair(rng, 2.0, rounds=2)
    r = headtohead.paired_ratio(a, b, 99.0)
    assert r.bounds is None and "at least 3" in r.reason and not r.separated
    assert "no interval" in view.ratio_phrase(r)
    a, b = _pair(rng, 2.0)
    zero = _with_rounds(a, [0.0, *a.summary.round_p50_ns[1:]])
    assert headtohead.paired_ratio(zero, b, 50.0).reason == "a round measured 0 ns"
    with pytest.raises(ValueError, match="50 or 99"):
        headtohead.paired_ratio(a, b, 90.0)


def test_the_interval_holding_one_reads_not_measurably_different():
    rng = np.random.default_rng(3)
    for _ in range(50):
        r = headtohead.paired_ratio(*_pair(rng, 1.0), 50.0)
        if not r.separated:
            break
    assert view.ratio_phrase(r).startswith("not measurably different at p50 (")


def test_the_nearest_rival_is_the_closest_p50_on_a_log_scale():
    wal, trunc, delete, off = (
        commit("WAL", "FULL", 150_000),
        commit("TRUNCATE", "FULL", 650_000),
        commit("DELETE", "FULL", 700_000),
        commit("WAL", "OFF", 50_000),
    )
    assert headtohead.rival(wal, [wal, trunc, delete]).name == "truncate/full"
    assert headtohead.rival(wal, [wal, off, trunc]).name == "wal/off"  # 3x is nearer than 4.3x
    assert headtohead.rival(wal, [wal]) is None


# ------------------------------------------------------------------ real reports

#: This platform's names of the configurations measured here (macOS: fullfsync on, as the
#: run below measures them there: wal/full/fullfsync).
WAL_FULL, WAL_NORMAL = this_platform.label("wal/full"), this_platform.label("wal/normal")
TRUNCATE_FULL = this_platform.label("truncate/full")
TRUNCATE_NORMAL = this_platform.label("truncate/normal")
DELETE_FULL = this_platform.label("delete/full")


@pytest.fixture(scope="module")
def report_path(tmp_path_factory):
    import fsyncbench

    target = tmp_path_factory.mktemp("h2h")
    rep = fsyncbench.run(
        target,
        journal_modes="wal,truncate",
        synchronous="normal,full",
        fullfsync="on" if this_platform.MACOS else None,
        samples=400,
        rounds=3,
        primitives=False,
        command_line=["fsyncbench", "run"],
    )
    path = target.parent / "h2h-report.json"
    path.write_text(fsyncbench.render(rep, "json"))
    return path


def test_the_default_screen_sets_the_recommended_against_its_nearest_durable_rival(
    report_path, capsys
):
    assert cli.main(["show", str(report_path)]) == 0
    out = capsys.readouterr().out
    choose = out[out.index("Choose:") : out.index("Cost of durability")]
    flat = choose.replace("\n", " ")
    # wal/full recommended; its nearest durable rival is truncate/full, in the answer
    assert f"Against {TRUNCATE_FULL}, its nearest rival: " in flat
    assert "3 paired rounds" in flat
    assert max(len(line) for line in choose.splitlines()) <= 100
    # the full report has a section of its own, with its table
    assert cli.main(["show", str(report_path), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    section = md[md.index("## Head to head") :]
    assert (
        section.index(f"| {WAL_FULL} ")
        < section.index(f"| {TRUNCATE_FULL} ")
        < section.index("\n## ")
    )


def test_vs_chooses_the_pair_and_bad_names_are_one_line(report_path, capsys):
    assert cli.main(["show", str(report_path), "--vs", f"{WAL_NORMAL},{WAL_FULL}"]) == 0
    out = capsys.readouterr().out.replace("\n", " ")
    assert f"Head to head, {WAL_NORMAL} against {WAL_FULL}:" in out
    assert f"{WAL_NORMAL} may lose acknowledged commits" in out
    assert f"{WAL_FULL} keeps every acknowledged commit" in out
    for bad, words in (
        (f"{WAL_FULL},wal/fast", "--vs: wal/fast was not measured here"),
        (WAL_FULL, "--vs takes two different configurations"),
        (f"{WAL_FULL},{WAL_FULL}", "--vs takes two different configurations"),
    ):
        assert cli.main(["show", str(report_path), "--vs", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err


def test_run_refuses_a_vs_it_will_not_measure_before_measuring(tmp_path, capsys):
    assert (
        cli.main(
            [
                "run",
                str(tmp_path),
                "--journal-mode",
                "wal",
                "--vs",
                f"{WAL_FULL},{DELETE_FULL}",
                "--no-report",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and f"{DELETE_FULL} is not among the configurations this run measures" in err[0]
    )
    assert list(tmp_path.iterdir()) == []


def test_a_run_saved_with_vs_shows_that_pair_again(report_path, tmp_path, capsys):
    data = json.loads(Path(report_path).read_text())
    data["command_line"] = ["fsyncbench", "run", "--vs", f"{TRUNCATE_NORMAL},{WAL_NORMAL}"]
    saved = tmp_path / "again.json"
    saved.write_text(json.dumps(data))
    assert cli.main(["show", str(saved), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert f"{TRUNCATE_NORMAL} against {WAL_NORMAL}" in out.replace("\n", " ")


def test_compare_sets_one_reports_configuration_against_anothers(report_path, tmp_path, capsys):
    other = tmp_path / "b.json"
    data = json.loads(Path(report_path).read_text())
    data["created_utc"] = "2026-12-06T09:00:00Z"
    other.write_text(json.dumps(data))
    assert (
        cli.main(["compare", str(report_path), str(other), "--vs", f"{WAL_FULL},{TRUNCATE_FULL}"])
        == 0
    )
    out = capsys.readouterr().out
    first = out.split("\n\n")[0].replace("\n ", "")
    assert first.startswith(
        f"Head to head: {WAL_FULL} in h2h-report.json against {TRUNCATE_FULL} in"
    )
    assert "Welch" in first and max(len(line) for line in out.split("\n\n")[0].splitlines()) <= 100
    assert (
        cli.main(
            [
                "compare",
                str(report_path),
                str(other),
                "--vs",
                f"{WAL_FULL},{TRUNCATE_FULL}",
                "--format",
                "json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)["head_to_head"]
    assert [r["percentile"] for r in rows] == [50.0, 99.0]
    assert (
        cli.main(["compare", str(report_path), str(other), "--vs", f"{WAL_FULL},{WAL_NORMAL}"]) == 0
    )
    capsys.readouterr()
    # one configuration of two reports against each other is a question too
    assert (
        cli.main(["compare", str(report_path), str(other), "--vs", f"{WAL_FULL},{WAL_FULL}"]) == 0
    )
    assert f"{WAL_FULL} in h2h-report.json against {WAL_FULL} in b.json" in " ".join(
        capsys.readouterr().out.split()
    )
    for argv, words in (
        (["--vs", f"{WAL_FULL},{DELETE_FULL}"], f"did not measure {DELETE_FULL}"),
        (["--vs", WAL_FULL], "--vs takes two different configurations"),
    ):
        assert cli.main(["compare", str(report_path), str(other), *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err


def test_unpaired_ratio_of_a_run_against_its_copy_holds_one(report_path):
    from fsyncbench.report import store

    rep = store.load_report(Path(report_path))
    wal = next(r for r in rep.results if r.name == WAL_FULL)
    r = headtohead.unpaired_ratio(wal, wal, 50.0)
    assert r.ratio == pytest.approx(1.0) and r.low < 1.0 < r.high and not r.paired


def test_a_ratio_not_told_apart_reads_from_a_s_view_as_the_rest_of_the_sentence():
    """It printed A/B (0.22x) where every other figure is 'times faster' (4.5x)."""
    r = headtohead.RatioInterval("wal/full", "truncate/full", 99.0, 0.22, 0.05, 1.09, 3, 2, True)
    assert view.ratio_phrase(r) == (
        "not measurably different at p99 (4.55x faster, but [0.92, 20.00] holds 1)"
    )
    s = headtohead.RatioInterval("a", "b", 50.0, 2.0, 0.8, 5.0, 3, 2, True)
    assert (
        view.ratio_phrase(s)
        == "not measurably different at p50 (2.00x slower, but [0.80, 5.00] holds 1)"
    )
