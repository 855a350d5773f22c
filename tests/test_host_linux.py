"""Tests of fsyncbench.host on Linux: parsers on recorded text, sysfs walks on fake trees
shaped like the kernel's, and live checks on this machine (skipped elsewhere)."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import sys
from pathlib import Path
from types import SimpleNamespace

import factories
import pytest
import this_platform

import fsyncbench.host as host_pkg
from fsyncbench.host import (
    _counters,
    _linux,
    _mountinfo,
    _sysblock,
    _virt,
    collect_host,
    flush_deltas,
    read_flush_counters,
)
from fsyncbench.judge import engine
from fsyncbench.model import FlushDelta, Host, Mount

#: Linux's host collector over recorded /proc and /sys trees (this_platform.linux_trees)
pytestmark = this_platform.linux_trees

FIXTURES = Path(__file__).parent / "fixtures" / "host"

# 17 fields (kernel >= 5.5): flushes completed = 606, flush ms = 257.
STAT_17 = "   27018     6036  1808322     6065     3221     5248   391920     1819        0     5472     8902     3269       73    73976      758      606      257\n"
# 11 fields (kernel < 4.18): no flush counters.
STAT_11 = "    4505     1204   226058     2132     6785    13283   160528    16580        0     8576    18716\n"

IS_LINUX = sys.platform.startswith("linux")


# --------------------------------------------------------------------------- fake trees


class FakeRoot:
    """A fake ``/`` holding ``proc`` and ``sys`` laid out like the kernel's (real
    directories and relative symlinks), for functions that take a ``root`` argument."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.devices = root / "sys" / "devices"

    def write(self, relative: str | Path, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    @staticmethod
    def link(link: Path, target: Path) -> None:
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(target, link.parent), link)

    def _register(self, name: str, directory: Path, dev: str, whole: bool) -> None:
        sys_dir = self.root / "sys"
        self.link(sys_dir / "class" / "block" / name, directory)
        self.link(sys_dir / "dev" / "block" / dev, directory)
        if whole:
            self.link(sys_dir / "block" / name, directory)

    def disk(
        self,
        name: str,
        parent: str,
        dev: str,
        *,
        block_subdir: bool = True,
        stat: str = STAT_17,
        queue: dict[str, str] | None = None,
        device: dict[str, str] | None = None,
        own: dict[str, str] | None = None,
    ) -> Path:
        """A whole disk at ``sys/devices/<parent>[/block]/<name>`` whose ``device`` link
        points at ``<parent>`` (SCSI/virtio put disks under ``block/``, NVMe does not)."""
        parent_dir = self.devices / parent
        directory = parent_dir / "block" / name if block_subdir else parent_dir / name
        directory.mkdir(parents=True)
        (directory / "dev").write_text(dev + "\n")
        (directory / "stat").write_text(stat)
        (directory / "slaves").mkdir()
        (directory / "holders").mkdir()
        for key, value in (queue or {}).items():
            (directory / "queue").mkdir(exist_ok=True)
            (directory / "queue" / key).write_text(value + "\n")
        for key, value in (device or {}).items():
            (parent_dir / key).write_text(value + "\n")
        for key, value in (own or {}).items():
            (directory / key).write_text(value + "\n")
        self.link(directory / "device", parent_dir)
        self._register(name, directory, dev, whole=True)
        return directory

    def partition(self, disk_dir: Path, name: str, dev: str, number: int = 1) -> Path:
        directory = disk_dir / name
        directory.mkdir()
        (directory / "partition").write_text(f"{number}\n")
        (directory / "dev").write_text(dev + "\n")
        (directory / "stat").write_text(STAT_17)
        self._register(name, directory, dev, whole=False)
        return directory

    def stacked(self, name: str, dev: str, slaves: list[Path], dm_name: str | None = None) -> Path:
        """A dm-* or md* device over ``slaves`` (``slaves/<slave>`` symlinks)."""
        directory = self.devices / "virtual" / "block" / name
        directory.mkdir(parents=True)
        (directory / "dev").write_text(dev + "\n")
        (directory / "stat").write_text(STAT_17)
        for slave in slaves:
            self.link(directory / "slaves" / slave.name, slave)
        if dm_name is not None:
            (directory / "dm").mkdir()
            (directory / "dm" / "name").write_text(dm_name + "\n")
        self._register(name, directory, dev, whole=True)
        return directory

    def virtual(
        self,
        name: str,
        dev: str,
        *,
        write_cache: str = "write back",
        backing_file: str | None = None,
        stat: str = STAT_17,
    ) -> Path:
        """A device under ``sys/devices/virtual/block`` (loop, zram, nbd, brd ``ram*``);
        ``backing_file`` makes it a bound loop device (``loop/backing_file``)."""
        directory = self.devices / "virtual" / "block" / name
        (directory / "queue").mkdir(parents=True)
        (directory / "dev").write_text(dev + "\n")
        (directory / "stat").write_text(stat)
        (directory / "queue" / "write_cache").write_text(write_cache + "\n")
        (directory / "queue" / "rotational").write_text("0\n")
        (directory / "slaves").mkdir()
        if backing_file is not None:
            (directory / "loop").mkdir()
            (directory / "loop" / "backing_file").write_text(backing_file + "\n")
        self._register(name, directory, dev, whole=True)
        return directory

    def mountinfo(self, *lines: str) -> None:
        self.write("proc/self/mountinfo", "".join(line + "\n" for line in lines))

    def sata_disk(self, name: str, dev: str, host: int, **kwargs) -> Path:
        parent = f"pci0000:00/0000:00:17.0/ata{host + 1}/host{host}/target{host}:0:0/{host}:0:0:0"
        return self.disk(
            name,
            parent,
            dev,
            queue={"rotational": "1", "write_cache": "write back", "fua": "0"},
            device={"model": "WDC WD40EFRX-68N", "vendor": "ATA     ", "rev": "0A82"},
            **kwargs,
        )

    def nvme_disk(self, name: str = "nvme0n1", dev: str = "259:0") -> Path:
        return self.disk(
            name,
            "pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0",
            dev,
            block_subdir=False,
            queue={"rotational": "0", "write_cache": "write back", "fua": "1"},
            device={
                "model": "Samsung SSD 980 PRO 1TB                 ",
                "serial": "S5GXNF0R123456A     ",
                "firmware_rev": "5B2QGXA7",
            },
        )


def line(
    dev: str,
    mount_point: str,
    fs_type: str,
    source: str,
    mount_id: int = 30,
    super_options: str = "rw",
    root: str = "/",
    options: str = "rw,relatime",
) -> str:
    return (
        f"{mount_id} 1 {dev} {root} {mount_point} {options} shared:1 - {fs_type} {source} "
        f"{super_options}"
    )


# --------------------------------------------------------------------------- mountinfo


def test_mountinfo_line_with_optional_fields_and_escaped_space() -> None:
    mount = _mountinfo.parse_line(
        r"36 35 98:0 /mnt1 /mnt/my\040disk rw,noatime shared:1 master:2 - ext4 /dev/sda1 rw,errors=continue"
    )
    assert mount == Mount(
        mount_point="/mnt/my disk",
        fs_type="ext4",
        source="/dev/sda1",
        options=("rw", "noatime"),
        super_options=("rw", "errors=continue"),
        device_number="98:0",
        root="/mnt1",
    )


def test_mountinfo_line_without_optional_fields_and_other_escapes() -> None:
    mount = _mountinfo.parse_line(
        r"27 1 254:0 / /a\011b\134c\012d rw,relatime - xfs /dev/my\040vg rw,attr2"
    )
    assert mount is not None
    assert mount.mount_point == "/a\tb\\c\nd"
    assert mount.source == "/dev/my vg"
    assert mount.options == ("rw", "relatime")
    assert mount.super_options == ("rw", "attr2")


@pytest.mark.parametrize(
    "text", ["", "garbage", "1 2 3:4 / /x rw shared:1 ext4 /dev/x rw", "1 2 3:4 / /x rw -"]
)
def test_mountinfo_malformed_lines_are_skipped(text: str) -> None:
    assert _mountinfo.parse_line(text) is None


def test_recorded_mountinfo_tmp_and_doubly_mounted_dev_shm() -> None:
    mounts = _mountinfo.parse_mountinfo((FIXTURES / "mountinfo_firecracker_vm.txt").read_text())
    assert len(mounts) == 20
    root = _mountinfo.find_mount("/tmp/x", mounts)
    assert root is not None and (root.mount_point, root.fs_type, root.device_number) == (
        "/",
        "ext4",
        "254:0",
    )
    assert "discard" in root.super_options
    shm = _mountinfo.find_mount("/dev/shm/f", mounts)
    # /dev/shm is mounted twice (0:23, then 0:27 on top): the later one wins.
    assert shm is not None and (shm.fs_type, shm.device_number) == ("tmpfs", "0:27")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/data/x", "/data"),
        ("/data", "/data"),
        ("/database/y", "/database"),
        ("/datax", "/"),
        ("/data/sub/z", "/data/sub"),
        ("/data/subway", "/data"),
        ("/", "/"),
    ],
)
def test_longest_prefix_is_component_aware(path: str, expected: str) -> None:
    mounts = [
        Mount(mount_point=mp, fs_type="ext4", source="/dev/sda1")
        for mp in ("/", "/database", "/data", "/data/sub")
    ]
    found = _mountinfo.find_mount(path, mounts)
    assert found is not None and found.mount_point == expected


def test_find_mount_without_mounts_is_none() -> None:
    assert _mountinfo.find_mount("/x", []) is None


# --------------------------------------------------------------------------- sysfs walks


def test_sata_partition_walks_to_disk(fake: FakeRoot) -> None:
    sda = fake.sata_disk("sda", "8:0", 0)
    fake.partition(sda, "sda1", "8:1")
    fake.mountinfo(line("8:1", "/", "ext4", "/dev/sda1"))
    target = _linux.storage_target("/srv/bench", str(fake.root))
    assert target.mount is not None and target.mount.fs_type == "ext4"
    assert target.chain == ("sda1", "sda")
    (disk,) = target.disks
    assert disk.name == "sda"
    assert disk.model == "WDC WD40EFRX-68N"
    assert disk.vendor == "ATA"
    assert disk.firmware == "0A82"
    assert disk.serial is None
    assert disk.rotational is True
    assert disk.write_cache == "write back"
    assert disk.fua is False
    assert disk.transport == "ata"
    assert disk.has_flush_counters is True


def test_nvme_partition_walks_to_namespace(fake: FakeRoot) -> None:
    nvme = fake.nvme_disk()
    fake.partition(nvme, "nvme0n1p2", "259:2", 2)
    fake.mountinfo(line("259:2", "/", "ext4", "/dev/nvme0n1p2"))
    target = _linux.storage_target("/home/me", str(fake.root))
    assert target.chain == ("nvme0n1p2", "nvme0n1")
    (disk,) = target.disks
    assert (disk.name, disk.transport) == ("nvme0n1", "nvme")
    assert disk.model == "Samsung SSD 980 PRO 1TB"
    assert disk.serial == "S5GXNF0R123456A"
    assert disk.firmware == "5B2QGXA7"
    assert (disk.rotational, disk.fua, disk.write_cache) == (False, True, "write back")


def test_luks_over_lvm_over_partition(fake: FakeRoot) -> None:
    nvme = fake.nvme_disk()
    part = fake.partition(nvme, "nvme0n1p3", "259:3", 3)
    lvm = fake.stacked("dm-0", "253:0", [part], dm_name="vg-root")
    fake.stacked("dm-1", "253:1", [lvm], dm_name="luks-root")
    fake.mountinfo(line("253:1", "/", "ext4", "/dev/mapper/luks-root"))
    target = _linux.storage_target("/", str(fake.root))
    assert target.chain == ("dm-1", "dm-0", "nvme0n1p3", "nvme0n1")
    assert [d.name for d in target.disks] == ["nvme0n1"]


def test_md_raid_reaches_both_leaf_disks(fake: FakeRoot) -> None:
    sda1 = fake.partition(fake.sata_disk("sda", "8:0", 0), "sda1", "8:1")
    sdb1 = fake.partition(fake.sata_disk("sdb", "8:16", 1), "sdb1", "8:17")
    fake.stacked("md0", "9:0", [sda1, sdb1])
    fake.mountinfo(
        line("8:1", "/boot", "ext4", "/dev/sda1", 20), line("9:0", "/", "xfs", "/dev/md0", 21)
    )
    target = _linux.storage_target("/var/lib/db", str(fake.root))
    assert target.mount is not None and target.mount.fs_type == "xfs"
    assert target.chain == ("md0", "sda1", "sda", "sdb1", "sdb")
    assert [d.name for d in target.disks] == ["sda", "sdb"]
    assert all(d.has_flush_counters for d in target.disks)


def test_major_zero_resolves_dev_source_via_class_block(fake: FakeRoot) -> None:
    nvme = fake.nvme_disk()
    fake.partition(nvme, "nvme0n1p2", "259:2", 2)
    fake.mountinfo(line("0:35", "/", "btrfs", "/dev/nvme0n1p2"))
    target = _linux.storage_target("/home", str(fake.root))
    assert target.chain == ("nvme0n1p2", "nvme0n1")


def test_major_zero_resolves_dev_mapper_source_by_dm_name(fake: FakeRoot) -> None:
    part = fake.partition(fake.nvme_disk(), "nvme0n1p3", "259:3", 3)
    fake.stacked("dm-0", "253:0", [part], dm_name="cryptroot")
    fake.mountinfo(line("0:40", "/", "btrfs", "/dev/mapper/cryptroot"))
    target = _linux.storage_target("/", str(fake.root))
    assert target.chain == ("dm-0", "nvme0n1p3", "nvme0n1")


@pytest.mark.parametrize(
    ("fs_type", "source"), [("tmpfs", "tmpfs"), ("overlay", "overlay"), ("nfs4", "server:/export")]
)
def test_targets_without_block_device_have_no_disks(
    fake: FakeRoot, fs_type: str, source: str
) -> None:
    fake.nvme_disk()
    fake.mountinfo(
        line("259:0", "/", "ext4", "/dev/nvme0n1", 20),
        line("0:50", "/scratch", fs_type, source, 21),
    )
    target = _linux.storage_target("/scratch/run", str(fake.root))
    assert target.mount is not None and target.mount.fs_type == fs_type
    assert (target.chain, target.disks) == ((), ())


def test_no_proc_no_sys_gives_empty_target(tmp_path: Path) -> None:
    target = _linux.storage_target("/anything", str(tmp_path))
    assert target.mount is None and target.chain == () and target.disks == ()


def test_virtio_disk_serial_on_disk_and_transport(fake: FakeRoot) -> None:
    fake.disk(
        "vda",
        "pci0000:00/0000:00:02.0/virtio1",
        "254:0",
        queue={"rotational": "1", "write_cache": "write back", "fua": "0"},
        device={"vendor": "0x1af4"},
        own={"serial": "1716630669075013"},
    )
    fake.mountinfo(line("254:0", "/", "ext4", "/dev/vda"))
    (disk,) = _linux.storage_target("/", str(fake.root)).disks
    assert (disk.name, disk.transport, disk.vendor, disk.serial) == (
        "vda",
        "virtio",
        "0x1af4",
        "1716630669075013",
    )
    assert disk.model is None


def test_usb_disk_transport_from_device_path(fake: FakeRoot) -> None:
    fake.disk("sdc", "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host4/target4:0:0/4:0:0:0", "8:32")
    assert _sysblock.block_device(str(fake.root), "sdc").transport == "usb"


def test_old_kernel_stat_has_no_flush_counters(fake: FakeRoot) -> None:
    fake.sata_disk("sda", "8:0", 0, stat=STAT_11)
    fake.mountinfo(line("8:0", "/", "ext4", "/dev/sda"))
    (disk,) = _linux.storage_target("/", str(fake.root)).disks
    assert disk.has_flush_counters is False
    # field 5 (write I/Os) predates the flush fields
    assert read_flush_counters(["sda"], root=str(fake.root)) == {"sda": (None, None, 6785)}


# --------------------------------------------------------------------------- counters


def test_read_flush_counters_fields_16_and_17(fake: FakeRoot) -> None:
    fake.sata_disk("sda", "8:0", 0)
    # (flushes: field 16, flush ms: field 17, write I/Os: field 5)
    assert read_flush_counters(["sda"], root=str(fake.root)) == {"sda": (606, 257, 3221)}


def test_read_flush_counters_never_raises(fake: FakeRoot) -> None:
    fake.sata_disk("sda", "8:0", 0, stat="1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 x 17\n")
    got = read_flush_counters(["sda", "missing", "../sda", ""], root=str(fake.root))
    none = (None, None, None)
    assert got == {"sda": none, "missing": none, "../sda": none, "": none}


def test_parse_stat_counts_fields() -> None:
    assert _counters.parse_stat(STAT_17) == (606, 257, 3221)
    assert _counters.parse_stat(STAT_17.strip() + " 0 0\n") == (606, 257, 3221)  # future fields
    assert _counters.parse_stat(STAT_11) == (None, None, 6785)
    assert _counters.parse_stat("1 2 3") == (None, None, None)
    assert _counters.parse_stat(None) == (None, None, None)


def test_flush_deltas() -> None:
    before = {"sda": (100, 40), "sdb": (None, None), "nvme0n1": (50, 5)}
    after = {"sda": (112, 46), "sdb": (None, None), "nvme0n1": (10, 1), "vda": (3, 1)}
    assert flush_deltas(before, after) == (
        FlushDelta("sda", 12, 6),
        FlushDelta("sdb", None, None),
        FlushDelta("nvme0n1", None, None),  # went down: device replaced or wrapped
        FlushDelta("vda", None, None),  # no "before" reading
    )
    assert flush_deltas({}, {}) == ()
    # triples carry the write I/Os (stat field 5); pairs leave them None
    assert flush_deltas({"vda": (1, 1, 10)}, {"vda": (3, 2, 17)}) == (FlushDelta("vda", 2, 1, 7),)


# --------------------------------------------------------------------------- virtualization

CPUINFO_GUEST = (
    "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu vme sse2 hypervisor lahf_lm\n\n"
)
CPUINFO_METAL = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme sse2 lahf_lm\n\n"
CPUINFO_ARM = "processor\t: 0\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd evtstrm aes\n\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [(CPUINFO_GUEST, True), (CPUINFO_METAL, False), (CPUINFO_ARM, None), (None, None)],
)
def test_hypervisor_flag(text: str | None, expected: bool | None) -> None:
    assert _virt.parse_hypervisor_flag(text) is expected


def _no_runner(argv: list[str]) -> None:
    raise AssertionError(f"must not run {argv} against a fake root")


@pytest.mark.parametrize(
    ("vendor", "product", "cpuinfo"),
    [
        ("QEMU", "Standard PC (Q35 + ICH9, 2009)", CPUINFO_GUEST),
        ("Amazon EC2", "m6i.large", CPUINFO_GUEST),
    ],
)
def test_dmi_and_flag_from_fake_root(
    fake: FakeRoot, vendor: str, product: str, cpuinfo: str
) -> None:
    fake.write("proc/cpuinfo", cpuinfo)
    fake.write("sys/class/dmi/id/sys_vendor", vendor + "\n")
    fake.write("sys/class/dmi/id/product_name", product + "\n")
    fake.write("proc/sys/kernel/osrelease", "6.8.0-1015-aws\n")
    virt = _virt.collect_virtualization(str(fake.root), environ={}, runner=_no_runner)
    assert (virt.dmi_vendor, virt.dmi_product) == (vendor, product)
    assert virt.hypervisor_flag is True
    assert virt.detect_virt is None  # not run against a recorded tree
    assert virt.kernel_hint == "cloud-kernel:aws"
    assert virt.virtualized is True


def test_bare_metal_fake_root_is_not_virtualized(fake: FakeRoot) -> None:
    fake.write("proc/cpuinfo", CPUINFO_METAL)
    fake.write("proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
    virt = _virt.collect_virtualization(str(fake.root), environ={}, runner=_no_runner)
    assert virt.hypervisor_flag is False
    assert (virt.dmi_vendor, virt.container, virt.kernel_hint) == (None, None, None)
    assert virt.virtualized is False


@pytest.mark.parametrize(
    ("files", "environ", "expected"),
    [
        # a /.dockerenv nothing else confirms is no container (an image can carry it)
        ({".dockerenv": ""}, {}, None),
        ({".dockerenv": "", "proc/1/cgroup": "3:cpu:/docker/0123abcd\n"}, {}, "docker"),
        ({"run/.containerenv": 'engine="podman-4.9"\n'}, {}, "podman"),
        ({"proc/1/cgroup": "12:pids:/kubepods/besteffort/pod1/abc\n"}, {}, "kubepods"),
        ({"proc/1/cgroup": "3:cpu:/docker/0123abcd\n"}, {}, "docker"),
        ({"proc/1/cgroup": "0::/init.scope\n"}, {"container": "systemd-nspawn"}, "systemd-nspawn"),
        ({"proc/1/cgroup": "0::/\n"}, {}, None),
    ],
)
def test_container_hints(
    fake: FakeRoot, files: dict[str, str], environ: dict[str, str], expected: str | None
) -> None:
    for relative, text in files.items():
        fake.write(relative, text)
    assert _virt.container_hint(str(fake.root), environ) == expected


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ("5.15.153.1-microsoft-standard-WSL2", "wsl2"),
        ("4.19.104-microsoft-standard", "wsl2"),
        ("4.4.0-19041-Microsoft", "wsl1"),
        ("6.8.0-1015-aws", "cloud-kernel:aws"),
        ("5.15.0-1057-azure", "cloud-kernel:azure"),
        ("6.5.0-1020-gcp", "cloud-kernel:gcp"),
        ("6.1.102-111.182.amzn2023.x86_64", "cloud-kernel:amazon-linux"),
        ("5.10.220-209.869.amzn2.x86_64", "cloud-kernel:amazon-linux"),
        ("6.8.0-45-generic", None),
        ("6.18.44-fc-v782", None),
        ("", None),
    ],
)
def test_kernel_hint(release: str, expected: str | None) -> None:
    assert _virt.kernel_hint(release) == expected


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        ((0, b"kvm\n"), "kvm"),
        ((0, b"amazon\n"), "amazon"),
        ((1, b"none\n"), "none"),
        ((1, b""), None),
        ((1, b"Failed to check for virtualization\n"), None),
        (None, None),
    ],
)
def test_parse_detect_virt(result: tuple[int, bytes] | None, expected: str | None) -> None:
    assert _virt.parse_detect_virt(result) == expected


def test_live_root_runs_detect_virt_vm(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def runner(argv: list[str]) -> tuple[int, bytes]:
        calls.append(argv)
        return (0, b"kvm\n") if argv[1] == "--vm" else (1, b"none\n")

    monkeypatch.setattr(_virt.shutil, "which", lambda name: "/usr/bin/" + name)
    virt = _virt.collect_virtualization("/", environ={}, runner=runner)
    assert virt.detect_virt == "kvm"
    assert ["systemd-detect-virt", "--vm"] in calls


def test_missing_detect_virt_binary_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_virt.shutil, "which", lambda name: None)
    virt = _virt.collect_virtualization("/", environ={}, runner=_no_runner)
    assert virt.detect_virt is None


# --------------------------------------------------------------------------- sqlite library

MAPS = """\
55d0c0a00000-55d0c0a2e000 r--p 00000000 fe:00 1234 /usr/bin/python3.11
7f1c2c000000-7f1c2c021000 rw-p 00000000 00:00 0
7f1c2d2a0000-7f1c2d2b5000 r--p 00000000 fe:00 5678 /usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6
7f1c2d500000-7f1c2d508000 r--p 00000000 fe:00 9012 /opt/py/lib-dynload/_sqlite3.cpython-311-x86_64-linux-gnu.so
7ffd1e9e0000-7ffd1ea01000 rw-p 00000000 00:00 0 [stack]
"""


def test_maps_names_shared_libsqlite3() -> None:
    assert (
        _linux.parse_maps_for_sqlite(MAPS, "/ext.so")
        == "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6"
    )


def test_maps_deleted_and_spaced_paths() -> None:
    text = "7f00-7f10 r--p 00000000 fe:00 1 /opt/my libs/libsqlite3.so.0 (deleted)\n"
    assert _linux.parse_maps_for_sqlite(text) == "/opt/my libs/libsqlite3.so.0"


def test_maps_without_libsqlite3_means_static_extension() -> None:
    text = "\n".join(line for line in MAPS.splitlines() if "libsqlite3" not in line)
    assert _linux.parse_maps_for_sqlite(text, "/ext/_sqlite3.so") == "/ext/_sqlite3.so"


# --------------------------------------------------------------------------- façade


def test_a_hidden_hypervisor_still_shows_on_a_virtual_disk(fake: FakeRoot) -> None:
    """A guest whose CPUID flag and DMI strings are hidden (the proving ground's guest,
    lab/guest.py) still has a virtio bus and QEMU's model string on its disk: recorded as
    ``virtual_disk_hint``, so the flush is known to go to a hypervisor; a SATA disk on bare
    metal records none, and where the CPU flag already says guest nothing is added."""
    fake.disk(
        "sda",
        "pci0000:00/0000:00:05.0/virtio2/host0/target0:0:0/0:0:0:0",
        "8:0",
        queue={"rotational": "1", "write_cache": "write back", "fua": "0"},
        device={"model": "QEMU HARDDISK   ", "vendor": "QEMU    "},
    )
    fake.sata_disk("sdb", "8:16", 1)
    fake.mountinfo(
        line("8:0", "/srv", "ext4", "/dev/sda"), line("8:16", "/data", "ext4", "/dev/sdb", 31)
    )
    fake.write("proc/cpuinfo", CPUINFO_METAL)
    hidden = _linux.collect("/srv", str(fake.root), environ={}, runner=_no_runner)
    assert hidden.virtualization.hypervisor_flag is False
    assert (
        hidden.virtualization.virtual_disk_hint == "sda model 'QEMU QEMU HARDDISK' and bus virtio"
    )
    assert hidden.virtualization.virtualized is True
    # the judge then holds the flush to be the hypervisor's, not a spinning disk's: a lying
    # drive there answered fdatasync in 5 ms on a loaded machine and was called honest_flush
    guest = dataclasses.replace(
        factories.host(disks=hidden.target.disks), virtualization=hidden.virtualization
    )
    v = engine.judge(guest, [factories.flush("fdatasync", 5_000_000, flushes=1000, syncs=1000)])
    assert (v.path_verdict, v.decided_by, v.strength) == (
        "unverifiable",
        "virtualized-storage",
        "inferred",
    )
    metal = _linux.collect("/data", str(fake.root), environ={}, runner=_no_runner)
    assert metal.virtualization.virtual_disk_hint is None
    assert metal.virtualization.virtualized is False
    fake.write("proc/cpuinfo", CPUINFO_GUEST)
    flagged = _linux.collect("/srv", str(fake.root), environ={}, runner=_no_runner)
    assert flagged.virtualization.virtual_disk_hint is None
    assert flagged.virtualization.virtualized is True


def test_collect_on_fake_root(fake: FakeRoot) -> None:
    nvme = fake.nvme_disk()
    fake.partition(nvme, "nvme0n1p2", "259:2", 2)
    fake.mountinfo(line("259:2", "/", "ext4", "/dev/nvme0n1p2"))
    fake.write("proc/cpuinfo", CPUINFO_GUEST)
    fake.write("proc/self/maps", MAPS)
    facts = _linux.collect("/data", str(fake.root), environ={}, runner=_no_runner)
    assert facts.target.chain == ("nvme0n1p2", "nvme0n1")
    assert facts.virtualization.hypervisor_flag is True
    assert facts.sqlite_library == "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6"


@pytest.mark.parametrize("platform", ["win32", "cygwin", "sunos5", "darwin"])
def test_collect_host_other_platforms_do_not_crash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, platform: str
) -> None:
    # Only the façade's view of the platform changes; on Linux "darwin" finds no diskutil.
    monkeypatch.setattr(host_pkg, "sys", SimpleNamespace(platform=platform))
    host = collect_host(str(tmp_path))
    assert isinstance(host, Host)
    assert host.target.path == os.path.realpath(tmp_path)
    assert host.target.chain == () and host.target.disks == ()
    assert host.virtualization.hypervisor_flag is None


def test_collect_host_common_facts(tmp_path: Path) -> None:
    host = collect_host(str(tmp_path))
    assert host.sqlite_version == sqlite3.sqlite_version
    assert any(opt.startswith("THREADSAFE=") for opt in host.sqlite_compile_options)
    assert host.python_version == ".".join(map(str, sys.version_info[:3]))
    assert host.cpu_count_logical is not None and host.cpu_count_logical >= 1
    assert host.memory_total_bytes is not None and host.memory_total_bytes > 0
    assert host.ld_preload == os.environ.get("LD_PRELOAD")


# --------------------------------------------------------------------------- live (this machine)

needs_vda = pytest.mark.skipif(
    not IS_LINUX or not os.path.exists("/sys/block/vda"),
    reason="needs Linux with a /sys/block/vda disk",
)


@needs_vda
def test_live_target_on_ext4_vda(tmp_path: Path) -> None:
    host = collect_host(str(tmp_path))
    assert host.target.mount is not None and host.target.mount.fs_type == "ext4"
    vda = [d for d in host.target.disks if d.name == "vda"]
    assert vda and vda[0].has_flush_counters is True
    assert host.target.chain[-1] == "vda"
    assert host.sqlite_library and os.path.exists(host.sqlite_library)


@pytest.mark.skipif(
    not IS_LINUX or not os.path.isdir("/dev/shm"), reason="needs Linux with /dev/shm"
)
def test_live_dev_shm_is_tmpfs_without_disks() -> None:
    host = collect_host("/dev/shm")
    assert host.target.mount is not None and host.target.mount.fs_type == "tmpfs"
    assert host.target.disks == () and host.target.chain == ()


@needs_vda
def test_live_flush_counter_rises_after_fdatasync(tmp_path: Path) -> None:
    if "vda" not in [d.name for d in _linux.storage_target(str(tmp_path)).disks]:
        pytest.skip("tmp_path is not on vda")
    before = read_flush_counters(["vda"])["vda"]
    if before[0] is None:
        pytest.skip("kernel without flush counters")
    fd = os.open(tmp_path / "probe", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"x" * 4096)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    after = read_flush_counters(["vda"])["vda"]
    (delta,) = flush_deltas({"vda": before}, {"vda": after})
    assert delta.flushes is not None and delta.flushes >= 1


#: /proc/cpuinfo as x86 Linux prints it, and as an arm64 kernel does (no model name line).
CPUINFO_X86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7R13 Processor\nflags\t\t: fpu hypervisor\n"
CPUINFO_ARM64 = (
    "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [(CPUINFO_X86, "AMD EPYC 7R13 Processor"), (CPUINFO_ARM64, None), ("", None), (None, None)],
)
def test_proc_model_name(text: str | None, expected: str | None) -> None:
    from fsyncbench.host._common import proc_model_name

    assert proc_model_name(text) == expected


def test_cpu_brand_reads_proc_cpuinfo_before_py_cpuinfo(tmp_path: Path, monkeypatch) -> None:
    """The brand comes from the file's model name line; without one, from py-cpuinfo."""
    import cpuinfo

    from fsyncbench.host._common import cpu_brand

    calls = []
    monkeypatch.setattr(cpuinfo, "get_cpu_info", lambda: calls.append(1) or {"brand_raw": "X"})
    (tmp_path / "x86").write_text(CPUINFO_X86)
    (tmp_path / "arm").write_text(CPUINFO_ARM64)
    assert cpu_brand.__wrapped__(str(tmp_path / "x86")) == "AMD EPYC 7R13 Processor"
    assert calls == []
    assert cpu_brand.__wrapped__(str(tmp_path / "arm")) == "X"
    assert cpu_brand.__wrapped__(str(tmp_path / "absent")) == "X"  # macOS, Windows
    assert len(calls) == 2


def test_a_command_that_outlives_its_timeout_is_given_up():
    """run_command's guard (host tools such as storcli and systemd-detect-virt can hang on a
    sick controller or bus): a child still running at its timeout is not waited for."""
    from fsyncbench.host import _common

    slow = [sys.executable, "-c", "import time; time.sleep(30); print('done')"]
    assert _common.run_command(slow, 0.3) is None
    done = _common.run_command([sys.executable, "-c", "print('done')"], 30)
    assert done is not None and (done[0], done[1].strip()) == (0, b"done")
