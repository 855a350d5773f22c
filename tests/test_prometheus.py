"""--prometheus FILE: a report as node_exporter textfile-collector metrics, through the real
CLI (run and audit measuring a real directory, show on the hand-written fixture reports and
the example report), read back with prometheus_client's own parser and compared series by
series with the report they came from, and checked by ``promtool check metrics`` (Debian's
``prometheus`` package; skipped where it is not installed). No durations are asserted."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import this_platform
from clitools import assert_usage_error, fsb, leftovers
from prometheus_client.parser import text_string_to_metric_families

import fsyncbench
from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import Report
from fsyncbench.report import prometheus, store

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "tests" / "fixtures" / "reports"
FIXTURES = sorted(REPORTS.glob("*.json"))
#: A real schema 2 run (this VM, one run alone): some statistics have no interval
EXAMPLE = ROOT / "tests" / "fixtures" / "runs" / "vm-20261201T113650Z.json"
PROMTOOL = shutil.which("promtool")
QUICK = ["--samples", "30", "--rounds", "1", "--warmup", "2", "--quiet"]

Key = tuple[str, frozenset]


# --------------------------------------------------------------------------- the oracle


def series(text: str) -> dict[Key, float]:
    """Every sample of ``text`` (parsed by prometheus_client) by name and labels; a repeated
    one fails (node_exporter refuses such a file)."""
    out: dict[Key, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, f"repeated series {key}"
            out[key] = s.value
    return out


def expected(report: Report) -> dict[Key, float]:
    """The series a report must give, written out from the report's fields alone (not with
    fsyncbench.report.prometheus): durations in seconds, an interval only where the report
    has one, durability only where it is known."""
    common = {
        "host": report.host.hostname,
        "path": report.host.target.path,
        "report_kind": report.kind,
    }
    out: dict[Key, float] = {}

    def put(name: str, labels: dict, value: float) -> None:
        out[(name, frozenset(labels.items()))] = value

    labels_of = {}
    for r in report.results:
        p = r.effective or r.requested
        labels = {
            **common,
            "config": r.name,
            "kind": r.kind,
            "primitive": r.primitive,
            "journal_mode": p.journal_mode.lower() if p else "",
            "synchronous": p.synchronous.lower() if p else "",
            "fullfsync": "" if p is None or p.fullfsync is None else "on" if p.fullfsync else "off",
        }
        labels_of[r.name] = labels
        s = r.summary
        put("fsyncbench_latency_seconds", {**labels, "quantile": "0.5"}, s.p50_ns / 1e9)
        put("fsyncbench_latency_seconds", {**labels, "quantile": "0.99"}, s.p99_ns / 1e9)
        put("fsyncbench_latency_seconds_count", labels, s.count)
        put("fsyncbench_latency_seconds_sum", labels, s.mean_ns * s.count / 1e9)
        for q, ci in (("0.5", s.p50_ci_ns), ("0.99", s.p99_ci_ns)):
            if ci is not None:
                for bound, ns in zip(("low", "high"), ci):
                    extra = {"for_quantile": q, "bound": bound, "confidence": "0.95"}
                    put("fsyncbench_latency_ci_seconds", {**labels, **extra}, ns / 1e9)
        put("fsyncbench_operations_per_second", labels, s.ops_per_s)
        if r.syncs_issued is not None:
            put("fsyncbench_syncs_issued", labels, r.syncs_issued)
        for d in r.device_flushes:
            if d.flushes is not None:
                put("fsyncbench_device_flushes", {**labels, "device": d.device}, d.flushes)
                if r.syncs_issued:
                    put(
                        "fsyncbench_device_flushes_per_sync",
                        {**labels, "device": d.device},
                        d.flushes / r.syncs_issued,
                    )
    v = report.verdict
    how = {"strength": v.strength or "unrecorded", "decided_by": v.decided_by}
    put("fsyncbench_path_verdict", {**common, "verdict": v.path_verdict, **how}, 1)
    for rv in v.results:
        labels = labels_of.get(rv.subject) or {
            **common,
            "config": rv.subject,
            **dict.fromkeys(("kind", "primitive", "journal_mode", "synchronous", "fullfsync"), ""),
        }
        how = {"strength": rv.strength or "unrecorded", "decided_by": rv.decided_by}
        put("fsyncbench_config_path_verdict", {**labels, "verdict": rv.path_verdict, **how}, 1)
        if rv.config_durable is not None:
            put("fsyncbench_config_durable", labels, 1 if rv.config_durable else 0)
    created = dt.datetime.strptime(report.created_utc, "%Y-%m-%dT%H:%M:%SZ")
    put(
        "fsyncbench_report_created_timestamp_seconds",
        common,
        created.replace(tzinfo=dt.timezone.utc).timestamp(),
    )
    virtualized = report.host.virtualization.virtualized
    info = {
        "tool_version": report.tool_version,
        "schema_version": str(report.schema_version),
        "os": report.host.os_name,
        "os_release": report.host.os_release,
        "fs_type": report.host.target.mount.fs_type if report.host.target.mount else "",
        "sqlite_version": report.host.sqlite_version,
        "virtualized": "unknown" if virtualized is None else str(virtualized).lower(),
    }
    put("fsyncbench_report_info", {**common, **info}, 1)
    return out


def differences(text: str, report: Report) -> list[str]:
    """What ``text`` gets wrong about ``report``: series missing, extra or with another
    value (empty: none)."""
    got, want = series(text), expected(report)
    return (
        [f"missing {k}" for k in want.keys() - got.keys()]
        + [f"extra {k}" for k in got.keys() - want.keys()]
        + [f"{k}: {got[k]} != {want[k]}" for k in want.keys() & got.keys() if got[k] != want[k]]
    )


def promtool(text: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )


def assert_promtool_passes(path: Path) -> None:
    if PROMTOOL is None:
        pytest.skip("promtool not installed (Debian package prometheus)")
    proc = promtool(path.read_text())
    assert (proc.returncode, proc.stdout + proc.stderr) == (0, "")


def latency(text: str, config: str, quantile: str) -> float:
    """The one latency quantile of ``config`` in ``text``."""
    (value,) = [
        v
        for (name, labels), v in series(text).items()
        if name == "fsyncbench_latency_seconds"
        and ("config", config) in labels
        and ("quantile", quantile) in labels
    ]
    return value


def ci_series(text: str, config: str) -> set[tuple[str, str]]:
    """(for_quantile, bound) of every interval series of ``config``."""
    return {
        (dict(labels)["for_quantile"], dict(labels)["bound"])
        for (name, labels), _ in series(text).items()
        if name == "fsyncbench_latency_ci_seconds" and ("config", config) in labels
    }


# --------------------------------------------------------------------------- run and audit


@pytest.fixture(scope="module")
def run_prom(tmp_path_factory):
    """One real run of wal/off and wal/full on this machine's disk, printing JSON to -o and
    writing the metrics over a stale file of the same name."""
    target = tmp_path_factory.mktemp("target")
    out = tmp_path_factory.mktemp("out")
    textfile = tmp_path_factory.mktemp("textfile")
    prom = textfile / "fsyncbench.prom"
    prom.write_text("# a stale file from an earlier run\nstale_metric 1\n")
    stale_inode = prom.stat().st_ino
    proc = fsb(
        "run",
        target,
        "--journal-mode",
        "wal",
        "--synchronous",
        "off,full",
        *this_platform.ONE_FULLFSYNC,
        *QUICK,
        "--report-dir",
        out / "reports",
        "--format",
        "json",
        "-o",
        out / "printed.json",
        "--prometheus",
        prom,
    )
    return target, out, prom, stale_inode, proc


@pytest.mark.slow
def test_run_writes_the_report_as_metrics(run_prom):
    target, out, prom, _inode, proc = run_prom
    assert proc.returncode == 0, proc.stderr
    assert str(prom) in proc.stderr  # "Report written: ..., FILE"
    (saved,) = (out / "reports").glob("*.json")
    report = store.load_report(saved)
    # --format json -o FILE still gets the report
    assert json.loads((out / "printed.json").read_text()) == json.loads(saved.read_text())
    text = prom.read_text()
    assert differences(text, report) == []
    name = this_platform.label("wal/full")  # wal/full/fullfsync on macOS
    wal_full = next(r for r in report.results if r.name == name)
    assert latency(text, name, "0.99") == wal_full.summary.p99_ns / 1e9
    assert latency(text, name, "0.5") == wal_full.summary.p50_ns / 1e9
    labels = dict(
        next(
            labels
            for (metric, labels) in series(text)
            if metric == "fsyncbench_latency_seconds" and ("config", name) in labels
        )
    )
    assert {k: labels[k] for k in ("journal_mode", "synchronous", "kind", "report_kind")} == {
        "journal_mode": "wal",
        "synchronous": "full",
        "kind": "commit",
        "report_kind": "run",
    }
    assert labels["path"] == str(target) and labels["host"] == report.host.hostname
    assert leftovers(target) == []


def test_run_leaves_no_interval_the_report_does_not_have(run_prom):
    """30 samples are too few for a p99 interval (the report says why): no series for it."""
    _target, _out, prom, _inode, _proc = run_prom
    report = store.load_report(next((_out / "reports").glob("*.json")))
    text = prom.read_text()
    for r in report.results:
        want = {
            (q, bound)
            for q, ci in (("0.5", r.summary.p50_ci_ns), ("0.99", r.summary.p99_ci_ns))
            if ci is not None
            for bound in ("low", "high")
        }
        assert ci_series(text, r.name) == want, r.name
    assert any(r.summary.p99_ci_ns is None for r in report.results)


def test_run_replaces_the_file_atomically(run_prom):
    _target, _out, prom, stale_inode, _proc = run_prom
    assert "stale" not in prom.read_text()
    assert prom.stat().st_ino != stale_inode  # a new file renamed over it, not rewritten
    assert [p.name for p in prom.parent.iterdir()] == ["fsyncbench.prom"]  # no temp file left


def test_run_metrics_pass_promtool(run_prom):
    assert_promtool_passes(run_prom[2])


@pytest.mark.slow
def test_audit_writes_the_report_as_metrics(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    prom = tmp_path / "audit.prom"
    proc = fsb(
        "audit",
        target,
        "--samples",
        "20",
        "--compare-syncs",
        "20",
        "--sweep-repeats",
        "1",
        "--sweep-max-mib",
        "1",
        "--trace-commits",
        "2",
        "--quiet",
        "--report-dir",
        tmp_path / "reports",
        "--prometheus",
        prom,
    )
    assert proc.returncode == 0, proc.stderr
    report = store.load_report(next((tmp_path / "reports").glob("*.json")))
    assert differences(prom.read_text(), report) == []
    assert {dict(k[1])["report_kind"] for k in series(prom.read_text())} == {"audit"}
    assert_promtool_passes(prom)


@pytest.mark.slow
def test_audit_from_a_report_writes_the_rederived_verdict(tmp_path):
    prom = tmp_path / "x.prom"
    proc = fsb("audit", "--from", EXAMPLE, "--no-report", "--format", "json", "--prometheus", prom)
    assert proc.returncode == 0, proc.stderr
    report = store.report_from_json(proc.stdout)
    assert differences(prom.read_text(), report) == []


# --------------------------------------------------------------------------- show


@pytest.mark.slow
@pytest.mark.parametrize("path", [*FIXTURES, EXAMPLE], ids=lambda p: p.name)
def test_show_of_a_saved_report(tmp_path, path):
    prom = tmp_path / "fsyncbench.prom"
    md = tmp_path / "report.md"
    proc = fsb("show", path, "--prometheus", prom, "--format", "markdown", "-o", md)
    assert proc.returncode == 0, proc.stderr
    assert md.read_text().startswith("# fsyncbench")
    report = store.load_report(path)
    assert differences(prom.read_text(), report) == []
    assert_promtool_passes(prom)


@pytest.mark.slow
def test_show_of_the_example_report_leaves_out_the_intervals_it_lacks(tmp_path):
    prom = tmp_path / "fsyncbench.prom"
    assert fsb("show", EXAMPLE, "--prometheus", prom).returncode == 0
    text = prom.read_text()
    both = {(q, b) for q in ("0.5", "0.99") for b in ("low", "high")}
    # the report: O_SYNC and delete/normal "none" for p99, truncate/off none for p50
    assert ci_series(text, "write (O_SYNC)") == {("0.5", "low"), ("0.5", "high")}
    assert ci_series(text, "delete/normal") == {("0.5", "low"), ("0.5", "high")}
    assert ci_series(text, "truncate/off") == {("0.99", "low"), ("0.99", "high")}
    assert ci_series(text, "wal/full") == both
    report = store.load_report(EXAMPLE)
    wal_full = next(r for r in report.results if r.name == "wal/full")
    low = series(text)[
        (
            "fsyncbench_latency_ci_seconds",
            frozenset(
                {
                    "host": "vm",
                    "path": "/work/exptarget",
                    "report_kind": "run",
                    "config": "wal/full",
                    "kind": "commit",
                    "primitive": "fdatasync",
                    "journal_mode": "wal",
                    "synchronous": "full",
                    "fullfsync": "",
                    "for_quantile": "0.99",
                    "bound": "low",
                    "confidence": "0.95",
                }.items()
            ),
        )
    ]
    assert low == wal_full.summary.p99_ci_ns[0] / 1e9
    values = series(text)
    assert [dict(k[1])["verdict"] for k in values if k[0] == "fsyncbench_path_verdict"] == [
        "unverifiable"
    ]
    durable = {
        dict(k[1])["config"]: v for k, v in values.items() if k[0] == "fsyncbench_config_durable"
    }
    assert durable["wal/full"] == 1 and durable["wal/normal"] == 0
    assert "write+fsync" not in durable  # a sync primitive: durability unknown, left out


@pytest.mark.slow
def test_show_redact_reaches_the_metrics(tmp_path):
    prom = tmp_path / "fsyncbench.prom"
    assert fsb("show", EXAMPLE, "--redact", "--prometheus", prom).returncode == 0
    labels = {(k, v) for key in series(prom.read_text()) for k, v in key[1]}
    assert ("host", "redacted-host") in labels and ("path", "[redacted]") in labels
    assert ("host", "vm") not in labels and ("path", "/work/exptarget") not in labels


def test_show_of_a_powercut_report_gives_its_verdict(tmp_path):
    """A power pull has no latency: its verdict (proven), durability, time and provenance."""
    from test_cli_conventions import _powercut_report

    failed = _powercut_report(tmp_path, present=[(1, 90)], name="fail.json")
    prom = tmp_path / "pc.prom"
    proc = fsb("show", failed, "--prometheus", prom)
    assert proc.returncode == 0, proc.stderr
    report = store.load_report(failed)
    text = prom.read_text()
    assert differences(text, report) == []
    names = {name for name, _ in series(text)}
    assert names == {
        "fsyncbench_path_verdict",
        "fsyncbench_config_path_verdict",
        "fsyncbench_config_durable",
        "fsyncbench_report_created_timestamp_seconds",
        "fsyncbench_report_info",
    }
    (verdict,) = [dict(k[1]) for k in series(text) if k[0] == "fsyncbench_path_verdict"]
    assert (verdict["verdict"], verdict["strength"], verdict["report_kind"]) == (
        "volatile_cache",
        "proven",
        "powercut",
    )
    assert_promtool_passes(prom)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "where,line",
    [
        ("missing/x.prom", "cannot write {d}/missing/x.prom: {d}/missing does not exist"),
        ("afile/x.prom", "cannot write {d}/afile/x.prom: {d}/afile is not a directory"),
        # root passes access(2) here; the real attempt to create a file does not
        pytest.param(
            "/proc/fsyncbench-test.prom",
            "cannot write /proc/fsyncbench-test.prom: directory ",
            marks=pytest.mark.skipif(
                not this_platform.LINUX, reason="/proc (Linux's procfs) exists on Linux only"
            ),
        ),
        ("textfile", "{d}/textfile is a directory, not a file"),
    ],
)
def test_a_bad_file_is_refused_before_measuring(tmp_path, where, line):
    """One line, exit 2, no traceback, nothing written: a run of 10^8 samples that measured
    first would still be running at the timeout."""
    (tmp_path / "afile").write_text("a file\n")
    (tmp_path / "textfile").mkdir()
    target = tmp_path / "target"
    target.mkdir()
    path = where if where.startswith("/") else str(tmp_path / where)
    proc = fsb(
        "run",
        target,
        "--samples",
        "100000000",
        "--rounds",
        "1",
        "--quiet",
        "--report-dir",
        tmp_path / "reports",
        "--prometheus",
        path,
        timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (only,) = proc.stderr.splitlines()
    want = "fsyncbench: error: " + line.format(d=tmp_path)
    if sys.platform == "win32":  # the paths are written with backslashes there
        only, want = only.replace("\\", "/"), want.replace("\\", "/")
    assert only.startswith(want) if where.startswith("/proc") else only == want
    assert not (tmp_path / "reports").exists()
    assert leftovers(target) == [] and list(target.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "textfile").iterdir()) == []


def test_a_trailing_slash_names_a_directory(tmp_path):
    assert_usage_error(
        fsb("show", EXAMPLE, "--prometheus", f"{tmp_path}/"),
        f"argument --prometheus: {tmp_path}/ names a directory: --prometheus takes a FILE, "
        f"e.g. {tmp_path}/fsyncbench.prom (see fsyncbench show --help)",
    )


def test_two_results_of_one_name_are_refused(tmp_path):
    """node_exporter refuses a file that gives one series twice (the whole scrape fails). A
    report with a repeated result is not a possible measurement: the loader refuses it for
    every command, so --prometheus never sees it; one line, exit 2, nothing written."""
    data = json.loads((REPORTS / "wavehouse-m4pro-macos-fsync-vs-fullfsync.json").read_text())
    data["results"].append(data["results"][0])
    crafted = tmp_path / "twice.json"
    crafted.write_text(json.dumps(data))
    prom = tmp_path / "x.prom"
    csv = tmp_path / "x.csv"
    for argv in (("show", crafted, "--prometheus", prom, "--csv", csv), ("show", crafted)):
        assert_usage_error(
            fsb(*argv),
            f"{crafted} is not a valid fsyncbench report: results: write+fsync measured "
            "twice in one report",
        )
    assert not prom.exists() and not csv.exists()


def test_a_created_time_that_is_no_time_is_refused(tmp_path):
    data = json.loads(FIXTURES[0].read_text())
    data["created_utc"] = "yesterday"
    crafted = tmp_path / "when.json"
    crafted.write_text(json.dumps(data))
    for argv in (("show", crafted, "--prometheus", tmp_path / "x.prom"), ("show", crafted)):
        assert_usage_error(
            fsb(*argv),
            f"{crafted} is not a valid fsyncbench report: created_utc: 'yesterday' is not an "
            "ISO 8601 time",
        )
    assert not (tmp_path / "x.prom").exists()


# --------------------------------------------------------------------------- in process


def test_the_temporary_file_never_ends_in_prom(tmp_path, monkeypatch):
    """The textfile collector reads *.prom: the file is written under another name in the
    same directory and renamed over the final one (store.write_durably)."""
    renames = []
    real_replace = os.replace

    def replace(src, dst):
        renames.append((Path(src), Path(dst), Path(src).read_text()))
        real_replace(src, dst)

    monkeypatch.setattr(store.os, "replace", replace)
    prom = tmp_path / "fsyncbench.prom"
    report = store.load_report(FIXTURES[0])
    assert fsyncbench.save(report, None, prometheus=prom) == [prom]
    ((src, dst, text),) = renames
    assert dst == prom and src.parent == prom.parent
    assert not src.name.endswith(".prom") and src.name.startswith(".")
    assert text == prom.read_text() == prometheus.render_textfile(report)
    assert sorted(tmp_path.iterdir()) == [prom]


def test_an_undecodable_path_is_escaped_not_a_crash(tmp_path):
    """A directory name with bytes that are not UTF-8 (os.fsdecode gives lone surrogates)
    is a backslash escape in the label, as in the report files."""
    report = store.load_report(EXAMPLE)
    target = dataclasses.replace(report.host.target, path="/data/caf\udce9")
    report = dataclasses.replace(report, host=dataclasses.replace(report.host, target=target))
    text = prometheus.render_textfile(report)
    paths = {v for key in series(text) for k, v in key[1] if k == "path"}
    assert paths == {"/data/caf\\udce9"}
    prom = tmp_path / "x.prom"
    prom.write_text(text)
    assert_promtool_passes(prom)


def test_help_texts_do_not_depend_on_the_report():
    """node_exporter refuses one metric with two HELP texts across the collector's files."""
    helps: dict[str, set[str]] = {}
    for path in [*FIXTURES, EXAMPLE]:
        for family in text_string_to_metric_families(
            prometheus.render_textfile(store.load_report(path))
        ):
            helps.setdefault(family.name, set()).add(family.documentation)
    assert all(len(texts) == 1 for texts in helps.values()), helps
    assert len(helps) == len(prometheus.HELP)


def test_a_wrong_value_is_noticed():
    """The checks above can fail: a p99 off by a nanosecond, an interval the report does
    not have, a missing series, and a quantile label on a gauge (promtool)."""
    report = store.load_report(EXAMPLE)
    text = prometheus.render_textfile(report)
    assert differences(text, report) == []
    wal_full = next(r for r in report.results if r.name == "wal/full")
    p99 = repr(wal_full.summary.p99_ns / 1e9)
    line = next(
        ln for ln in text.splitlines() if 'config="wal/full"' in ln and 'quantile="0.99"' in ln
    )
    shifted = text.replace(line, line.replace(p99, repr((wal_full.summary.p99_ns + 1) / 1e9)))
    assert shifted != text
    assert [d for d in differences(shifted, report) if "quantile', '0.99'" in d]
    ci_line = next(
        ln
        for ln in text.splitlines()
        if ln.startswith("fsyncbench_latency_ci_seconds")
        and 'config="write (O_DSYNC)"' in ln
        and 'for_quantile="0.99"' in ln
    )
    # write (O_SYNC) has no p99 interval in the report
    invented = text.replace(ci_line, ci_line + "\n" + ci_line.replace("O_DSYNC", "O_SYNC"))
    assert [d for d in differences(invented, report) if d.startswith("extra")]
    dropped = text.replace(ci_line + "\n", "")
    assert [d for d in differences(dropped, report) if d.startswith("missing")]
    if PROMTOOL is not None:
        assert promtool(text).returncode == 0
        relabelled = text.replace('for_quantile="', 'quantile="')
        proc = promtool(relabelled)
        assert proc.returncode != 0 and 'should not have "quantile" label' in proc.stderr


def test_the_api_refuses_a_bad_prometheus_argument(tmp_path):
    report = store.load_report(FIXTURES[0])
    with pytest.raises(FsyncbenchError, match="prometheus must be a path"):
        fsyncbench.save(report, None, prometheus=5)
    with pytest.raises(FsyncbenchError, match="prometheus must be a path"):
        fsyncbench.Outputs(prometheus=5)


# --------------------------------------------------------------------------- fast twins
# The slow tests above through cli.main in this process (show and audit --from, no
# measuring), and every fixture through the renderer the CLI calls.


def _main(capsys, *argv) -> tuple[int, str, str]:
    from fsyncbench import cli

    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_fixture_gives_the_metrics_of_its_report():
    for path in [*FIXTURES, EXAMPLE]:
        report = store.load_report(path)
        assert differences(prometheus.render_textfile(report), report) == [], path.name
    audit = dataclasses.replace(store.load_report(EXAMPLE), kind="audit")
    text = prometheus.render_textfile(audit)
    assert differences(text, audit) == []
    assert {dict(k[1])["report_kind"] for k in series(text)} == {"audit"}


def test_show_in_process_writes_the_metrics_beside_its_output(tmp_path, capsys):
    prom, md = tmp_path / "fsyncbench.prom", tmp_path / "report.md"
    code, _out, err = _main(
        capsys, "show", FIXTURES[0], "--prometheus", prom, "--format", "markdown", "-o", md
    )
    assert code == 0, err
    assert md.read_text().startswith("# fsyncbench")
    assert differences(prom.read_text(), store.load_report(FIXTURES[0])) == []


def test_audit_from_in_process_writes_the_rederived_verdict(tmp_path, capsys):
    """A small synthetic run (the example's 14 configurations take seconds to re-judge)."""
    import sampled

    prom = tmp_path / "x.prom"
    path = sampled.save(sampled.report(1.0, seed=0, n=1200), tmp_path / "r.json")
    code, out, err = _main(
        capsys, "audit", "--from", path, "--no-report", "--format", "json", "--prometheus", prom
    )
    assert code == 0, err
    assert differences(prom.read_text(), store.report_from_json(out)) == []


def test_the_example_leaves_out_the_intervals_it_lacks_in_process(tmp_path, capsys):
    prom = tmp_path / "fsyncbench.prom"
    assert _main(capsys, "show", EXAMPLE, "--prometheus", prom)[0] == 0
    text = prom.read_text()
    both = {(q, b) for q in ("0.5", "0.99") for b in ("low", "high")}
    assert ci_series(text, "write (O_SYNC)") == {("0.5", "low"), ("0.5", "high")}
    assert ci_series(text, "delete/normal") == {("0.5", "low"), ("0.5", "high")}
    assert ci_series(text, "truncate/off") == {("0.99", "low"), ("0.99", "high")}
    assert ci_series(text, "wal/full") == both
    values = series(text)
    assert [dict(k[1])["verdict"] for k in values if k[0] == "fsyncbench_path_verdict"] == [
        "unverifiable"
    ]
    durable = {
        dict(k[1])["config"]: v for k, v in values.items() if k[0] == "fsyncbench_config_durable"
    }
    assert durable["wal/full"] == 1 and durable["wal/normal"] == 0
    assert "write+fsync" not in durable


def test_show_redact_reaches_the_metrics_in_process(tmp_path, capsys):
    prom = tmp_path / "fsyncbench.prom"
    original = store.load_report(FIXTURES[0])
    assert _main(capsys, "show", FIXTURES[0], "--redact", "--prometheus", prom)[0] == 0
    labels = {(k, v) for key in series(prom.read_text()) for k, v in key[1]}
    assert ("host", "redacted-host") in labels and ("path", "[redacted]") in labels
    assert ("host", original.host.hostname) not in labels
    assert ("path", original.host.target.path) not in labels
