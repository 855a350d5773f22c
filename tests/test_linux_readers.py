"""What the Linux readers take from ``/proc`` and ``/sys``, and the shared helpers they stand on.

Pinned here (issue 45, item 1): which lines of ``/proc/self/mountinfo`` become mounts and how
their bytes are decoded; how a mount's device is found in ``/sys`` (device number first, then
``/dev/<name>`` or ``/dev/mapper/<name>``) and where a whole disk's attributes are read; which
names and bytes of ``/sys/block/<disk>/stat`` give flush counters, and when the real ``/``
is (not) read; the SQLite library named from ``/proc/self/maps``; that the live root, and only
it, runs the vendor RAID tools and ``systemd-detect-virt`` (through the runner it is given);
and the helpers of ``fsyncbench.host._common`` (text reads whatever the locale, mount lookup,
psutil's partitions, tool runs, the common host facts). Fake ``/proc`` and ``/sys`` trees are
built as in tests/test_host_linux.py; live checks read this machine and skip where it has no
``/proc``.
"""

from __future__ import annotations

import locale
import os
import sqlite3
import subprocess
import sys
import types
from collections import namedtuple
from pathlib import Path
from types import SimpleNamespace

import pytest
import this_platform
from test_host_linux import STAT_17, FakeRoot, line

from fsyncbench.host import _common, _counters, _linux, _mountinfo, _raid, _sysblock, _virt
from fsyncbench.model import FlushDelta, Mount

pytestmark = this_platform.linux_trees

Part = namedtuple("Part", "device mountpoint fstype opts")

HAS_PROC = os.path.exists("/proc/self/mountinfo") and os.path.exists("/proc/self/maps")
needs_proc = pytest.mark.skipif(not HAS_PROC, reason="needs this machine's /proc (Linux)")


def _live_disk() -> str | None:
    """A whole disk of this machine whose ``stat`` holds at least the write count."""
    try:
        names = sorted(os.listdir("/sys/block"))
    except OSError:
        return None
    for name in names:
        text = _common.read_text(f"/sys/block/{name}/stat")
        if text is not None and len(text.split()) >= _counters.WRITE_IOS_FIELD:
            return name
    return None


LIVE_DISK = _live_disk() if sys.platform.startswith("linux") else None
needs_live_disk = pytest.mark.skipif(LIVE_DISK is None, reason="needs Linux with /sys/block")


@pytest.fixture
def ascii_locale():
    """The C locale's character set (ASCII) for the test: a host whose locale is not UTF-8
    (Python's open() without an encoding then decodes with it)."""
    old = locale.setlocale(locale.LC_CTYPE)
    try:
        locale.setlocale(locale.LC_CTYPE, "C")
    except locale.Error:  # pragma: no cover - every C library has the C locale
        pytest.skip("no C locale")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, old)


def _no_tools() -> _raid.ToolAccess:
    return _raid.ToolAccess(lambda name: None, lambda argv: None)


# --------------------------------------------------------------------------- text reads


def test_sysfs_text_is_utf8_whatever_the_locale(tmp_path: Path, ascii_locale) -> None:
    """A model string in UTF-8 reads the same on a host whose locale is ASCII."""
    (tmp_path / "model").write_bytes("Café SSD\n".encode())
    assert _common.read_text(str(tmp_path / "model")) == "Café SSD"


def test_undecodable_sysfs_bytes_are_replaced_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "serial").write_bytes(b"ST\xff1000\n")
    assert _common.read_text(str(tmp_path / "serial")) == "ST\ufffd1000"


def test_under_root_rebases_any_absolute_path() -> None:
    assert _common.under_root("/rec", "/sys/block") == "/rec/sys/block"
    assert _common.under_root("/rec", "/Xdata/XX") == "/rec/Xdata/XX"
    assert _common.under_root("/", "/proc/self/maps") == "/proc/self/maps"


# --------------------------------------------------------------------------- mount lookup


def test_a_mount_point_ending_in_x_holds_only_its_own_directory() -> None:
    mounts = [
        Mount(mount_point="/", fs_type="ext4", source="/dev/vda"),
        Mount(mount_point="/media/X", fs_type="vfat", source="/dev/sdb1"),
    ]
    found = _mountinfo.find_mount("/media/backup/f", mounts)
    assert found is not None and found.mount_point == "/"
    assert not _common.is_within("/media/backup", "/media/X")
    assert _common.is_within("/media/X/f", "/media/X/")


def test_an_empty_mount_point_is_the_root() -> None:
    """is_within reads "" as "/"; the lookup over mount points agrees."""
    assert _common.is_within("/srv/x", "")
    assert _common.longest_prefix("/srv/x", [""]) == 0


def test_psutil_mount_of_a_drive_without_filesystem_or_options() -> None:
    """psutil gives an empty fstype for a drive holding no filesystem (an empty CD-ROM drive
    on Windows: https://github.com/giampaolo/psutil/blob/master/scripts/disk_usage.py skips
    ``part.fstype == ''``); empty fields stay empty, not made up."""
    mount = _common.psutil_mount("/mnt/cd/x", [Part("", "/mnt/cd", "", "")])
    assert mount == Mount(mount_point="/mnt/cd", fs_type="", source="", options=())


#: psutil.disk_partitions(): with all=False only the physical devices, with all=True also
#: tmpfs and the other virtual filesystems
#: (https://psutil.readthedocs.io/en/latest/#psutil.disk_partitions).
PARTITIONS = [
    Part("/dev/vda", "/", "ext4", "rw,relatime"),
    Part("tmpfs", "/dev/shm", "tmpfs", "rw,nosuid,nodev"),
]


def _fake_disk_partitions(all: bool = False) -> list[Part]:
    return list(PARTITIONS) if all else [p for p in PARTITIONS if p.device.startswith("/dev/")]


def test_partitions_are_asked_for_with_virtual_filesystems(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A target on tmpfs is found in psutil's table only when asked with all=True."""
    monkeypatch.setattr(_common, "psutil", SimpleNamespace(disk_partitions=_fake_disk_partitions))
    assert _common.disk_partitions() == PARTITIONS
    mount = _common.psutil_mount("/dev/shm/bench")
    assert mount is not None and (mount.mount_point, mount.fs_type) == ("/dev/shm", "tmpfs")


def test_partitions_without_psutil_are_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "psutil", None)
    assert _common.disk_partitions() is None
    assert _common.psutil_mount("/data") is None


# --------------------------------------------------------------------------- tool runs


def test_a_vendor_tool_runs_without_a_shell_or_terminal_input_within_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The call run_command makes: argv as a list (no shell), output captured, stdin closed
    (a tool that prompts must not wait on the terminal), the timeout passed on, and a
    non-zero exit returned with its output, not raised (storcli exits non-zero with a
    usable report)."""
    calls = []

    def fake_run(args, **kwargs):
        calls.append((args, kwargs))
        return subprocess.CompletedProcess(args, 3, b"Controller = 0\n", b"")

    monkeypatch.setattr(_common.subprocess, "run", fake_run)
    got = _common.run_command(("storcli", "/call", "show"), 2.5)
    assert got == (3, b"Controller = 0\n")
    ((args, kwargs),) = calls
    assert args == ["storcli", "/call", "show"]
    assert kwargs["capture_output"] is True
    assert kwargs["timeout"] == 2.5
    assert kwargs["stdin"] == subprocess.DEVNULL
    assert not kwargs.get("check")
    assert "shell" not in kwargs


# --------------------------------------------------------------------------- cpu, sqlite


def test_a_cpu_brand_may_hold_a_colon() -> None:
    text = "processor\t: 0\nmodel name\t: Engineering Sample: 2.1GHz\n"  # synthetic
    assert _common.proc_model_name(text) == "Engineering Sample: 2.1GHz"


def test_sqlite_compile_options_come_from_an_in_memory_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The options are those of the linked library, and reading them leaves no file in the
    working directory (":memory:" is SQLite's in-memory name, https://www.sqlite.org/inmemorydb.html)."""
    monkeypatch.chdir(tmp_path)
    conn = sqlite3.connect(":memory:")
    try:
        expected = tuple(str(row[0]) for row in conn.execute("PRAGMA compile_options"))
    finally:
        conn.close()
    got = _common.sqlite_compile_options()
    assert got == expected
    assert any(option.startswith("THREADSAFE=") for option in got)
    assert list(tmp_path.iterdir()) == []


def test_sqlite_extension_file_is_the_loaded_module() -> None:
    import _sqlite3

    assert _common.sqlite_extension_file() == getattr(_sqlite3, "__file__", None)


def test_a_sqlite_module_built_into_the_interpreter_has_no_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "_sqlite3", types.ModuleType("_sqlite3"))
    assert _common.sqlite_extension_file() is None


# --------------------------------------------------------------------------- base facts


def _quiet_base_facts(monkeypatch: pytest.MonkeyPatch, psutil) -> dict:
    monkeypatch.setattr(_common, "psutil", psutil)
    monkeypatch.setattr(_common, "cpu_brand", lambda: "Test CPU")
    return _common.base_facts()


def test_base_facts_take_counts_and_memory_from_psutil(monkeypatch: pytest.MonkeyPatch) -> None:
    psutil = SimpleNamespace(
        cpu_count=lambda logical=True: 16 if logical else 8,
        virtual_memory=lambda: SimpleNamespace(total=34359738368.0),
    )
    facts = _quiet_base_facts(monkeypatch, psutil)
    assert (facts["cpu_count_logical"], facts["cpu_count_physical"]) == (16, 8)
    assert facts["memory_total_bytes"] == 34359738368
    assert isinstance(facts["memory_total_bytes"], int)
    assert facts["cpu_brand"] == "Test CPU"


def _fails(*args, **kwargs):
    raise OSError("no /proc")


@pytest.mark.parametrize(
    "psutil",
    [None, SimpleNamespace(cpu_count=_fails, virtual_memory=_fails)],
    ids=["missing", "failing"],
)
def test_base_facts_without_psutil_answers_are_unknown(
    monkeypatch: pytest.MonkeyPatch, psutil
) -> None:
    facts = _quiet_base_facts(monkeypatch, psutil)
    assert facts["cpu_count_logical"] is None
    assert facts["cpu_count_physical"] is None
    assert facts["memory_total_bytes"] is None


def test_base_facts_hostname_is_the_socket_name_else_the_node_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_common.platform, "node", lambda: "node-name")
    monkeypatch.setattr(_common, "socket", SimpleNamespace(gethostname=lambda: "db-07"))
    assert _quiet_base_facts(monkeypatch, None)["hostname"] == "db-07"
    monkeypatch.setattr(_common, "socket", SimpleNamespace(gethostname=lambda: ""))
    assert _quiet_base_facts(monkeypatch, None)["hostname"] == "node-name"


def test_base_facts_record_ld_preload(monkeypatch: pytest.MonkeyPatch) -> None:
    """An LD_PRELOAD such as libeatmydata turns fsync into a no-op: it is recorded."""
    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/libeatmydata.so")
    assert _quiet_base_facts(monkeypatch, None)["ld_preload"] == "/usr/lib/libeatmydata.so"


# --------------------------------------------------------------------------- mountinfo


def test_a_mountinfo_line_without_super_options_parses() -> None:
    mount = _mountinfo.parse_line("36 35 98:0 / /mnt rw,noatime - ext4 /dev/sda1")
    assert mount == Mount(
        mount_point="/mnt",
        fs_type="ext4",
        source="/dev/sda1",
        options=("rw", "noatime"),
        super_options=(),
        device_number="98:0",
        root="/",
    )


def test_a_mountinfo_line_missing_its_options_field_is_malformed() -> None:
    """The separator is looked for after the six fixed fields: a "-" in their place is not it."""
    assert _mountinfo.parse_line("36 35 98:0 / /mnt - ext4 /dev/sda1 rw") is None


def test_mountinfo_paths_that_are_not_utf8_round_trip(fake: FakeRoot) -> None:
    path = fake.root / "proc" / "self" / "mountinfo"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        b"20 1 254:0 / / rw - ext4 /dev/vda rw\n21 20 8:1 / /mnt/caf\xe9 rw - vfat /dev/sdb1 rw\n"
    )
    mounts = _mountinfo.read_mountinfo(str(fake.root))
    assert [os.fsencode(m.mount_point) for m in mounts] == [b"/", b"/mnt/caf\xe9"]


@needs_proc
def test_read_mountinfo_reads_this_machine_by_default() -> None:
    mounts = _mountinfo.read_mountinfo()
    top = _mountinfo.find_mount("/", mounts)
    assert top is not None and top.mount_point == "/"


# --------------------------------------------------------------------------- /sys devices


def test_a_ram_disk_root_is_found_by_its_device_number(fake: FakeRoot) -> None:
    """An initramfs root mounted from /dev/root (no such name in /sys) on a RAM disk
    (block major 1, Documentation/admin-guide/devices.txt) is found through /sys/dev/block."""
    ram0 = fake.virtual("ram0", "1:0")
    fake.mountinfo(line("1:0", "/", "ext2", "/dev/root"))
    (mount,) = _mountinfo.read_mountinfo(str(fake.root))
    assert _sysblock.device_dir(str(fake.root), mount) == os.path.realpath(ram0)
    assert _linux.storage_target("/srv", str(fake.root)).chain == ("ram0",)


def test_a_mount_without_device_number_is_found_by_its_source(fake: FakeRoot) -> None:
    sda = fake.sata_disk("sda", "8:0", 0)
    mount = Mount(mount_point="/", fs_type="ext4", source="/dev/sda")
    assert _sysblock.device_dir(str(fake.root), mount) == os.path.realpath(sda)


def test_a_dev_mapper_source_names_its_own_dm_device(fake: FakeRoot) -> None:
    part = fake.partition(fake.nvme_disk(), "nvme0n1p3", "259:3", 3)
    fake.stacked("dm-0", "253:0", [part], dm_name="vg-swap")
    root_lv = fake.stacked("dm-1", "253:1", [part], dm_name="vg-root")
    mount = Mount(
        mount_point="/", fs_type="btrfs", source="/dev/mapper/vg-root", device_number="0:40"
    )
    assert _sysblock.device_dir(str(fake.root), mount) == os.path.realpath(root_lv)


def test_a_disk_is_read_from_sys_block_or_else_from_class_block(fake: FakeRoot) -> None:
    fake.sata_disk("sda", "8:0", 0)
    fake.sata_disk("sdb", "8:16", 1)
    (fake.root / "sys" / "class" / "block" / "sda").unlink()  # only /sys/block/sda
    (fake.root / "sys" / "block" / "sdb").unlink()  # only /sys/class/block/sdb
    for name in ("sda", "sdb"):
        disk = _sysblock.block_device(str(fake.root), name)
        assert (disk.model, disk.transport, disk.has_flush_counters) == (
            "WDC WD40EFRX-68N",
            "ata",
            True,
        )


def test_the_recorded_trees_own_path_is_not_read_as_a_bus(tmp_path: Path) -> None:
    """A tree recorded under a directory named like a bus (here "usb-recording") does not
    make its NVMe disk a USB one: only the path inside the tree counts."""
    fake = FakeRoot(tmp_path / "usb-recording")
    fake.nvme_disk()
    assert _sysblock.block_device(str(fake.root), "nvme0n1").transport == "nvme"


# --------------------------------------------------------------------------- flush counters


def test_stat_with_the_write_count_as_last_field_gives_writes() -> None:
    assert _counters.parse_stat("1 2 3 4 5") == (None, None, 5)
    assert _counters.parse_stat("1 2 3 4") == (None, None, None)


def test_only_plain_disk_names_are_read(tmp_path: Path) -> None:
    """A name that is empty, "." or "..", holds a "/" or a NUL byte reads nothing, even
    where the path it would make leads to a stat file."""
    root = tmp_path / "root"
    for relative in ("sys/block/sda/stat", "sys/block/stat", "sys/stat"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(STAT_17)
    names = ["sda", "", ".", "..", "../block/sda", "sda/..", "sda\0"]
    got = _counters.read_flush_counters(names, root=str(root))
    none = (None, None, None)
    assert got == {"sda": (606, 257, 3221), **{name: none for name in names[1:]}}


def test_stat_counters_are_ascii_digits(fake: FakeRoot) -> None:
    """Fullwidth digits (U+FF10..) are not the kernel's decimal counters: no reading."""
    fields = STAT_17.split()
    fields[15] = "６０６"
    stat = fake.root / "sys" / "block" / "sda" / "stat"
    stat.parent.mkdir(parents=True)
    stat.write_bytes(" ".join(fields).encode() + b"\n")
    assert _counters.read_flush_counters(["sda"], root=str(fake.root)) == {
        "sda": (None, None, None)
    }


def test_a_stat_file_is_read_as_one_page(fake: FakeRoot) -> None:
    """One small read per disk: the first 4096 bytes (what lies beyond is not read)."""
    head = " ".join(str(n) for n in range(1, 17))
    text = head + " " * (4096 - len(head)) + "17\n"
    stat = fake.root / "sys" / "block" / "sda" / "stat"
    stat.parent.mkdir(parents=True)
    stat.write_text(text)
    assert _counters.read_flush_counters(["sda"], root=str(fake.root)) == {"sda": (None, None, 5)}


def test_a_recorded_tree_is_read_on_any_platform(
    fake: FakeRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.sata_disk("sda", "8:0", 0)
    monkeypatch.setattr(_counters, "sys", SimpleNamespace(platform="darwin"))
    assert _counters.read_flush_counters(["sda"], root=str(fake.root)) == {"sda": (606, 257, 3221)}


@needs_live_disk
def test_the_real_sys_block_is_read_by_default_on_linux() -> None:
    (counters,) = _counters.read_flush_counters([LIVE_DISK]).values()
    assert counters[2] is not None  # field 5, present on every kernel


@needs_live_disk
def test_the_real_root_is_not_read_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_counters, "sys", SimpleNamespace(platform="darwin"))
    assert _counters.read_flush_counters([LIVE_DISK]) == {LIVE_DISK: (None, None, None)}


def test_flush_deltas_of_a_disk_gone_and_of_one_unchanged() -> None:
    before = {"sda": (7, 3, 10), "sdb": (5, 1, 9)}
    after = {"sda": (7, 3, 10)}
    assert _counters.flush_deltas(before, after) == (
        FlushDelta("sda", 0, 0, 0),
        FlushDelta("sdb", None, None, None),
    )


# --------------------------------------------------------------------------- sqlite library


def _maps(fake: FakeRoot, data: bytes) -> None:
    path = fake.root / "proc" / "self" / "maps"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_maps_are_read_as_utf8_whatever_the_locale(fake: FakeRoot, ascii_locale) -> None:
    _maps(fake, "7f00-7f10 r--p 00000000 fe:00 1 /opt/café/libsqlite3.so.0\n".encode())
    assert _linux.sqlite_library(str(fake.root)) == "/opt/café/libsqlite3.so.0"


def test_maps_with_undecodable_paths_still_name_the_library(fake: FakeRoot) -> None:
    _maps(fake, b"7f00-7f10 r--p 00000000 fe:00 1 /opt/\xff/libsqlite3.so.0\n")
    assert _linux.sqlite_library(str(fake.root)) == "/opt/\ufffd/libsqlite3.so.0"


def test_without_a_mapped_libsqlite3_the_extension_module_holds_sqlite(fake: FakeRoot) -> None:
    _maps(fake, b"7f00-7f10 r-xp 00000000 fe:00 1 /usr/bin/python3.11\n")
    expected = _common.sqlite_extension_file()
    assert expected is not None
    assert _linux.sqlite_library(str(fake.root)) == expected


@needs_proc
def test_sqlite_library_reads_this_process_by_default() -> None:
    library = _linux.sqlite_library()
    assert library is not None and os.path.exists(library)


# --------------------------------------------------------------------------- live root only


@pytest.fixture
def tool_lookups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the calls of _raid.live_access (which finds the vendor tools on PATH)."""
    calls: list[int] = []

    def live_access() -> _raid.ToolAccess:
        calls.append(1)
        return _no_tools()

    monkeypatch.setattr(_raid, "live_access", live_access)
    return calls


def test_a_recorded_tree_never_runs_the_raid_tools(fake: FakeRoot, tool_lookups) -> None:
    fake.sata_disk("sda", "8:0", 0)
    fake.mountinfo(line("8:0", "/", "ext4", "/dev/sda"))
    target = _linux.storage_target("/srv", str(fake.root))
    assert target.chain == ("sda",)
    assert tool_lookups == []


@needs_proc
def test_the_live_root_looks_for_the_raid_tools(tmp_path: Path, tool_lookups) -> None:
    target = _linux.storage_target(str(tmp_path))
    assert target.mount is not None
    assert tool_lookups == [1]


@needs_proc
def test_collect_asks_systemd_detect_virt_through_its_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool_lookups
) -> None:
    asked = []

    def runner(argv: list[str]) -> tuple[int, bytes]:
        asked.append(argv)
        return (0, b"kvm\n") if argv[-1] == "--vm" else (1, b"none\n")

    monkeypatch.setattr(_virt, "shutil", SimpleNamespace(which=lambda name: f"/usr/bin/{name}"))
    monkeypatch.setattr(_virt, "_default_runner", lambda argv: None)  # never a real process
    facts = _linux.collect(str(tmp_path), "/", environ={}, runner=runner)
    assert facts.virtualization.detect_virt == "kvm"
    assert ["systemd-detect-virt", "--vm"] in asked


def test_collect_reads_the_container_variable_from_the_environ_given(
    fake: FakeRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("container", raising=False)
    fake.mountinfo(line("0:40", "/", "overlay", "overlay"))
    facts = _linux.collect("/srv", str(fake.root), environ={"container": "lxc"})
    assert facts.virtualization.container == "lxc"
