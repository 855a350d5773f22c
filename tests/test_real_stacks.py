"""Real storage stacks built on this machine, audited end to end through the CLI: loop devices
on tmpfs and on the disk, a nobarrier mount, zram, overlayfs (volatile and not), FUSE (bindfs,
and its daemon killed), and an LD_PRELOAD stub with an innocuous name. Each needs root and the
tool that builds it; without them the test is skipped with the reason, so the suite still
passes for a non-root user. No durations are asserted: verdicts, deciding findings, the stack
named and the counters' shape are, and each changes if its evidence changes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clitools import fsb, leftovers

from fsyncbench.report import store

# storage stacks built for the test: loop devices, FUSE, overlayfs, zram, an LD_PRELOAD stub: the system tier
pytestmark = pytest.mark.system

LINUX = sys.platform.startswith("linux")
ROOT = LINUX and os.geteuid() == 0
FAST = [
    "--samples",
    "60",
    "--compare-syncs",
    "120",
    "--sweep-repeats",
    "1",
    "--sweep-max-mib",
    "16",
    "--trace-commits",
    "3",
    "--quiet",
]

needs_root = pytest.mark.skipif(not ROOT, reason="building block stacks needs root on Linux")


def _have(*tools: str) -> bool:
    return all(shutil.which(t) for t in tools)


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def audit(directory: Path, *extra: str, env=None) -> dict:
    proc = fsb("audit", directory, "--json", "--no-report", *FAST, *extra, env=env)
    assert proc.returncode == 0, proc.stderr
    assert leftovers(directory) == []
    return json.loads(proc.stdout)


def deciding(report: dict) -> dict:
    v = report["verdict"]
    return next(
        f for f in v["findings"] if f["code"] == v["decided_by"] and f["stance"] == "decides"
    )


class Stack:
    """Mounts and loop devices made by one test, torn down in reverse order."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.undo: list[list[str]] = []

    def loop(self, backing: Path, size_mib: int = 64) -> str:
        subprocess.run(["truncate", "-s", f"{size_mib}M", str(backing)], check=True)
        dev = sh("losetup", "-f", "--show", str(backing))
        self.undo.append(["losetup", "-d", dev])
        return dev

    def mount(self, source: str, point: Path, *options: str, fs_type: str | None = None) -> Path:
        point.mkdir(parents=True, exist_ok=True)
        argv = (
            ["mount"]
            + (["-t", fs_type] if fs_type else [])
            + (["-o", ",".join(options)] if options else [])
            + [source, str(point)]
        )
        subprocess.run(argv, check=True, capture_output=True)
        self.undo.append(["umount", "-l", str(point)])
        return point

    def ext4(self, dev: str, point: Path, *options: str) -> Path:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        return self.mount(dev, point, *options)

    def close(self) -> None:
        for argv in reversed(self.undo):
            subprocess.run(argv, capture_output=True)


@pytest.fixture
def stack(tmp_path):
    s = Stack(tmp_path)
    yield s
    s.close()


def _shm_dir() -> Path | None:
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


@needs_root
@pytest.mark.skipif(
    not _have("losetup", "mkfs.ext4") or _shm_dir() is None,
    reason="needs losetup, mkfs.ext4 and a writable /dev/shm",
)
def test_ext4_on_a_loop_device_backed_by_tmpfs_is_no_flush(stack, tmp_path):
    backing = Path("/dev/shm") / f"fsyncbench-test-{os.getpid()}.img"
    stack.undo.append(["rm", "-f", str(backing)])
    dev = stack.loop(backing)
    mnt = stack.ext4(dev, tmp_path / "mnt")
    report = audit(mnt)
    v = report["verdict"]
    assert (v["path_verdict"], v["decided_by"], v["strength"]) == (
        "no_flush",
        "ram-backed-storage",
        "measured",
    )
    name = Path(dev).name
    assert f"{name} → tmpfs /dev/shm (RAM)" in deciding(report)["message"]
    layers = report["host"]["target"]["layers"]
    assert [x["kind"] for x in layers] == ["filesystem", "loop", "filesystem-ram"]
    assert str(backing) in layers[1]["note"]
    # flushes were counted on the loop device, and shown as proving nothing
    flushes = next(r for r in report["results"] if r["name"] == "write+fdatasync")
    assert {d["device"] for d in flushes["device_flushes"]} == {name}
    assert "flushes-counted-above-media" in {f["code"] for f in v["findings"]}
    # run and audit --from agree
    out = tmp_path / "out"
    run = fsb(
        "run",
        mnt,
        "--report-dir",
        out,
        "--journal-mode",
        "wal",
        "--synchronous",
        "full",
        "--samples",
        "30",
        "--warmup",
        "2",
        "--quiet",
    )
    assert run.returncode == 0, run.stderr
    saved = store.load_report(next(out.glob("*.json")))
    assert (saved.verdict.path_verdict, saved.verdict.decided_by) == (
        "no_flush",
        "ram-backed-storage",
    )
    again = json.loads(
        fsb("audit", "--from", next(out.glob("*.json")), "--json", "--no-report").stdout
    )
    assert again["verdict"]["decided_by"] == "ram-backed-storage"


@needs_root
@pytest.mark.skipif(not _have("losetup", "mkfs.ext4"), reason="needs losetup and mkfs.ext4")
def test_nobarrier_ext4_on_a_loop_file_on_the_disk_is_volatile_cache_naming_the_option(
    stack, tmp_path
):
    """The data reaches the loop device (writes counted), no flush follows: volatile_cache,
    caused by the mount option, not no_flush."""
    dev = stack.loop(tmp_path / "disk.img")
    mnt = stack.ext4(dev, tmp_path / "mnt", "barrier=0")
    report = audit(mnt)
    v = report["verdict"]
    assert (v["path_verdict"], v["decided_by"], v["strength"]) == (
        "volatile_cache",
        "barriers-disabled",
        "measured",
    )
    assert "nobarrier" in deciding(report)["message"]
    flushes = next(r for r in report["results"] if r["name"] == "write+fdatasync")
    loop = next(d for d in flushes["device_flushes"] if d["device"] == Path(dev).name)
    assert loop["flushes"] == 0 and loop["writes"] >= flushes["syncs_issued"] // 2


@needs_root
@pytest.mark.skipif(not _have("losetup", "mkfs.ext4"), reason="needs losetup and mkfs.ext4")
def test_loop_file_on_the_disk_is_followed_to_the_disk(stack, tmp_path):
    dev = stack.loop(tmp_path / "disk.img")
    mnt = stack.ext4(dev, tmp_path / "mnt")
    proc = fsb("host", mnt, "--json")
    target = json.loads(proc.stdout)["target"]
    kinds = [x["kind"] for x in target["layers"]]
    assert kinds[:3] == ["filesystem", "loop", "filesystem"]
    assert target["layers"][-1]["holds_bytes"] is True
    assert Path(dev).name not in [d["name"] for d in target["disks"]]  # loop holds nothing
    assert target["chain"][0] == Path(dev).name


def _free_zram() -> str | None:
    zram = Path("/sys/block/zram0")
    if not zram.is_dir():
        return "no /sys/block/zram0 (zram module not loaded)"
    if (zram / "disksize").read_text().strip() != "0":
        return "zram0 is in use"
    return None


@needs_root
@pytest.mark.skipif(_free_zram() is not None, reason=str(_free_zram()))
def test_ext4_on_zram_is_no_flush(stack, tmp_path):
    Path("/sys/block/zram0/disksize").write_text("64M")
    stack.undo.append(["sh", "-c", "echo 1 > /sys/block/zram0/reset"])
    mnt = stack.ext4("/dev/zram0", tmp_path / "z")
    report = audit(mnt, "--no-trace")
    v = report["verdict"]
    assert (v["path_verdict"], v["decided_by"]) == ("no_flush", "ram-backed-storage")
    assert "zram0 (RAM)" in deciding(report)["message"]


@needs_root
def test_overlay_volatile_is_no_flush_and_a_plain_overlay_is_followed_to_its_upper_dir(
    stack, tmp_path
):
    for d in ("lower", "up/u", "up/w", "vol/u", "vol/w"):
        (tmp_path / d).mkdir(parents=True)
    try:
        plain = stack.mount(
            "overlay",
            tmp_path / "plain",
            f"lowerdir={tmp_path / 'lower'}",
            f"upperdir={tmp_path / 'up/u'}",
            f"workdir={tmp_path / 'up/w'}",
            fs_type="overlay",
        )
        vol = stack.mount(
            "overlay",
            tmp_path / "vol",
            f"lowerdir={tmp_path / 'lower'}",
            f"upperdir={tmp_path / 'vol/u'}",
            f"workdir={tmp_path / 'vol/w'}",
            "volatile",
            fs_type="overlay",
        )
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"overlay mount failed: {exc.stderr.strip()}")
    report = audit(vol, "--no-trace")
    v = report["verdict"]
    assert (v["path_verdict"], v["decided_by"]) == ("no_flush", "overlay-volatile")
    host = json.loads(fsb("host", plain, "--json").stdout)["target"]
    assert host["layers"][0]["kind"] == "overlay" and host["layers"][0]["flush"] == "passes-down"
    assert len(host["layers"]) >= 2 and "upper directory" in host["layers"][1]["note"]
    assert host["disks"]  # the upper dir's filesystem led to the disk


@needs_root
@pytest.mark.skipif(
    not _have("bindfs"), reason="needs bindfs (apt-get install bindfs; .ci/run does)"
)
def test_fuse_is_unverifiable_and_a_dead_fuse_mount_is_one_line_exit_2(tmp_path):
    src, mnt = tmp_path / "src", tmp_path / "mnt"
    src.mkdir()
    mnt.mkdir()
    subprocess.run(["bindfs", str(src), str(mnt)], check=True)
    try:
        report = audit(mnt, "--no-trace")
        v = report["verdict"]
        assert (v["path_verdict"], v["decided_by"]) == ("unverifiable", "network-filesystem")
        assert str(src) in deciding(report)["message"]  # the FUSE source is named
        pid = int(sh("pgrep", "-f", f"bindfs {src}").split()[0])
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        for argv in (("run", mnt, "--samples", "5", "--quiet"), ("audit", mnt), ("host", mnt)):
            proc = fsb(*argv)
            assert proc.returncode == 2, proc.stderr
            assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
            assert "Transport endpoint is not connected" in proc.stderr
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


STUB_C = r"""
int fsync(int fd) { (void)fd; return 0; }
int fdatasync(int fd) { (void)fd; return 0; }
"""


@pytest.mark.skipif(not LINUX or not _have("gcc"), reason="needs gcc to build the LD_PRELOAD stub")
def test_an_innocuously_named_preload_stub_is_caught_by_measurement(tmp_path):
    """A library that is not on any list of sync-disabling libraries: the counters and the
    libc-vs-raw-syscall comparison catch it, not its name."""
    src = tmp_path / "fastio.c"
    src.write_text(STUB_C)
    lib = tmp_path / "libfastio.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    target = tmp_path / "t"
    target.mkdir()
    env = {**os.environ, "LD_PRELOAD": str(lib)}
    report = audit(target, "--no-trace", env=env)
    v = report["verdict"]
    assert v["path_verdict"] == "no_flush"
    assert v["decided_by"] in ("flushes-dropped", "libc-sync-interposed")
    codes = {f["code"] for f in v["findings"]}
    assert "libc-sync-interposed" in codes and "sync-disabled-by-preload" not in codes


@needs_root
@pytest.mark.skipif(not _have("losetup", "mkfs.ext4"), reason="needs losetup and mkfs.ext4")
def test_a_loop_device_on_a_loop_device_is_followed_as_a_device(stack, tmp_path):
    """losetup on a block device node: its 'file' lives on devtmpfs, its bytes do not."""
    inner = stack.loop(tmp_path / "disk.img")
    outer = sh("losetup", "-f", "--show", inner)
    stack.undo.append(["losetup", "-d", outer])
    mnt = stack.ext4(outer, tmp_path / "mnt")
    target = json.loads(fsb("host", mnt, "--json").stdout)["target"]
    names = [x["name"] for x in target["layers"]]
    assert names[1:3] == [Path(outer).name, Path(inner).name]
    assert not any(x["kind"] == "filesystem-ram" for x in target["layers"])
    assert target["disks"]  # followed through the inner loop's backing file to the disk


@needs_root
@pytest.mark.skipif(
    not _have("losetup", "mkfs.ext4", "unshare"), reason="needs losetup, mkfs.ext4 and unshare"
)
def test_a_loop_backing_file_in_another_mount_namespace_is_not_followed(stack, tmp_path):
    """The backing file's tmpfs exists only in the namespace that made the loop device: its
    path here names another file (or none), so the walk stops and says so."""
    private = tmp_path / "private"
    private.mkdir()
    dev = sh(
        "unshare",
        "-m",
        "sh",
        "-c",
        f"mount --make-rprivate / && mount -t tmpfs tmpfs {private} && "
        f"truncate -s 64M {private}/img && losetup -f --show {private}/img",
    )
    stack.undo.append(["losetup", "-d", dev])
    mnt = stack.ext4(dev, tmp_path / "mnt")
    report = audit(mnt, "--no-trace")
    v = report["verdict"]
    assert (v["path_verdict"], v["decided_by"]) == ("unverifiable", "stack-not-followed")
    loop = report["host"]["target"]["layers"][1]
    assert "not mounted in this mount namespace" in loop["note"]


@needs_root
@pytest.mark.skipif(not _have("losetup", "mkfs.ext4"), reason="needs losetup and mkfs.ext4")
def test_a_backing_tmpfs_covered_by_another_mount_is_still_found(stack, tmp_path):
    """The loop's tmpfs is shadowed by a bind mount of a disk directory: its path now leads
    to the disk, the loop's own record (device, inode) to the covered tmpfs."""
    shadow = tmp_path / "shadow"
    stack.mount("fsbshadow", shadow, "size=128M", fs_type="tmpfs")
    dev = stack.loop(shadow / "img")
    mnt = stack.ext4(dev, tmp_path / "mnt")
    cover = tmp_path / "cover"
    cover.mkdir()
    stack.mount(str(cover), shadow, "bind")
    target = json.loads(fsb("host", mnt, "--json").stdout)["target"]
    assert [x["kind"] for x in target["layers"]] == ["filesystem", "loop", "filesystem-ram"]
