"""Exact behaviour of fsyncbench.report.store: file names, refusal messages, JSON layout, file
modes and temp-file handling, with expected values written out by hand."""

import codecs
import dataclasses
import errno
import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import sampled
from factories import commit, flush, host

from fsyncbench import api
from fsyncbench.errors import FsyncbenchError
from fsyncbench.model import Evidence, Interval, SyscallComparison
from fsyncbench.report import store


def _report(hostname="case-host", created="2024-03-05T14:07:09Z"):
    r = api.build_report(
        "run",
        host(),
        [flush("fdatasync", 1_500_000), commit("WAL", "NORMAL", 30_000)],
        ["fsyncbench", "run", "/data"],
    )
    return dataclasses.replace(
        r, created_utc=created, host=dataclasses.replace(r.host, hostname=hostname)
    )


def _sampled():
    import sampled

    return sampled.report(1.0, seed=0, n=200)


# --- report_basename / _name_part ---------------------------------------------------------


@pytest.mark.parametrize(
    "hostname,created,want",
    [
        ("case-host", "2024-03-05T14:07:09Z", "case-host-20240305T140709Z"),
        ("MyHost.Lab_9", "2024-03-05T14:07:09Z", "MyHost.Lab_9-20240305T140709Z"),
        ("../../etc/pa  ss", "2024-03-05T14:07:09Z", "_.._etc_pa_ss-20240305T140709Z"),
        (".x.", "2024-03-05T14:07:09Z", "x.-20240305T140709Z"),
        ("X.host", "2024-03-05T14:07:09Z", "X.host-20240305T140709Z"),
        ("...", "::--", "host-time"),
        ("", "", "host-time"),
        ("a" * 150, "2024-03-05T14:07:09Z", "a" * 100 + "-20240305T140709Z"),
        ("h", "2024/03/05 14:07", "h-2024_03_05_1407"),
    ],
)
def test_report_basename_exact(hostname, created, want):
    assert store.report_basename(_report(hostname, created)) == want


# --- report_to_json / _without_samples -----------------------------------------------------


def test_json_is_indented_by_one_with_compact_samples():
    r = _sampled()
    text = store.report_to_json(r)
    assert text.startswith('{\n "schema_version": 5,\n "tool_version": ')
    assert text.endswith("}\n") and not text.endswith("\n\n")
    for res in r.results:
        assert ('"samples_ns": [' + ",".join(str(v) for v in res.samples_ns) + "]") in text
    assert '\n   "kind": "write",\n' in text
    assert store.report_from_json(text) == r


def test_evidence_samples_are_packed_too():
    sc = SyscallComparison(
        "fdatasync", 75, "x86_64", 4, 1.0, 2.0, libc_samples_ns=(1, 2), syscall_samples_ns=(3, 4)
    )
    r = dataclasses.replace(_report(), evidence=Evidence(syscall_comparisons=(sc,)))
    text = store.report_to_json(r)
    assert '"libc_samples_ns": [1,2]' in text
    assert '"syscall_samples_ns": [3,4]' in text


def test_untouched_parts_are_shared():
    r = _report()
    packed = []
    assert store._without_samples(r.host, packed) is r.host
    assert store._without_samples(r.verdict.results, packed) is r.verdict.results
    assert packed == []


def test_nan_is_refused_with_exact_message():
    r = _report()
    res = r.results[0]
    bad = dataclasses.replace(res, summary=dataclasses.replace(res.summary, mean_ns=float("nan")))
    r = dataclasses.replace(r, results=(bad,) + r.results[1:])
    with pytest.raises(FsyncbenchError) as e:
        store.report_to_json(r)
    assert str(e.value) == "the report holds a NaN or infinite number and cannot be saved as JSON"


# --- report_from_json -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,msg",
    [
        (
            "{bad",
            "report is not valid JSON (Expecting property name enclosed in double quotes, line 1)",
        ),
        ("{}", "report is not an fsyncbench report (no schema_version)"),
        ('{"schema_version": 0}', "report has an invalid schema_version 0"),
        ('{"schema_version": "2"}', "report has an invalid schema_version '2'"),
        ('{"schema_version": true}', "report has an invalid schema_version True"),
        (
            '{"schema_version": 6}',
            "report uses report schema 6, newer than this fsyncbench reads (5): upgrade fsyncbench",
        ),
    ],
)
def test_report_from_json_messages(text, msg):
    with pytest.raises(FsyncbenchError) as e:
        store.report_from_json(text)
    assert str(e.value) == msg


# --- check_consistent -----------------------------------------------------------------------


def _with_summary(r, i=0, **changes):
    res = r.results[i]
    new = dataclasses.replace(res, summary=dataclasses.replace(res.summary, **changes))
    return dataclasses.replace(r, results=r.results[:i] + (new,) + r.results[i + 1 :])


def _iv(low, high, se_log=0.1):
    return Interval(
        estimate_ns=1000.0,
        low_ns=low,
        high_ns=high,
        se_log=se_log,
        df=9.0,
        blocks=10,
        method="block-jackknife",
    )


def _msg(r):
    with pytest.raises(ValueError) as e:
        store.check_consistent(r)
    return str(e.value)


def test_check_consistent_exact_messages():
    r = _report()
    v = dataclasses.replace(r.verdict, path_verdict="fine")
    assert _msg(dataclasses.replace(r, verdict=v)) == (
        "verdict: unknown path verdict 'fine' (known: no_flush, volatile_cache, unverifiable, "
        "honest_flush)"
    )
    res = dataclasses.replace(r.results[0], kind="bench")
    assert _msg(dataclasses.replace(r, results=(res,))) == (
        "results[0].kind: unknown kind 'bench' (known: commit, flush, write, floor)"
    )
    assert _msg(_with_summary(r, p50_ns=1500.0, p50_ci_ns=(2000.0, 1000.0))) == (
        "results[0].summary.p50_ci_ns: low bound 2000 above high bound 1000"
    )
    assert _msg(_with_summary(r, p50_ns=999.0, p50_ci_ns=(1000.0, 2000.0))) == (
        "results[0].summary.p50_ci_ns: [1000, 2000] does not hold the estimate 999 it is an "
        "interval of"
    )
    assert _msg(_with_summary(r, p50_ns=3000.0, p50_ci_ns=(1000.0, 2000.0))) == (
        "results[0].summary.p50_ci_ns: [1000, 2000] does not hold the estimate 3000 it is an "
        "interval of"
    )
    assert _msg(_with_summary(r, p50_interval=_iv(2000.0, 1000.0))) == (
        "results[0].summary.p50_interval: low bound above high bound"
    )
    assert _msg(_with_summary(r, p50_interval=_iv(1000.0, 2000.0, se_log=-0.1))) == (
        "results[0].summary.p50_interval.se_log: negative"
    )


def test_check_consistent_boundaries_accepted():
    r = _report()
    store.check_consistent(_with_summary(r, p50_ns=1000.0 * (1 - 1e-9), p50_ci_ns=(1000.0, 2000.0)))
    store.check_consistent(_with_summary(r, p50_ns=2000.0 * (1 + 1e-9), p50_ci_ns=(1000.0, 2000.0)))
    store.check_consistent(_with_summary(r, p50_interval=_iv(1000.0, 1000.0, se_log=0.0)))
    store.check_consistent(
        _with_summary(
            r,
            p50_interval=_iv(None, None, se_log=None),
            p99_interval=_iv(1000.0, 1000.0, se_log=None),
        )
    )


# --- load_report ----------------------------------------------------------------------------


def test_load_report_messages(tmp_path, monkeypatch):
    p = tmp_path / "r.json"
    p.write_text("{bad")
    with pytest.raises(FsyncbenchError) as e:
        store.load_report(p)
    assert str(e.value) == (
        f"{p} is not valid JSON (Expecting property name enclosed in double quotes, line 1)"
    )
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(store.MAX_REPORT_BYTES + 1)
    with pytest.raises(FsyncbenchError) as e:
        store.load_report(big)
    assert str(e.value) == f"report {big} is larger than 256 MiB"
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff{}")
    with pytest.raises(FsyncbenchError) as e:
        store.load_report(bad)
    assert str(e.value) == (
        f"cannot read report {bad}: 'utf-8' codec can't decode byte 0xff "
        "in position 0: invalid start byte"
    )

    def denied(self, *a, **k):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_text", denied)
    with pytest.raises(FsyncbenchError) as e:
        store.load_report(p)
    assert str(e.value) == f"cannot read report {p}: Permission denied"


def test_load_report_at_exactly_the_size_limit(tmp_path, monkeypatch):
    p = tmp_path / "r.json"
    text = store.report_to_json(_report())
    p.write_text(text)
    monkeypatch.setattr(store, "MAX_REPORT_BYTES", len(text.encode()))
    assert store.load_report(p) == _report()


def test_load_report_reads_utf8_whatever_the_locale(tmp_path, monkeypatch):
    p = tmp_path / "r.json"
    p.write_text(store.report_to_json(_report("hôst")), encoding="utf-8")
    seen = []
    real = Path.read_text

    def spy(self, encoding=None, errors=None, **kw):
        seen.append(encoding)
        return real(self, encoding=encoding or "latin-1", errors=errors)

    monkeypatch.setattr(Path, "read_text", spy)
    assert store.load_report(p).host.hostname == "hôst"
    assert [codecs.lookup(e).name for e in seen] == ["utf-8"]


# --- write_durably --------------------------------------------------------------------------


def test_write_durably_temp_file_name_and_place(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    listings = []
    real = os.fsync

    def spy(fd):
        listings.append(sorted(p.name for p in tmp_path.iterdir()))
        return real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    store.write_durably(target, "x")
    assert len(listings) == 2
    assert len(listings[0]) == 1 and re.fullmatch(
        r"\.r\.json\.[A-Za-z0-9_]{6,}\.tmp", listings[0][0]
    )
    assert listings[1] == ["r.json"]


def test_write_durably_writes_utf8_whatever_the_locale(tmp_path, monkeypatch):
    seen = []
    real = os.fdopen

    def spy(fd, mode="r", *a, encoding=None, **kw):
        seen.append(encoding)
        return real(fd, mode, *a, encoding=encoding or "latin-1", **kw)

    monkeypatch.setattr(os, "fdopen", spy)
    store.write_durably(tmp_path / "r.md", "hé")
    assert [codecs.lookup(e).name for e in seen] == ["utf-8"]
    assert (tmp_path / "r.md").read_bytes() == "hé".encode()


def test_write_durably_missing_dir_message(tmp_path):
    target = tmp_path / "nope" / "r.json"
    with pytest.raises(FsyncbenchError) as e:
        store.write_durably(target, "x")
    assert str(e.value) == f"cannot write {target}: No such file or directory"


@pytest.mark.skipif(not hasattr(os, "fchmod"), reason="no os.fchmod here (Windows before 3.13)")
def test_write_durably_chmod_failure_cleans_up(tmp_path, monkeypatch):
    def fail(fd, mode):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "fchmod", fail)
    with pytest.raises(FsyncbenchError) as e:
        store.write_durably(tmp_path / "r.json", "x")
    assert str(e.value) == f"cannot write {tmp_path / 'r.json'}: Operation not permitted"
    assert list(tmp_path.iterdir()) == []


def test_write_durably_fsync_failure_removes_temp(tmp_path, monkeypatch):
    def fail(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(FsyncbenchError) as e:
        store.write_durably(tmp_path / "r.json", "x")
    assert str(e.value) == f"cannot write {tmp_path / 'r.json'}: Input/output error"
    assert list(tmp_path.iterdir()) == []


# --- claim_name -----------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits (Windows has none)")
def test_claim_name_mode_follows_umask(tmp_path):
    old = os.umask(0o022)
    try:
        stem = store.claim_name(tmp_path, "h", (".json",))
    finally:
        os.umask(old)
    assert stem == tmp_path / "h"
    assert (tmp_path / "h.json").stat().st_mode & 0o777 == 0o644


def test_claim_name_gives_up_after_9999(tmp_path, monkeypatch):
    tried = []

    def taken(path, flags, mode=0o777):
        tried.append(Path(path).name)
        raise FileExistsError(errno.EEXIST, "File exists")

    monkeypatch.setattr(os, "open", taken)
    with pytest.raises(FsyncbenchError) as e:
        store.claim_name(tmp_path, "b", (".json",))
    monkeypatch.undo()
    assert str(e.value) == f"too many reports named b* in {tmp_path}"
    assert tried == ["b.json"] + [f"b-{n}.json" for n in range(2, 10_000)]


def test_claim_name_missing_dir_message(tmp_path):
    d = tmp_path / "missing"
    with pytest.raises(FsyncbenchError) as e:
        store.claim_name(d, "b", (".json",))
    assert str(e.value) == f"cannot write to {d}: No such file or directory"


@pytest.mark.parametrize("second_error", [FileExistsError, PermissionError])
def test_claim_name_tolerates_placeholder_removed_meanwhile(tmp_path, monkeypatch, second_error):
    """Another process removes our first placeholder before the second one fails."""
    real = os.open
    calls = []

    def racy(path, flags, mode=0o777):
        calls.append(Path(path).name)
        if len(calls) == 2:
            (tmp_path / "b.json").unlink()
            raise second_error(
                errno.EEXIST if second_error is FileExistsError else errno.EACCES,
                "Permission denied",
            )
        return real(path, flags, mode)

    monkeypatch.setattr(os, "open", racy)
    if second_error is FileExistsError:
        assert store.claim_name(tmp_path, "b", (".json", ".md")) == tmp_path / "b-2"
    else:
        with pytest.raises(FsyncbenchError) as e:
            store.claim_name(tmp_path, "b", (".json", ".md"))
        assert str(e.value) == f"cannot write to {tmp_path}: Permission denied"


# --- fsync_dir ------------------------------------------------------------------------------


def test_fsync_dir_syncs_the_directory(tmp_path, monkeypatch):
    synced = []
    real = os.fsync

    def spy(fd):
        synced.append(os.fstat(fd).st_ino)
        return real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    store.fsync_dir(tmp_path)
    assert synced == [tmp_path.stat().st_ino]


def test_fsync_dir_is_skipped_on_windows(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    monkeypatch.setattr(os, "name", "nt")
    store.fsync_dir(tmp_path)
    monkeypatch.undo()
    assert synced == []


# --- check_output_dir / prepare_output_dir --------------------------------------------------


def test_output_dir_messages(tmp_path, monkeypatch):
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(FsyncbenchError) as e:
        store.check_output_dir(f)
    assert str(e.value) == f"output {f} is not a directory"
    with pytest.raises(FsyncbenchError) as e:
        store.check_output_dir(f / "sub" / "x")
    assert str(e.value) == f"output {f / 'sub' / 'x'} is not a directory ({f} is a file)"
    with pytest.raises(FsyncbenchError) as e:
        store.check_output_dir(Path("/dev/null/sub"))
    assert str(e.value) == "output /dev/null/sub is not a directory (/dev/null is not a directory)"

    import tempfile

    def denied(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", denied)
    with pytest.raises(FsyncbenchError) as e:
        store.check_output_dir(tmp_path / "d")
    assert str(e.value) == f"output directory {tmp_path / 'd'} is not writable (Permission denied)"


def test_prepare_output_dir_creates_parents_and_accepts_existing(tmp_path):
    d = tmp_path / "a" / "b"
    assert store.prepare_output_dir(d) == d
    assert d.is_dir()
    assert store.prepare_output_dir(d) == d
    assert store.prepare_output_dir(tmp_path) == tmp_path


def test_prepare_output_dir_mkdir_failure_message(tmp_path, monkeypatch):
    def full(self, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "mkdir", full)
    d = tmp_path / "d"
    with pytest.raises(FsyncbenchError) as e:
        store.prepare_output_dir(d)
    assert str(e.value) == f"cannot create output directory {d}: No space left on device"


def test_long_sample_lists_are_packed_exactly_and_short_ones_stay_numbers():
    """From 4,096 samples a list is one packed string; it reads back value for value and in
    order, through every reader (full load, load without samples, the history's filter),
    including values that need 8 bytes."""
    rng = np.random.default_rng(3)
    long = tuple(int(v) for v in rng.lognormal(11, 0.5, size=5000))
    huge = (*long[:4095], (1 << 40) + 7)
    for values in (long, huge):
        packed = store.pack_samples(values)
        assert packed is not None and packed.startswith("zb85-u")
        assert tuple(store.unpack_samples(packed)) == values
    assert store.pack_samples(huge).startswith("zb85-u64:")  # type: ignore[union-attr]
    assert store.pack_samples([1, -1]) is None and store.pack_samples([1.5]) is None
    rep = sampled.report(1.0, seed=0, rounds=5)
    wide = sampled.result("flush", "write+fdatasync", "fdatasync", 60_000.0, n=5000, seed=4)
    long = wide.samples_ns
    big = dataclasses.replace(
        rep, results=(wide,) + tuple(r for r in rep.results if r.name != wide.name)
    )
    text = store.report_to_json(big)
    assert '"samples_ns": "zb85-u32:' in text
    assert text.count('"samples_ns": "zb85') == 1  # the 2,000-sample lists stay numbers
    assert store.report_from_json(text).results[0].samples_ns == long
    # 5,000 samples in far fewer bytes than their numbers
    assert len(store.pack_samples(long) or "") < len(json.dumps(long)) / 2


def test_reports_of_schema_4_with_numbers_still_read(tmp_path):
    """An earlier report (every sample list as numbers) reads as before."""
    rep = sampled.report(1.0, seed=0, rounds=5)
    data = json.loads(store.report_to_json(rep))
    data["schema_version"] = 4
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    assert store.load_report(path).results == rep.results
    assert store.load_report(path, samples=False).results[0].samples_ns == ()


@pytest.mark.parametrize(
    "bad",
    ["zb85-u32:!!!!", "zb85-u16:abc", "fast", "zb85-u32:" + "0" * 10],
)
def test_a_broken_packed_list_is_one_clear_error(bad, tmp_path):
    rep = sampled.report(1.0, seed=0, rounds=5)
    data = json.loads(store.report_to_json(rep))
    data["results"][0]["samples_ns"] = bad
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FsyncbenchError, match="not a valid fsyncbench report"):
        store.load_report(path)


def test_a_default_runs_report_is_at_most_1_5_mb():
    """The example report (a default run of this project's VM, its 2.8 million samples taken
    when a configuration kept up to 1,000,000) with each configuration cut to the
    200,000 samples a run now keeps: its JSON is at most 1.5 MB (it was 11 MB of numbers)."""
    from fsyncbench.measure.timing import MAX_SAMPLES

    path = Path(__file__).parent.parent / "examples" / "report" / "vm-20261204T184430Z.json"
    rep = store.load_report(path)
    cut = dataclasses.replace(
        rep,
        results=tuple(
            dataclasses.replace(r, samples_ns=r.samples_ns[:MAX_SAMPLES]) for r in rep.results
        ),
        floors=tuple(
            dataclasses.replace(r, samples_ns=r.samples_ns[:MAX_SAMPLES]) for r in rep.floors
        ),
    )
    assert path.stat().st_size > 8_000_000
    assert len(store.report_to_json(cut).encode()) <= 1_500_000
