"""The lab drive (lab/drive.py): its semantics exactly, without nbdkit, and real power cuts
through nbdkit (issue 30, item 1): the honest drive loses nothing acknowledged in 30 cuts at
random points, a lying one loses what it acknowledged, a sometimes-lying one only what a
dropped flush acknowledged; a drive is handed out only once nbdkit listens, whatever an
earlier run left at its socket's path."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from labtools import ROOT, load

drive_mod = load("drive")
B = 4096
#: The drive is the Linux lab's nbdkit plugin: it keeps its image with os.pread, os.pwrite
#: and os.fdatasync (Windows has none of them, CPython on macOS no fdatasync).
needs_pread = pytest.mark.skipif(
    not (hasattr(os, "pwrite") and hasattr(os, "fdatasync")),
    reason="lab/drive.py uses os.pread, os.pwrite and os.fdatasync (Linux)",
)


def _drive(tmp_path: Path, mode: str = "honest", blocks: int = 16, **kw):
    image = tmp_path / "image"
    image.write_bytes(bytes(blocks * B))
    return drive_mod.Drive(str(image), mode, block_bytes=B, **kw), image


def _media(image: Path, index: int) -> bytes:
    with image.open("rb") as f:
        f.seek(index * B)
        return f.read(B)


def _block(ch: str) -> bytes:
    return ch.encode() * B


# ------------------------------------------------------------------ semantics, no nbdkit


@needs_pread
def test_writes_stay_in_the_cache_until_a_flush_writes_them_back(tmp_path):
    d, image = _drive(tmp_path, cache_blocks=8, log=str(tmp_path / "log"))
    d.write(0, _block("a"))
    d.write(B, _block("b"))
    assert d.read(0, 2 * B) == _block("a") + _block("b")  # the host sees its writes
    assert _media(image, 0) == bytes(B)  # the media does not, yet: a cut now loses them
    d.flush()
    assert (_media(image, 0), _media(image, 1)) == (_block("a"), _block("b"))
    assert d.dirty == {}
    assert "flush 1 honoured dirty=2" in (tmp_path / "log").read_text()


@needs_pread
def test_the_oldest_dirty_block_is_evicted_when_the_cache_is_full(tmp_path):
    d, image = _drive(tmp_path, cache_blocks=2)
    for i, ch in enumerate("abc"):
        d.write(i * B, _block(ch))
    assert _media(image, 0) == _block("a")  # evicted: on the media without a flush
    assert _media(image, 1) == _media(image, 2) == bytes(B)
    d.write(B, _block("B"))  # a dirty block is overwritten in place, not re-queued
    d.write(3 * B, _block("d"))
    assert _media(image, 1) == _block("B") and _media(image, 2) == bytes(B)


@needs_pread
def test_a_partial_write_merges_into_its_block(tmp_path):
    d, image = _drive(tmp_path)
    d.write(0, _block("a"))
    d.flush()
    d.write(100, b"xyz")
    assert d.read(98, 7) == b"aaxyzaa"
    assert _media(image, 0) == _block("a")
    d.write(B - 2, b"1234")  # across two blocks
    assert d.read(B - 3, 6) == b"a1234\x00"


@needs_pread
def test_fua_writes_its_own_blocks_through_and_leaves_the_rest_cached(tmp_path):
    d, image = _drive(tmp_path, log=str(tmp_path / "log"))
    d.write(0, _block("a"))
    d.write(B, _block("b"), fua=True)
    assert _media(image, 1) == _block("b") and _media(image, 0) == bytes(B)
    assert "fua 1 through" in (tmp_path / "log").read_text()


@needs_pread
def test_lying_acknowledges_flush_and_fua_and_keeps_nothing(tmp_path):
    d, image = _drive(tmp_path, "lying", log=str(tmp_path / "log"))
    d.write(0, _block("a"))
    d.flush()
    d.write(B, _block("b"), fua=True)
    assert _media(image, 0) == _media(image, 1) == bytes(B)
    assert d.dropped == 1
    log = (tmp_path / "log").read_text()
    assert "flush 1 dropped dirty=1" in log and "fua 1 ignored" in log


@needs_pread
def test_lying_sometimes_drops_every_kth_flush_from_a_seeded_offset(tmp_path):
    def dropped_flushes(seed: int) -> list[int]:
        d, _ = _drive(tmp_path, "lying-sometimes", lie_every=3, seed=seed)
        out = []
        for n in range(1, 10):
            before = d.dropped
            d.flush()
            if d.dropped > before:
                out.append(n)
        return out

    pattern = dropped_flushes(5)
    assert len(pattern) == 3 and pattern[1] - pattern[0] == pattern[2] - pattern[1] == 3
    assert dropped_flushes(5) == pattern  # the same seed, the same flushes
    assert {tuple(dropped_flushes(s)) for s in range(12)} == {(1, 4, 7), (2, 5, 8), (3, 6, 9)}


@needs_pread
def test_write_through_and_a_clean_shutdown_reach_the_media(tmp_path):
    d, image = _drive(tmp_path, "write-through")
    d.write(0, _block("a"))
    assert _media(image, 0) == _block("a") and d.dirty == {}
    d, image = _drive(tmp_path, "honest")
    d.write(0, _block("c"))
    d.close()  # nbdkit unloading: the drive writes its cache back; only a kill loses it
    assert _media(image, 0) == _block("c")


@needs_pread
def test_unknown_modes_and_sizes_are_refused(tmp_path):
    with pytest.raises(ValueError, match="mode must be one of"):
        _drive(tmp_path, "fast")
    with pytest.raises(ValueError):
        _drive(tmp_path, cache_blocks=0)


# ------------------------------------------------------------ real cuts through nbdkit

cuts = load("cuts")
needs_nbdkit = pytest.mark.skipif(bool(cuts.missing_parts()), reason=cuts.missing_parts() or "-")


@pytest.mark.system
@needs_nbdkit
@needs_pread
def test_the_honest_drive_loses_nothing_acknowledged_in_30_cuts():
    rng = random.Random(30)
    done = [
        cuts.cut(
            "honest",
            rng,
            batch=rng.choice((1, 4)),
            sync=rng.choice(("flush", "fua")),
            cache_blocks=rng.choice((8, 1024)),
        )
        for _ in range(30)
    ]
    assert [c.lost for c in done] == [()] * 30
    assert sum(c.acked > 0 for c in done) >= 25  # the cuts came while it was writing
    assert sum(c.acked for c in done) > 1000


@pytest.mark.system
@needs_nbdkit
@needs_pread
def test_lying_drives_lose_what_they_acknowledged():
    rng = random.Random(7)
    lying = cuts.cut("lying", rng, max_after_s=0.3)
    assert lying.acked > 0 and lying.lost and cuts.truth_holds("lying", lying)
    assert all(
        " dropped " in line for line in lying.log if " flush " in line and "received" not in line
    )
    small = next(  # evicts: only the newest 16 are lost (a cut after more than 32 records)
        c for c in (cuts.cut("lying", rng, cache_blocks=16) for _ in range(10)) if c.acked > 32
    )
    assert len(small.lost) in (15, 16) and cuts.truth_holds("lying", small, 16)
    # every other flush dropped: the cut loses exactly the last acknowledged record when its
    # flush was a dropped one, nothing otherwise (truth_holds)
    some = [cuts.cut("lying-sometimes", rng, lie_every=2) for _ in range(6)]
    assert all(cuts.truth_holds("lying-sometimes", c) for c in some)
    through = cuts.cut("write-through", rng)
    assert through.acked > 0 and through.lost == ()
    # the checks can fail: an honest cut judged as a lying one does not hold
    honest = cuts.cut("honest", rng)
    assert honest.acked > 0 and not cuts.truth_holds("lying", honest)


def _cut_in_process(
    tmp_path: Path, mode: str, records: int, *, batch: int = 1, sync: str = "flush", **kw
) -> object:
    """A cut as :func:`cuts.cut` makes it, without nbdkit: lab/cutcheck.py's client loop
    (records, their flush or FUA, an ACK per durable record) run against the drive's own
    :class:`Drive` in this process, one more record written but not yet made durable, then
    the drive dropped without writing its cache back (the SIGKILL); the image checked by
    cutcheck's checker. A :class:`cuts.Cut` for :func:`cuts.truth_holds`."""
    check = cuts._CUTCHECK
    seed = 11
    image = tmp_path / f"image-{mode}-{batch}-{sync}"
    image.write_bytes(bytes((records + batch + 2) * B))
    log = image.with_suffix(".log")
    d = drive_mod.Drive(str(image), mode, block_bytes=B, log=str(log), **kw)
    acked: list[int] = []
    n = 0
    while n + batch <= records:
        first = n + 1
        for k in range(first, first + batch):
            last = k == first + batch - 1
            if last and sync == "fua" and batch > 1:
                d.flush()
            d.write(k * B, check.record(k, B, seed), fua=last and sync == "fua")
        if sync == "flush":
            d.flush()
        n = first + batch - 1
        acked += range(first, n + 1)
    d.write((n + 1) * B, check.record(n + 1, B, seed))  # in flight at the cut
    del d  # the cut: its cache is gone, the image keeps what reached it
    lost = check.check(str(image), acked, B, seed)
    lines = tuple(log.read_text().splitlines()) if log.exists() else ()
    return cuts.Cut(mode, 0.0, max(acked, default=0), tuple(lost), lines)


@needs_pread
def test_cuts_of_the_drive_in_process_keep_what_each_mode_must(tmp_path):
    """The fast twin of the three tests above: the same drive, client loop, checker and
    verdict (cuts.truth_holds), without nbdkit's process and its socket."""
    for batch, sync, cache in ((1, "flush", 8), (4, "flush", 1024), (1, "fua", 8), (4, "fua", 8)):
        honest = _cut_in_process(tmp_path, "honest", 40, batch=batch, sync=sync, cache_blocks=cache)
        assert honest.acked == 40 and honest.lost == () and cuts.truth_holds("honest", honest)
    lying = _cut_in_process(tmp_path, "lying", 40)
    assert lying.lost and cuts.truth_holds("lying", lying)
    assert all(
        " dropped " in line for line in lying.log if " flush " in line and "received" not in line
    )
    small = _cut_in_process(tmp_path, "lying", 40, cache_blocks=16)  # evicts the oldest
    assert len(small.lost) in (15, 16) and cuts.truth_holds("lying", small, 16)
    for seed in range(4):
        some = _cut_in_process(tmp_path, "lying-sometimes", 7 + seed, lie_every=2, seed=seed)
        assert cuts.truth_holds("lying-sometimes", some), some
    # every other flush dropped: of two cuts one record apart, one loses its last record
    pair = [_cut_in_process(tmp_path, "lying-sometimes", n, lie_every=2).lost for n in (6, 7)]
    assert sorted(pair) in ([(), (6,)], [(), (7,)])
    through = _cut_in_process(tmp_path, "write-through", 20)
    assert through.lost == () and cuts.truth_holds("write-through", through)
    # the checks can fail: an honest cut judged as a lying one does not hold
    assert not cuts.truth_holds("lying", _cut_in_process(tmp_path, "honest", 20))


def _left_over(path: Path, kind: str) -> None:
    """What an earlier run may leave at a drive's socket path: a unix socket bound by a
    process that has exited (as a killed nbdkit leaves its socket), or a plain file."""
    if kind == "file":
        path.write_text("left over\n")
        return
    bind = "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])"
    subprocess.run([sys.executable, "-c", bind, str(path)], check=True, timeout=30)
    assert path.is_socket()


def _greeting(sock: Path) -> bytes:
    """The first 8 bytes a server on ``sock`` sends: an NBD server's is ``NBDMAGIC``."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(sock))
        got = b""
        while len(got) < 8 and (chunk := s.recv(8 - len(got))):
            got += chunk
        return got


@pytest.mark.system
@needs_nbdkit
@needs_pread
@pytest.mark.parametrize("kind", ["socket", "file"])
def test_a_socket_left_by_an_earlier_run_is_never_taken_for_the_drive(tmp_path, kind):
    """drive() hands out its socket only once the new nbdkit accepts on it: a stale socket
    file (nobody listens on it; nbdkit cannot bind while it is there) neither makes it
    return early nor keeps the drive from starting."""
    _left_over(tmp_path / "nbd.sock", kind)
    with cuts.drive(tmp_path, "honest") as (sock, _image, _log):
        assert sock == tmp_path / "nbd.sock"
        assert _greeting(sock) == b"NBDMAGIC"  # nbdkit answers on it at once


@pytest.mark.system
@needs_nbdkit
@needs_pread
def test_a_drive_that_does_not_start_says_why_within_its_bounded_wait(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError) as err:
        with cuts.drive(tmp_path, "fast"):  # not a mode: the plugin refuses to load
            pass
    assert str(err.value).startswith(f"nbdkit exited (exit 1) before it listened on {tmp_path}")
    assert "fast" in str(err.value)  # nbdkit's own words follow
    monkeypatch.setattr(cuts, "READY_TIMEOUT_S", 0.0)
    with pytest.raises(RuntimeError) as err:
        with cuts.drive(tmp_path, "honest"):
            pass
    assert str(err.value).startswith(f"nbdkit did not listen on {tmp_path / 'nbd.sock'} within 0 s")


@pytest.mark.system
@needs_nbdkit
@needs_pread
def test_the_lab_script_prints_a_line_per_scenario_and_the_tally():
    import subprocess

    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lab.py"), "--cuts", "2", "--seed", "3"]
        + ["--only", "drive"],  # the guest scenarios have tests of their own
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines[-1] == "lab: 7/7 agree"
    assert all(line.startswith("agree ") for line in lines[:-1]) and len(lines) == 8
    bad = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lab.py"), "--cuts", "0"],
        capture_output=True,
        text=True,
    )
    assert (bad.returncode, bad.stderr) == (2, "lab: --cuts must be at least 1\n")
