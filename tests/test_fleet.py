"""``fsyncbench compare DIR``: a directory of reports as a fleet, grouped by host, disk model
and kernel, sorted by one configuration's p99, in every format; real files and the real CLI."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
from pathlib import Path

import pytest
import sampled
from clitools import assert_usage_error, fsb
from factories import host

from fsyncbench import api
from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import BlockDevice, Virtualization
from fsyncbench.report import compare, fleet, regression, store

SSD = BlockDevice(
    "sda",
    model="Samsung SSD 870",
    rotational=False,
    write_cache="write back",
    has_flush_counters=True,
)
NVME = BlockDevice("nvme0n1", model="PM9A3", rotational=False, has_flush_counters=True)


# rows read whole (tests/test_screen_width.py checks the layout at 80 and 100)
pytestmark = pytest.mark.usefixtures("wide_screen")


def _host(name: str, disk: BlockDevice, release: str, vm: bool):
    h = host(disks=(disk,), virt=Virtualization(hypervisor_flag=vm))
    return dataclasses.replace(h, hostname=name, os_release=release)


#: (host, disk, kernel, VM, p50 scale, seed): db1 ran twice on one kernel, once after an
#: upgrade; db2 shares db1's disk model; ci is a VM on the same disk model
FLEET = (
    ("db1", SSD, "6.1.0", False, 0.5, 1),
    ("db1", SSD, "6.1.0", False, 0.7, 2),
    ("db1", SSD, "6.12.0", False, 0.6, 3),
    ("db2", NVME, "6.1.0", False, 0.3, 4),
    ("ci", SSD, "6.1.0", True, 1.5, 5),
)


@pytest.fixture()
def fleet_dir(tmp_path):
    """Reports laid out as ansible's fetch does: <dir>/<host>/<file>.json, plus the
    Markdown twins a run writes (not reports: skipped by extension)."""
    root = tmp_path / "fleet"
    for name, disk, release, vm, scale, seed in FLEET:
        rep = sampled.report(scale, seed=seed, the_host=_host(name, disk, release, vm), rounds=5)
        (root / name).mkdir(parents=True, exist_ok=True)
        sampled.save(rep, root / name / f"{name}-{seed}.json")
        (root / name / f"{name}-{seed}.md").write_text("# not a report\n")
    return root


def _p99(path: Path, config: str = "wal/full") -> float:
    rep = store.load_report(path)
    return next(r for r in rep.results if r.name == config).summary.p99_ns


def test_a_directory_is_a_fleet_grouped_by_host_disk_and_kernel(fleet_dir):
    c = api.compare([fleet_dir])
    assert c.pair is None and c.group_by == ("host", "disk", "kernel")
    keys = [dict(g.key) for g in c.groups]
    assert {(k["host"], k["disk"], k["kernel"]) for k in keys} == {
        ("db1", "Samsung SSD 870", "Linux 6.1.0"),
        ("db1", "Samsung SSD 870", "Linux 6.12.0"),
        ("db2", "PM9A3", "Linux 6.1.0"),
        ("ci", "Samsung SSD 870", "Linux 6.1.0"),
    }
    # labels: the path inside the directory
    assert sorted(r.label for r in c.fleet) == sorted(
        f"{name}/{name}-{seed}.json" for name, *_, seed in FLEET
    )
    # db1 on 6.1.0: two reports; its figure is the median of theirs, its spread their range
    two = next(g for g in c.groups if len(g.rows) == 2)
    p99s = sorted(_p99(fleet_dir / "db1" / f"db1-{s}.json") for s in (1, 2))
    assert two.p99_ns == pytest.approx(statistics.median(p99s))
    assert (two.spread, two.p99_low_ns, two.p99_high_ns) == ("range", p99s[0], p99s[1])
    # a group of one: that report's own interval
    one = next(g for g in c.groups if dict(g.key)["host"] == "db2")
    assert one.spread == "ci"
    assert (one.p99_low_ns, one.p99_high_ns) == one.rows[0].result.summary.p99_ci_ns
    # fastest first: db2 (scale 0.3) ... ci (1.5)
    assert [dict(g.key)["host"] for g in c.groups][0] == "db2"
    assert [dict(g.key)["host"] for g in c.groups][-1] == "ci"
    assert [g.p99_ns for g in c.groups] == sorted(g.p99_ns for g in c.groups)


def test_group_by_disk_puts_different_hosts_together_and_shows_their_disagreement(fleet_dir):
    c = api.compare([fleet_dir], group_by="disk")
    assert c.group_by == ("disk",)
    assert [len(g.rows) for g in c.groups] == [1, 4]  # PM9A3 alone is faster
    text = api.render(c, "text")
    # the Samsung group holds db1 x3 and the VM: hosts and verdicts are tallied, not averaged
    line = next(ln for ln in text.splitlines() if "Samsung SSD 870" in ln and "mixed" in ln)
    assert "mixed: db1 3, ci 1" in line
    assert "mixed: honest_flush 3, unverifiable 1" in line
    assert "Verdicts differ within a group." in text and "Group 2:" in text


def test_group_by_report_is_one_row_per_report(fleet_dir):
    c = api.compare([fleet_dir], group_by="report")
    assert c.group_by == () and len(c.groups) == len(FLEET)
    assert all(len(g.rows) == 1 and g.key == () for g in c.groups)
    assert [g.rows[0].label for g in c.groups] == [r.label for r in c.fleet]


def test_parse_group_by():
    assert fleet.parse_group_by(None) == ("host", "disk", "kernel")
    assert fleet.parse_group_by("Kernel, host") == ("host", "kernel")
    assert fleet.parse_group_by(["disk", "host,disk"]) == ("host", "disk")
    assert fleet.parse_group_by("report") == ()
    assert fleet.parse_group_by("dir,host") == ("host", "dir")
    for bad in ("rack", "host,rack", ","):
        with pytest.raises(FsyncbenchError, match="--group-by takes a comma list of host"):
            fleet.parse_group_by(bad)
    with pytest.raises(FsyncbenchError, match="cannot be combined with fields"):
        fleet.parse_group_by("report,host")


def test_the_chosen_configuration_sorts_the_fleet(fleet_dir):
    c = api.compare([fleet_dir], configs="write+fdatasync", group_by="report")
    assert c.config == "write+fdatasync"
    p99 = [g.rows[0].result.summary.p99_ns for g in c.groups]
    assert [g.rows[0].result.name for g in c.groups] == ["write+fdatasync"] * len(FLEET)
    assert p99 == sorted(p99)


def _cli_fleet_text_markdown_html_json(fsb, fleet_dir):
    text = fsb("compare", fleet_dir)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("fsyncbench fleet: 5 reports sorted by p99 of wal/full\n")
    assert "grouped by host, disk, kernel, 4 rows, fastest median first" in text.stdout
    md = fsb("compare", fleet_dir, "--format", "markdown")
    assert md.returncode == 0, md.stderr
    header = next(ln for ln in md.stdout.splitlines() if ln.startswith("|"))
    assert [c.strip() for c in header.strip("|").split("|")][:4] == [
        "\\#",
        "host",
        "disk",
        "kernel",
    ]
    page = fsb("compare", fleet_dir, "--format", "html")
    assert page.returncode == 0 and page.stdout.startswith("<!DOCTYPE html>")
    assert page.stdout.count("<tr>") == 1 + 4 + 1 + 5  # two tables: header + rows each
    js = fsb("compare", fleet_dir, "--format", "json", "--group-by", "host")
    assert js.returncode == 0, js.stderr
    data = json.loads(js.stdout)
    assert (data["kind"], data["config"], data["group_by"]) == ("fleet", "wal/full", ["host"])
    assert [g["key"]["host"] for g in data["groups"]] == ["db2", "db1", "ci"]
    db1 = data["groups"][1]
    assert len(db1["reports"]) == 3 and db1["p99_spread"] == "range"
    assert db1["p99_ns"] == pytest.approx(statistics.median(r["p99_ns"] for r in db1["reports"]))
    assert {r["os"] for r in db1["reports"]} == {"Linux 6.1.0", "Linux 6.12.0"}


@pytest.mark.slow
def test_cli_fleet_text_markdown_html_json(fleet_dir):
    _cli_fleet_text_markdown_html_json(fsb, fleet_dir)


def test_cli_fleet_text_markdown_html_json_in_process(fleet_dir, here):
    _cli_fleet_text_markdown_html_json(here, fleet_dir)


def test_cli_fleet_to_a_file_and_a_single_report_directory(fleet_dir, tmp_path):
    out = tmp_path / "fleet.html"
    proc = fsb("compare", fleet_dir / "db2", "--format", "html", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and "fsyncbench fleet: 1 report sorted by p99" in out.read_text()


def _a_baseline_file_then_a_directory_gates_each_against_the_baseline(fsb, fleet_dir):
    base = fleet_dir / "db2" / "db2-4.json"
    proc = fsb("compare", base, fleet_dir, "--fail-on-regression", "20")
    # the slowest hosts are 2-5x slower than the baseline: regressions, and the file is
    # not compared with itself again under the directory
    assert proc.returncode == 1, proc.stderr
    assert "REGRESSION wal/full" in proc.stdout and "in db2-4.json" in proc.stdout
    assert "db2/db2-4.json" not in proc.stdout.split("The reports")[0]
    c = api.compare([base, fleet_dir])
    assert len(c.fleet) == len(FLEET)


@pytest.mark.slow
def test_a_baseline_file_then_a_directory_gates_each_against_the_baseline(fleet_dir):
    _a_baseline_file_then_a_directory_gates_each_against_the_baseline(fsb, fleet_dir)


def test_a_baseline_file_then_a_directory_gates_each_against_the_baseline_in_process(
    fleet_dir, here
):
    _a_baseline_file_then_a_directory_gates_each_against_the_baseline(here, fleet_dir)


def _bad_fleet_inputs(fsb, fleet_dir, tmp_path):
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "sub" / "notes.md").write_text("x")
    assert_usage_error(fsb("compare", empty), f"no report (*.json) under {empty}")
    assert_usage_error(
        fsb("compare", fleet_dir, "--group-by", "rack"),
        "--group-by takes a comma list of host, disk, kernel, dir, or report for one row per "
        "report, not rack",
    )
    assert_usage_error(
        fsb("compare", fleet_dir, "--fail-on-regression", "20"),
        f"--fail-on-regression compares against a baseline report, and {fleet_dir} is a "
        "directory: give the baseline report file first, then the directory",
    )
    names = [r.name for r in store.load_report(next(fleet_dir.rglob("*.json"))).results]
    assert_usage_error(
        fsb("compare", fleet_dir, "--config", "delete/extra"),
        f"unknown configuration delete/extra: every report has {', '.join(names)}",
    )
    # something else's JSON among the reports is named, not skipped in silence
    (fleet_dir / "db2" / "inventory.json").write_text('{"hosts": []}')
    proc = fsb("compare", fleet_dir)
    assert proc.returncode == 2 and "inventory.json" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1


@pytest.mark.slow
def test_bad_fleet_inputs(fleet_dir, tmp_path):
    _bad_fleet_inputs(fsb, fleet_dir, tmp_path)


def test_bad_fleet_inputs_in_process(fleet_dir, tmp_path, here):
    _bad_fleet_inputs(here, fleet_dir, tmp_path)


@pytest.mark.skipif(
    getattr(os, "geteuid", lambda: 0)() == 0, reason="root reads any directory (or no POSIX uid)"
)
def test_an_unreadable_subdirectory_is_one_line(fleet_dir):
    locked = fleet_dir / "db2"
    locked.chmod(0)
    try:
        proc = fsb("compare", fleet_dir)
    finally:
        locked.chmod(0o755)
    assert_usage_error(proc, f"cannot read directory {locked}: Permission denied")


def test_two_files_are_still_a_pair_and_render_as_html(fleet_dir):
    a, b = fleet_dir / "db1" / "db1-1.json", fleet_dir / "db1" / "db1-2.json"
    c = api.compare([a, b])
    assert c.pair is not None and not c.groups
    page = api.render(c, "html")
    assert (
        page.startswith("<!DOCTYPE html>")
        and "fsyncbench compare: db1-1.json vs db1-2.json" in page
    )
    assert "Host differences" in page and "<pre>" in page
    # --group-by makes two files a fleet
    assert api.compare([a, b], group_by="host").pair is None


def _holm(ps):
    """Holm's step-down adjustment, written out (Holm 1979): the reference here."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def test_a_fleet_gate_adjusts_over_every_report_at_once():
    """Three candidates 1.6x slower than one baseline: each regression's one-sided p is
    Holm-adjusted over every statistic checked (p50 and p99 of every configuration but the
    no-sync write) in all three pairs, not within its own pair."""

    base = sampled.report(1.0, seed=0, rounds=5)
    cands = [sampled.report(1.6, seed=s, rounds=5) for s in (11, 12, 13)]
    pairs = [(f"c{i}", compare.compare_pair(base, c)) for i, c in enumerate(cands)]
    raw = []
    for _label, pair in pairs:
        for c in pair.configs:
            if c.kind == "write":
                continue
            for q in (c.p50, c.p99):
                assert q.p_value is not None and q.ratio is not None
                raw.append(q.p_value / 2 if q.ratio > 1 else 1 - q.p_value / 2)
    assert len(raw) == 24  # 3 pairs x 4 configurations x 2 statistics
    found = regression.fleet_regressions(pairs, 20.0, "base")
    assert found, "1.6x slower figures must be regressions above 20 %"
    expected = _holm(raw)
    assert sorted(r.p_adjusted for r in found) == pytest.approx(sorted(expected)[: len(found)])
    # the pair-by-pair adjustment is smaller: what the fleet gate no longer reports
    alone = [r.p_adjusted for _l, p in pairs for r in regression.regressions(p, 20.0, "base", _l)]
    assert sum(alone) < sum(r.p_adjusted for r in found)


def _a_report_without_intervals_is_not_checked_and_the_others_are(fsb, tmp_path):
    """In a fleet gate, a report of one round (no spread between rounds) is "cannot tell";
    the other reports are still gated, and a regression among them still exits 1."""
    base = sampled.save(sampled.report(1.0, seed=0, rounds=5), tmp_path / "base.json")
    fleet_dir = tmp_path / "fleet"
    fleet_dir.mkdir()
    sampled.save(sampled.report(3.0, seed=1, rounds=5), fleet_dir / "slow.json")
    blind = sampled.report(1.0, seed=2)
    blind = dataclasses.replace(
        blind, results=tuple(dataclasses.replace(r, slice_counts=()) for r in blind.results)
    )
    sampled.save(blind, fleet_dir / "blind.json")
    c = api.compare([base, fleet_dir], fail_on_regression=20)
    assert {r.candidate for r in c.regressions} == {"slow.json"}
    assert any(n.endswith("in blind.json") for n in c.not_checked)
    proc = fsb("compare", base, fleet_dir, "--fail-on-regression", "20")
    assert proc.returncode == 1, proc.stderr
    assert "CANNOT TELL " in proc.stdout and "in blind.json" in proc.stdout
    # two reports, nothing testable: not passed (exit 4), not refused
    alone = api.compare([base, fleet_dir / "blind.json"], fail_on_regression=20)
    assert alone.regressions == () and len(alone.not_checked) == 8
    proc = fsb("compare", base, fleet_dir / "blind.json", "--fail-on-regression", "20")
    flat = " ".join(proc.stdout.split())
    assert proc.returncode == 4 and "8 statistics gated (p50 and p99), 0 failed" in flat


@pytest.mark.slow
def test_a_report_without_intervals_is_not_checked_and_the_others_are(tmp_path):
    _a_report_without_intervals_is_not_checked_and_the_others_are(fsb, tmp_path)


def test_a_report_without_intervals_is_not_checked_and_the_others_are_in_process(tmp_path, here):
    _a_report_without_intervals_is_not_checked_and_the_others_are(here, tmp_path)


def test_a_copy_of_a_report_is_read_once_and_said(fleet_dir, tmp_path):
    """The same run under two paths (a copy, the baseline found again) counts once; the
    output names the copy. Two different runs of one host stay two."""
    src = fleet_dir / "db2" / "db2-4.json"
    (fleet_dir / "copies").mkdir()
    (fleet_dir / "copies" / "again.json").write_bytes(src.read_bytes())
    c = api.compare([fleet_dir])
    assert len(c.fleet) == len(FLEET)
    assert c.duplicates == (("db2/db2-4.json", "copies/again.json"),)
    text = api.render(c, "text")
    assert "Duplicate reports. Read once: db2/db2-4.json (as copies/again.json)." in text
    data = json.loads(api.render(c, "json"))
    assert data["duplicates"] == [{"label": "db2/db2-4.json", "same_as": "copies/again.json"}]
    # a baseline copied into the directory: gated against once, not compared with itself
    base = tmp_path / "base.json"
    base.write_bytes(src.read_bytes())
    c = api.compare([base, fleet_dir], fail_on_regression=20)
    assert len(c.fleet) == len(FLEET)
    assert {k for _, k in c.duplicates} == {"base.json"}


def _mixed_kinds_under_a_directory_are_named_and_chosen_with_kind(fsb, fleet_dir):
    rep = store.load_report(fleet_dir / "ci" / "ci-5.json")
    audit = dataclasses.replace(rep, kind="audit", created_utc="2026-12-01T00:00:00Z")
    sampled.save(audit, fleet_dir / "ci" / "audit.json")
    assert_usage_error(
        fsb("compare", fleet_dir),
        "the reports are of kinds run (5), audit (1), which measured different things: "
        "compare one kind, e.g. --kind run",
    )
    assert len(api.compare([fleet_dir], kind="run").fleet) == len(FLEET)
    only = api.compare([fleet_dir], kind="audit")
    assert [r.label for r in only.fleet] == ["ci/audit.json"]
    with pytest.raises(FsyncbenchError, match=r"no report of kind 'audit' \(found: run\)"):
        api.compare([fleet_dir / "db1"], kind="audit")


@pytest.mark.slow
def test_mixed_kinds_under_a_directory_are_named_and_chosen_with_kind(fleet_dir):
    _mixed_kinds_under_a_directory_are_named_and_chosen_with_kind(fsb, fleet_dir)


def test_mixed_kinds_under_a_directory_are_named_and_chosen_with_kind_in_process(fleet_dir, here):
    _mixed_kinds_under_a_directory_are_named_and_chosen_with_kind(here, fleet_dir)


def test_group_by_dir_keeps_redacted_hosts_apart(fleet_dir):
    """Redacted reports all say host redacted-host: grouped by host they would share a row
    (and the output says so); grouped by the directory ansible fetched them into, they don't."""
    from fsyncbench.report.redact import REDACTED_HOST

    for path in fleet_dir.rglob("*.json"):
        rep = store.load_report(path)
        sampled.save(
            dataclasses.replace(rep, host=dataclasses.replace(rep.host, hostname=REDACTED_HOST)),
            path,
        )
    by_host = api.compare([fleet_dir], group_by="host")
    assert len(by_host.groups) == 1
    assert "Redacted hostnames." in api.render(by_host, "text")
    by_dir = api.compare([fleet_dir], group_by="dir")
    assert sorted(dict(g.key)["dir"] for g in by_dir.groups) == ["ci", "db1", "db2"]
    assert "Redacted hostnames." not in api.render(by_dir, "text")


def test_the_notes_say_which_orders_are_not_established(tmp_path):
    """Two hosts with the same p99 distribution: their order is the median's alone, and the
    note names the rows; two hosts 10x apart are ordered by the figures."""
    root = tmp_path / "f"
    root.mkdir()
    for name, scale, seed in (("a", 1.0, 1), ("b", 1.0, 2), ("c", 10.0, 3)):
        rep = sampled.report(scale, seed=seed, the_host=_host(name, SSD, "6.1.0", False))
        sampled.save(rep, root / f"{name}.json")
    c = api.compare([root])
    notes = json.loads(api.render(c, "json"))["notes"]
    assert any(n.startswith("Not a ranking everywhere. Rows 1-2:") for n in notes)
    assert not any("2-3" in n for n in notes)


def test_a_disagreement_names_what_else_differs(fleet_dir):
    """db1 ran on two kernels; grouped by host and disk they share a row, the verdicts are
    made to differ (one run's facts say a hypervisor: the fleet judges every report again,
    so an edited verdict alone would not differ), and the note says the kernel differs too
    (not 'the same storage')."""
    path = fleet_dir / "db1" / "db1-3.json"
    rep = store.load_report(path)
    guest = dataclasses.replace(rep.host, virtualization=Virtualization(hypervisor_flag=True))
    sampled.save(dataclasses.replace(rep, host=guest), path)
    c = api.compare([fleet_dir], group_by="host,disk")
    text = api.render(c, "text")
    flat = " ".join(text.split())  # running text is wrapped at 100 columns
    note = flat[flat.index("Verdicts differ within a group.") :].split(" ! ")[0]
    assert "they differ in kernel as well" in note


def test_the_disk_key_does_not_depend_on_the_kernel_s_order(tmp_path):
    root = tmp_path / "f"
    root.mkdir()
    for i, disks in enumerate(((SSD, NVME), (NVME, SSD))):
        h = dataclasses.replace(_host("db", SSD, "6.1.0", False), os_release="6.1.0")
        h = dataclasses.replace(h, target=dataclasses.replace(h.target, disks=disks))
        sampled.save(sampled.report(1.0, seed=i, the_host=h), root / f"{i}.json")
    c = api.compare([root])
    assert len(c.groups) == 1 and dict(c.groups[0].key)["disk"] == "PM9A3 + Samsung SSD 870"


def test_a_missing_path_is_named(tmp_path):
    assert_usage_error(
        fsb("compare", tmp_path / "nope"), f"report {tmp_path / 'nope'} does not exist"
    )
