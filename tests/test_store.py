import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest
from factories import commit, flush, host

from fsyncbench import api
from fsyncbench.errors import FsyncbenchError
from fsyncbench.judge import engine
from fsyncbench.model import BlockDevice
from fsyncbench.report import store


def _report():
    h = host(disks=(BlockDevice("sda", rotational=False, write_cache="write back"),))
    results = [flush("fdatasync", 1_500_000), commit("WAL", "NORMAL", 30_000)]
    return api.build_report("run", h, results, ["fsyncbench", "run", "/data"])


def test_json_round_trip_is_lossless():
    r = _report()
    text = store.report_to_json(r)
    data = json.loads(text)
    # the figures as recorded: factories.summary_at(1.5 ms) has p99 = 1.5 x p50 = 2.25 ms and
    # a p99 interval of 0.9-1.1 x p99; mean 1.05 x p50 over 1,000 samples = 1.575 s
    flush = data["results"][0]
    assert (flush["name"], flush["primitive"], flush["syncs_issued"]) == (
        "write+fdatasync",
        "fdatasync",
        1000,
    )
    assert flush["summary"]["p50_ns"] == 1_500_000 and flush["summary"]["p99_ns"] == 2_250_000
    assert flush["summary"]["p99_ci_ns"] == pytest.approx([2_025_000, 2_475_000])
    assert flush["elapsed_ns"] == 1_575_000_000
    assert data["results"][1]["requested"] == {
        "journal_mode": "WAL",
        "synchronous": "NORMAL",
        "fullfsync": None,
    }
    # the verdict, worked out from the judge's rules: no flush counters recorded, bare metal,
    # ext4 without nobarrier, no preload, no network layer, so only the latency rule speaks;
    # an SSD with a write-back cache and no known power-loss protection has a 150 us floor
    # (judge.devices.CONSUMER_SSD_FLOOR_NS) and 1.5 ms is above it: flush-latency-plausible
    want = [
        ("write+fdatasync", "honest_flush", None, "flush-latency-plausible", "inferred"),
        # WAL + NORMAL syncs only at checkpoints: not durable; path verdict of fdatasync
        ("wal/normal", "honest_flush", False, "flush-latency-plausible", "inferred"),
    ]
    assert (
        data["verdict"]["path_verdict"],
        data["verdict"]["decided_by"],
        data["verdict"]["strength"],
    ) == ("honest_flush", "flush-latency-plausible", "inferred")
    assert [tuple(v.values()) for v in data["verdict"]["results"]] == want
    assert [f["code"] for f in data["verdict"]["findings"]] == [
        "flush-latency-plausible",
        "config-not-durable",
        "flush-counters-unavailable",
    ]  # a Linux disk recorded without flush counters
    again = store.report_from_json(text)
    assert again == r
    # judged again from the loaded facts alone: the same verdict
    rejudged = engine.rejudge(again)
    assert [
        (v.subject, v.path_verdict, v.config_durable, v.decided_by, v.strength)
        for v in rejudged.verdict.results
    ] == want
    assert rejudged.notes == again.notes  # no "re-derived ... differs" note


def test_write_durably_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    store.write_durably(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_write_durably_into_missing_dir_is_clear_error(tmp_path):
    with pytest.raises(FsyncbenchError, match="cannot write"):
        store.write_durably(tmp_path / "nope" / "r.json", "x")


def test_newer_schema_refused(tmp_path):
    data = json.loads(store.report_to_json(_report()))
    data["schema_version"] = store.SCHEMA_VERSION + 1
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FsyncbenchError, match="upgrade fsyncbench"):
        store.load_report(path)


@pytest.mark.parametrize(
    "text,msg",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not an fsyncbench report"),
        ('{"schema_version": 1, "kind": "run"}', "missing field"),
    ],
)
def test_corrupt_reports_refused(tmp_path, text, msg):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(FsyncbenchError, match=msg):
        store.load_report(path)


def test_missing_report(tmp_path):
    with pytest.raises(FsyncbenchError, match="does not exist"):
        store.load_report(tmp_path / "none.json")


def test_output_dir_under_a_file_is_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(FsyncbenchError):
        store.prepare_output_dir(f / "sub")
    with pytest.raises(FsyncbenchError, match="not a directory"):
        store.prepare_output_dir(f)


def test_claim_name_never_reuses_a_taken_stem(tmp_path):
    first = store.claim_name(tmp_path, "host-1", (".json", ".md"))
    second = store.claim_name(tmp_path, "host-1", (".json", ".md"))
    (tmp_path / "host-1-3.md").write_text("someone else's")
    third = store.claim_name(tmp_path, "host-1", (".json", ".md"))
    assert [first.name, second.name, third.name] == ["host-1", "host-1-2", "host-1-4"]
    assert (tmp_path / "host-1-3.md").read_text() == "someone else's"
    assert not (tmp_path / "host-1-3.json").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits (Windows has none)")
def test_reports_are_readable_by_others(tmp_path):
    old = os.umask(0o022)
    try:
        store.write_durably(tmp_path / "r.md", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "r.md").stat().st_mode & 0o777 == 0o644


def test_undecodable_characters_are_escaped_not_fatal(tmp_path):
    store.write_durably(tmp_path / "r.md", "dir bad\udcffname")
    assert (tmp_path / "r.md").read_text() == "dir bad\\udcffname"


def test_special_and_deeply_nested_files_refused(tmp_path):
    with pytest.raises(FsyncbenchError, match="not a regular file"):
        store.load_report(Path(os.devnull))  # /dev/null; nul on Windows
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(FsyncbenchError, match="nested too deeply"):
        store.load_report(deep)


def test_output_check_refuses_proc_and_dangling_links(tmp_path):
    if sys.platform.startswith("linux"):  # procfs refuses new files even to root
        with pytest.raises(FsyncbenchError, match="not writable"):
            store.check_output_dir(Path("/proc/newdir"))
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(FsyncbenchError, match="dangling symbolic link"):
        store.check_output_dir(dangling / "reports")
    assert store.check_output_dir(tmp_path / "new" / "dir") == tmp_path / "new" / "dir"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling"]


@pytest.mark.parametrize(
    "path,value,msg",
    [
        (("results", 0, "syncs_issued"), 10**400, "number out of range"),
        (("results", 0, "summary", "p50_ns"), float("nan"), "not a finite number"),
        (("results", 0, "summary", "p50_ns"), -5.0, "negative p50_ns"),
        (("results", 0, "device_flushes", 0, "flushes"), -300, "negative flushes"),
    ],
)
def test_numbers_a_report_cannot_hold_are_refused(tmp_path, path, value, msg):
    """A hand-edited report with a 400-digit count, a NaN or a negative duration would be
    judged with confidence (NaN fails every comparison): refused on load, one line."""
    data = json.loads(store.report_to_json(_report()))
    data["results"][0]["device_flushes"] = [{"device": "sda", "flushes": 1, "flush_time_ms": 0}]
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(FsyncbenchError, match=msg):
        store.load_report(bad)


def _sampled_report_data():
    import sampled

    return json.loads(store.report_to_json(sampled.report(1.0, seed=0, n=2000)))


def _set(data, path, value):
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


@pytest.mark.parametrize(
    "path,value,msg",
    [
        (("results", 0, "kind"), "benchmark", "results[0].kind: unknown kind 'benchmark'"),
        (("verdict", "path_verdict"), "probably_fine", "unknown path verdict 'probably_fine'"),
        (
            ("results", 1, "summary", "count"),
            7,
            "results[1].summary.count: 7, but there are 2000 samples",
        ),
        (
            ("results", 1, "slice_counts"),
            [1000, 999],
            "slice_counts: they add up to 1999, not the 2000",
        ),
        (("results", 1, "slice_counts"), [-1] + [201] * 9 + [192], "negative"),
        (("results", 1, "slice_rounds"), [0, 1], "slice_rounds: 2 entries for 10 slices"),
        (
            ("results", 1, "summary", "p99_ci_ns"),
            [5e6, 1e6],
            "p99_ci_ns: low bound 5e+06 above high bound 1e+06",
        ),
        (("results", 1, "summary", "p99_interval", "df"), -3, "negative df"),
        (
            ("results", 1, "summary", "p99_interval", "low_ns"),
            9e12,
            "p99_interval: low bound above high bound",
        ),
    ],
)
def test_reports_that_cannot_be_a_measurement_are_refused(tmp_path, path, value, msg):
    data = _sampled_report_data()
    _set(data, path, value)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(FsyncbenchError, match=re.escape(msg)):
        store.load_report(bad)


def test_duplicate_json_keys_are_refused(tmp_path):
    bad = tmp_path / "dup.json"
    bad.write_text('{"schema_version": 2, "schema_version": 1}')
    with pytest.raises(FsyncbenchError, match="duplicate key 'schema_version'"):
        store.load_report(bad)


def test_schema_1_reports_without_slices_still_load():
    for path in sorted((Path(__file__).parent / "fixtures" / "reports").glob("*.json")):
        report = store.load_report(path)
        assert all(r.slice_counts == () for r in report.results)


@pytest.mark.skipif(getattr(os, "geteuid", lambda: 1)() != 0, reason="mknod needs root")
def test_windows_knows_the_null_device_by_name(tmp_path: Path, monkeypatch) -> None:
    """Windows' stat has no st_rdev: there, a character device is a stream to write to only
    when it is the null device by name (os.devnull, "nul"). Two real null-device nodes
    (mknod c 1 3) named NUL and zero, judged as Windows would judge them."""
    from fsyncbench.report import store

    for name in ("NUL", "zero"):
        os.mknod(tmp_path / name, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    assert store.is_stream(tmp_path / "zero")  # Linux: the same device as /dev/null
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(os, "devnull", "nul")
    assert store.is_stream(tmp_path / "NUL")
    assert not store.is_stream(tmp_path / "zero")


@pytest.mark.skipif(sys.platform == "win32", reason="fcntl is POSIX (Windows has none)")
def test_reports_are_flushed_with_f_fullfsync_on_macos(tmp_path: Path, monkeypatch) -> None:
    """On macOS a plain fsync stops at the drive cache: the report file and its directory
    get fcntl(F_FULLFSYNC) (51), no fsync; a volume that refuses it gets fsync instead.
    Linux: fsync, never fcntl. (fcntl recorded; the real fsync still runs.)"""
    import fcntl

    calls: list[tuple[str, int]] = []
    real_fsync = os.fsync

    def fake_fcntl(fd: int, cmd: int, *args: object) -> int:
        calls.append(("fcntl", cmd))
        if refuse:
            raise OSError(45, "Operation not supported")  # ENOTSUP on macOS
        real_fsync(fd)
        return 0

    def fake_fsync(fd: int) -> None:
        calls.append(("fsync", 0))
        real_fsync(fd)

    monkeypatch.setattr(fcntl, "fcntl", fake_fcntl)
    monkeypatch.setattr(os, "fsync", fake_fsync)
    refuse = False
    monkeypatch.setattr(sys, "platform", "linux")  # whatever this machine runs
    store.write_durably(tmp_path / "linux.json", "{}")
    assert calls == [("fsync", 0), ("fsync", 0)]  # the file, then its directory
    monkeypatch.setattr(sys, "platform", "darwin")
    calls.clear()
    store.write_durably(tmp_path / "mac.json", "{}")
    assert calls == [("fcntl", store.F_FULLFSYNC)] * 2
    refuse, calls[:] = True, []
    store.write_durably(tmp_path / "mac-smb.json", "{}")
    assert calls == [("fcntl", store.F_FULLFSYNC), ("fsync", 0)] * 2
    assert (tmp_path / "mac-smb.json").read_text() == "{}"


def test_windows_rename_is_write_through_and_waits_for_a_scanner(tmp_path: Path, monkeypatch):
    """On Windows the report's rename is MoveFileExW with MOVEFILE_WRITE_THROUGH (no directory
    to flush there), retried while an antivirus scanner holds the file (PermissionError);
    once the holder never lets go, the error is the tool's one line and no temp file stays.
    (MoveFileExW recorded and played by os.replace: no Windows here.)"""
    moves: list[tuple[str, str]] = []
    held = {"times": 2}
    sleeps: list[float] = []

    def fake_move(src: Path, dst: Path) -> None:
        moves.append((Path(src).name, Path(dst).name))
        if held["times"] > 0:
            held["times"] -= 1
            raise PermissionError(13, "The process cannot access the file")  # winerror 32
        os.replace(src, dst)

    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(store, "_move_file_ex", fake_move)
    monkeypatch.setattr(store.time, "sleep", sleeps.append)
    store.write_durably(tmp_path / "r.json", "{}")
    assert (tmp_path / "r.json").read_text() == "{}"
    assert len(moves) == 3 and all(dst == "r.json" for _src, dst in moves)
    assert sleeps == [store.RENAME_RETRY_S, 2 * store.RENAME_RETRY_S]
    held["times"] = 99
    with pytest.raises(FsyncbenchError, match="cannot write .*r2.json"):
        store.write_durably(tmp_path / "r2.json", "{}")
    assert len(moves) == 3 + store.RENAME_ATTEMPTS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temp left
    monkeypatch.setattr(sys, "platform", "linux")
    store.write_durably(tmp_path / "r3.json", "{}")  # POSIX: rename(2), not MoveFileExW
    assert len(moves) == 3 + store.RENAME_ATTEMPTS
