"""Protected write-back caches (issue 32): the RAID controller under a disk found in recorded
/sys trees (fsyncbench.host._raid), its cache and backup power read from recorded vendor-tool
outputs (tests/fixtures/raid/, sources in its README), and the verdicts they lead to
(fsyncbench.judge.cache_rules); then the host facts found on the way: floor advice per
transport and layer, a container's root overlay, and /.dockerenv alone.

Recorded facts only: nothing here runs a vendor tool or measures a disk."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import this_platform
from factories import commit, flush, write
from test_host_linux import FakeRoot, line

from fsyncbench.host import _linux, _raid, _raidcli, _virt
from fsyncbench.judge import engine
from fsyncbench.model import (
    HONEST_FLUSH,
    INFERRED,
    MEASURED,
    PROTECTION_FAILED,
    PROTECTION_NOT_READY,
    PROTECTION_OK,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    Host,
    StorageTarget,
    Virtualization,
)
from fsyncbench.report import host_text

#: Linux's host collector over recorded /proc and /sys trees (this_platform.linux_trees)
pytestmark = this_platform.linux_trees

RAID = Path(__file__).parent / "fixtures" / "raid"
BARE = Virtualization(hypervisor_flag=False)
#: ~0.1 ms per commit on a volume of spinning disks (issue 32's case), its flush alike.
FAST_NS = 100_000


def fixture(name: str) -> str:
    return (RAID / name).read_text()


def scsi_volume(
    fake: FakeRoot,
    name: str,
    dev: str,
    host: int,
    *,
    driver: str | None,
    vendor: str,
    model: str,
    target: str = "2:0",
    rotational: str = "1",
    write_cache: str = "write through",
) -> Path:
    """A SCSI disk under ``hostN`` of a PCI controller, laid out as the kernel does
    (``.../hostN/targetN:C:T/N:C:T:L/block/sdX``), with ``proc_name`` naming the host's
    driver (None: no scsi_host entry, as in a partial recording)."""
    channel, tgt = target.split(":")
    parent = (
        f"pci0000:00/0000:00:02.0/0000:03:00.0/host{host}/target{host}:{channel}:{tgt}/"
        f"{host}:{channel}:{tgt}:0"
    )
    directory = fake.disk(
        name,
        parent,
        dev,
        queue={"rotational": rotational, "write_cache": write_cache, "fua": "0"},
        device={"vendor": vendor.ljust(8), "model": model.ljust(16), "rev": "4.27"},
    )
    if driver is not None:
        fake.write(f"sys/class/scsi_host/host{host}/proc_name", driver + "\n")
    return directory


def tools(
    outputs: dict[str, str], on_path: tuple[str, ...], calls: list[str] | None = None
) -> _raid.ToolAccess:
    """A ToolAccess whose PATH holds ``on_path`` and whose runs answer from ``outputs``
    (the argv joined by spaces -> recorded stdout; missing -> the run failed); each run's
    argv is appended to ``calls``."""
    calls = [] if calls is None else calls

    def run(argv: list[str]) -> tuple[int, bytes] | None:
        calls.append(" ".join(argv))
        text = outputs.get(" ".join(argv))
        return None if text is None else (0, text.encode())

    return _raid.ToolAccess(lambda t: f"/usr/sbin/{t}" if t in on_path else None, run)


def storage(fake: FakeRoot, access: _raid.ToolAccess | None = None) -> StorageTarget:
    fake.mountinfo(line("8:0", "/", "ext4", "/dev/sda", 20))
    return _linux.storage_target("/srv/db", str(fake.root), access)


def host_of(target: StorageTarget, declared: tuple[str, ...] = ()) -> Host:
    return Host(
        hostname="raid-host",
        os_name="Linux",
        target=dataclasses.replace(target, declared=declared),
        virtualization=BARE,
    )


def fast_results(p50_ns: float = FAST_NS):
    return [write(2_000), flush("fdatasync", p50_ns), commit("WAL", "FULL", p50_ns)]


def finding(v, code):
    return next(f for f in v.findings if f.code == code)


STORCLI = {
    "storcli64 /call show all": fixture("storcli_c0_show_cisco12g_cachevault_optimal.txt"),
    "storcli64 /call/vall show all": fixture("storcli_c0_vall_show_all_cisco12g.txt"),
}


# --------------------------------------------------------------------------- /sys


@pytest.mark.parametrize(
    ("driver", "vendor", "model", "family_word", "settles"),
    [
        ("megaraid_sas", "AVAGO", "MR9361-8i", "MegaRAID", "storcli64 /c0 show all"),
        ("megaraid_sas", "DELL", "PERC H730P Mini", "MegaRAID", "perccli64 /c0 show all"),
        ("hpsa", "HP", "LOGICAL VOLUME", "Smart Array", "ssacli ctrl all show config detail"),
        ("smartpqi", "HPE", "LOGICAL VOLUME", "Smart Array", "ssacli ctrl all show config detail"),
        ("aacraid", "ServeRA", "somang", "Adaptec", "arcconf GETCONFIG 1 AL"),
        ("arcmsr", "Areca", "ARC-1882-VOL#000", "Areca", "cli64 hw info"),
    ],
)
def test_a_volume_of_each_raid_family_is_recorded_with_its_controller(
    fake, driver, vendor, model, family_word, settles
):
    scsi_volume(fake, "sda", "8:0", 0, driver=driver, vendor=vendor, model=model)
    t = storage(fake)
    (disk,) = t.disks
    c = disk.controller
    assert c is not None
    assert (c.driver, c.host, c.has_cache, c.settles) == (driver, "host0", True, settles)
    assert family_word in c.family
    assert c.write_cache is None and c.protection is None  # a recorded tree: no tool run
    assert t.layers[-1].device == disk  # recorded in the storage stack itself


@pytest.mark.parametrize(
    ("vendor", "model", "driver"),
    [
        ("Areca", "ARC-1882-VOL#000", "arcmsr"),
        ("LSI", "MegaRAID SAS RMB", "megaraid_sas"),
        ("DELL", "PERC H710", "megaraid_sas"),
        ("HP", "LOGICAL VOLUME", "hpsa"),
    ],
)
def test_without_proc_name_the_scsi_vendor_and_model_name_the_family(fake, vendor, model, driver):
    scsi_volume(fake, "sda", "8:0", 0, driver=None, vendor=vendor, model=model)
    c = storage(fake).disks[0].controller
    assert c is not None and c.driver == driver and c.from_model_string
    assert "inferred from the volume's vendor/model" in c.note


def test_a_sas_hba_has_no_cache_of_its_own_and_an_ahci_disk_no_controller(fake):
    scsi_volume(fake, "sda", "8:0", 0, driver="mpt3sas", vendor="ATA", model="ST4000NM0035")
    scsi_volume(fake, "sdb", "8:16", 1, driver="ahci", vendor="ATA", model="WDC WD40EFRX-68N")
    calls: list[str] = []
    t = storage(fake, tools({}, on_path=("storcli64",), calls=calls))
    assert t.disks[0].controller is not None and t.disks[0].controller.has_cache is False
    assert calls == []  # nothing to read on an HBA
    from fsyncbench.host import _sysblock

    assert _sysblock.block_device(str(fake.root), "sdb").controller is None


def test_storcli_is_run_once_and_matched_to_the_volume_by_its_os_drive_name(fake):
    scsi_volume(fake, "sda", "8:0", 0, driver="megaraid_sas", vendor="Cisco", model="UCSC-RAID12G")
    calls: list[str] = []
    c = storage(fake, tools(STORCLI, on_path=("storcli64",), calls=calls)).disks[0].controller
    assert c is not None
    # /dev/sda is VD0 of the recording: NRWTD, Disk's Default, CacheVault CVPM05 Optimal
    assert (c.write_cache, c.protection, c.drive_cache) == ("write through", PROTECTION_OK, None)
    assert c.protection_detail == "CacheVault CVPM05 Optimal"
    assert c.read_by == "storcli64 /call show all; storcli64 /call/vall show all"
    assert calls == ["storcli64 /call show all", "storcli64 /call/vall show all"]


@pytest.mark.parametrize(
    ("on_path", "outputs", "note"),
    [
        ((), {}, "not read: none of storcli64, storcli, perccli64, perccli is on PATH"),
        (("storcli64",), {}, "storcli64 /call show all failed or took over 15 s"),
    ],
)
def test_a_controller_not_read_says_why(fake, on_path, outputs, note):
    scsi_volume(fake, "sda", "8:0", 0, driver="megaraid_sas", vendor="AVAGO", model="MR9361-8i")
    c = storage(fake, tools(outputs, on_path)).disks[0].controller
    assert c is not None and c.protection is None and c.write_cache is None
    assert note in c.note


def test_a_tool_whose_output_is_not_parsed_is_named_not_guessed(fake):
    scsi_volume(fake, "sda", "8:0", 0, driver="arcmsr", vendor="Areca", model="ARC-1882-VOL#000")
    c = storage(fake, tools({}, on_path=("cli64",))).disks[0].controller
    assert c is not None and c.protection is None
    assert "cli64's output is not parsed here" in c.note


# --------------------------------------------------------------------------- tool outputs


def test_storcli_recording_every_volume():
    readings = _raidcli.parse_storcli(
        fixture("storcli_c0_show_cisco12g_cachevault_optimal.txt"),
        fixture("storcli_c0_vall_show_all_cisco12g.txt"),
    )
    assert [(r.disk, r.write_cache, r.drive_cache) for r in readings] == [
        ("sda", "write through", None),
        ("sdb", "write back", "enabled"),
        ("sdc", "write back", "enabled"),
        ("sdd", "write back", "enabled"),
        ("sde", "write back", "enabled"),
    ]
    assert {r.protection for r in readings} == {PROTECTION_OK}


def test_storcli_show_all_alone_names_no_disk_and_a_failed_cachevault_is_failed():
    readings = _raidcli.parse_storcli(fixture("storcli_c0_show_cisco12g_cachevault_failed.txt"))
    assert [r.write_cache for r in readings] == ["write through"] + ["write back"] * 4
    assert {(r.disk, r.protection, r.detail) for r in readings} == {
        (None, PROTECTION_FAILED, "CacheVault CVPM05 Failed")
    }


def test_storcli_bbu_absent_in_hwcfg_is_no_backup_power():
    """Hand-written in the layout of the recordings' ``key = value`` sections (HwCfg of
    ``show all``); no public recording of an absent BBU was found to copy."""
    text = "Controller = 0\nStatus = Success\n\nHwCfg :\n=====\nBBU = Absent\nNVRAM = Present\n"
    assert _raidcli.storcli_protection(text) == {
        0: (PROTECTION_FAILED, "no battery or CacheVault (BBU = Absent)")
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "ssacli_ctrl_all_show_config_detail_p822_capacitors_ok.txt",
            ("sda", "write back", PROTECTION_OK, "disabled"),
        ),
        (
            "ssacli_ctrl_all_show_config_detail_p822_capacitor_failed_nbwc.txt",
            ("sda", "write back", PROTECTION_FAILED, "disabled"),
        ),
        (
            "ssacli_ctrl_all_show_config_detail_p822_cache_disabled.txt",
            ("sda", "write through", PROTECTION_FAILED, "disabled"),
        ),
    ],
)
def test_ssacli_recordings(name, expected):
    (reading,) = _raidcli.parse_ssacli(fixture(name))
    assert (reading.disk, reading.write_cache, reading.protection, reading.drive_cache) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "arcconf_getconfig_1_al_serveraid8k_battery_okay.txt",
            [(None, "write back", PROTECTION_OK, "enabled")],
        ),
        (
            "arcconf_getconfig_1_al_serveraid8k_drive_caches_off.txt",
            [(None, "write back", PROTECTION_OK, "disabled")],
        ),
        (
            "arcconf_getconfig_1_al_serveraid8k_battery_not_installed.txt",
            [(None, "write back", PROTECTION_FAILED, "disabled")],
        ),
        (
            "arcconf_getconfig_1_ld_smartraid3204_caching_disabled.txt",
            [("sdb", "write through", None, None), ("sdc", "write through", None, None)],
        ),
    ],
)
def test_arcconf_recordings(name, expected):
    got = [
        (r.disk, r.write_cache, r.protection, r.drive_cache)
        for r in _raidcli.parse_arcconf(fixture(name))
    ]
    assert got == expected


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("Optimal", PROTECTION_OK),
        ("OK", PROTECTION_OK),
        ("Okay", PROTECTION_OK),
        ("Failed (Replace Batteries)", PROTECTION_FAILED),
        ("Not Installed", PROTECTION_FAILED),
        ("Recharging", PROTECTION_NOT_READY),
        ("Learning", PROTECTION_NOT_READY),
        ("Degraded", PROTECTION_NOT_READY),
    ],
)
def test_backup_power_words(state, expected):
    assert _raidcli.protection_of(state) == expected


# --------------------------------------------------------------------------- verdicts


def test_issue_32_spinning_volume_fast_commits_battery_unknown_is_unverifiable_with_the_command(
    fake,
):
    """The done-when case: a recorded controller (sysfs), spinning disks, ~0.1 ms commits,
    backup power not read -> unverifiable, naming the command that settles it; before this
    rule the floor called it volatile_cache."""
    scsi_volume(fake, "sda", "8:0", 0, driver="megaraid_sas", vendor="AVAGO", model="MR9361-8i")
    h = host_of(storage(fake, tools({}, on_path=())))
    v = engine.judge(h, fast_results())
    assert (v.path_verdict, v.decided_by, v.strength) == (
        UNVERIFIABLE,
        "controller-cache-unverified",
        MEASURED,
    )
    f = finding(v, "controller-cache-unverified")
    assert "storcli64 /c0 show all" in f.advice
    assert "--assume protected-cache" in f.advice
    assert "none of storcli64" in f.message  # why it was not read
    floor = finding(v, "flush-below-device-floor")  # the weaker signal, shown, disagreeing
    assert floor.stance == "disagrees"
    commit_verdict = next(r for r in v.results if r.subject == "wal/full")
    assert commit_verdict.path_verdict == UNVERIFIABLE


def test_protection_read_from_storcli_is_honest_flush_inferred(fake):
    scsi_volume(fake, "sdb", "8:16", 0, driver="megaraid_sas", vendor="Cisco", model="UCSC")
    outputs = {
        **STORCLI,
        "storcli64 /call/vall show all": fixture(
            "storcli_c0_vall_show_all_cisco12g_pdcache_disabled.txt"
        ),
    }
    fake.mountinfo(line("8:16", "/", "ext4", "/dev/sdb", 20))
    target = _linux.storage_target("/srv", str(fake.root), tools(outputs, ("storcli64",)))
    v = engine.judge(host_of(target), fast_results())
    assert (v.path_verdict, v.decided_by, v.strength) == (
        HONEST_FLUSH,
        "controller-cache-protected",
        INFERRED,
    )
    assert "CacheVault CVPM05 Optimal" in finding(v, "controller-cache-protected").message
    # the floor agrees: behind a protected cache the disk's class floor is 15 us
    assert finding(v, "flush-latency-plausible").stance == "agrees"


@pytest.mark.parametrize(
    ("name", "tool"),
    [
        ("ssacli_ctrl_all_show_config_detail_p822_capacitors_ok.txt", "ssacli"),
        ("arcconf_getconfig_1_al_serveraid8k_drive_caches_off.txt", "arcconf"),
    ],
)
def test_protection_read_from_ssacli_and_arcconf_is_honest_flush_inferred(fake, name, tool):
    driver = "hpsa" if tool == "ssacli" else "aacraid"
    scsi_volume(fake, "sda", "8:0", 0, driver=driver, vendor="HP", model="LOGICAL VOLUME")
    command = "ssacli ctrl all show config detail" if tool == "ssacli" else "arcconf GETCONFIG 1 AL"
    v = engine.judge(
        host_of(storage(fake, tools({command: fixture(name)}, (tool,)))), fast_results()
    )
    assert (v.path_verdict, v.decided_by, v.strength) == (
        HONEST_FLUSH,
        "controller-cache-protected",
        INFERRED,
    )


@pytest.mark.parametrize("word", ["protected-cache", "plp"])
def test_declared_protection_is_honest_flush_inferred_and_shown(fake, word):
    scsi_volume(fake, "sda", "8:0", 0, driver="megaraid_sas", vendor="AVAGO", model="MR9361-8i")
    h = host_of(storage(fake, tools({}, on_path=())), declared=(word,))
    v = engine.judge(h, fast_results())
    assert (v.path_verdict, v.decided_by, v.strength) == (
        HONEST_FLUSH,
        "controller-cache-declared",
        INFERRED,
    )
    assert f"--assume {word}" in finding(v, "controller-cache-declared").message
    lines = dict(host_text.host_lines(h))
    assert lines["user-declared"] == f"{word} (user-declared, not verified)"


@pytest.mark.parametrize(
    ("driver", "command", "name", "tool"),
    [
        (
            "megaraid_sas",
            "storcli64 /call show all",
            "storcli_c0_show_cisco12g_cachevault_failed.txt",
            "storcli64",
        ),
        (
            "hpsa",
            "ssacli ctrl all show config detail",
            "ssacli_ctrl_all_show_config_detail_p822_capacitor_failed_nbwc.txt",
            "ssacli",
        ),
        (
            "aacraid",
            "arcconf GETCONFIG 1 AL",
            "arcconf_getconfig_1_al_serveraid8k_battery_not_installed.txt",
            "arcconf",
        ),
    ],
)
def test_write_back_with_failed_or_absent_backup_power_is_volatile_cache_measured(
    fake, driver, command, name, tool
):
    scsi_volume(fake, "sdb", "8:16", 0, driver=driver, vendor="X", model="Y")
    outputs = {command: fixture(name)}
    if tool == "storcli64":
        outputs["storcli64 /call/vall show all"] = fixture(
            "storcli_c0_vall_show_all_cisco12g_pdcache_disabled.txt"
        )
    fake.mountinfo(line("8:16", "/", "ext4", "/dev/sdb", 20))
    target = _linux.storage_target("/srv", str(fake.root), tools(outputs, (tool,)))
    h = host_of(target, declared=("protected-cache",))  # what is read beats what is declared
    for p50 in (FAST_NS, 5_000_000):  # whatever the timing
        v = engine.judge(h, fast_results(p50))
        assert (v.path_verdict, v.decided_by, v.strength) == (
            VOLATILE_CACHE,
            "controller-cache-unprotected",
            MEASURED,
        )


def test_drive_caches_enabled_behind_a_protected_controller_are_volatile(fake):
    scsi_volume(fake, "sdb", "8:16", 0, driver="megaraid_sas", vendor="Cisco", model="UCSC")
    fake.mountinfo(line("8:16", "/", "ext4", "/dev/sdb", 20))
    target = _linux.storage_target("/srv", str(fake.root), tools(STORCLI, ("storcli64",)))
    v = engine.judge(host_of(target), fast_results())
    assert (v.path_verdict, v.decided_by, v.strength) == (
        VOLATILE_CACHE,
        "controller-drive-caches-enabled",
        MEASURED,
    )


@pytest.mark.parametrize(
    ("driver", "command", "name", "tool", "disk"),
    [
        (
            "megaraid_sas",
            "storcli64 /call show all",
            "storcli_c0_show_cisco12g_cachevault_optimal.txt",
            "storcli64",
            "sda",
        ),
        (
            "hpsa",
            "ssacli ctrl all show config detail",
            "ssacli_ctrl_all_show_config_detail_p822_cache_disabled.txt",
            "ssacli",
            "sda",
        ),
    ],
)
def test_a_volume_read_as_writing_through_leaves_a_fast_flush_to_the_floor(
    fake, driver, command, name, tool, disk
):
    scsi_volume(fake, disk, "8:0", 0, driver=driver, vendor="X", model="Y")
    outputs = {command: fixture(name), **({} if tool != "storcli64" else STORCLI)}
    v = engine.judge(host_of(storage(fake, tools(outputs, (tool,)))), fast_results())
    assert (v.path_verdict, v.decided_by) == (VOLATILE_CACHE, "flush-below-device-floor")
    assert "controller-cache-unverified" not in {f.code for f in v.findings}


def test_the_report_names_the_controller_and_what_was_read(fake):
    scsi_volume(fake, "sda", "8:0", 0, driver="megaraid_sas", vendor="Cisco", model="UCSC")
    h = host_of(storage(fake, tools(STORCLI, ("storcli64",))))
    text = dict(host_text.host_lines(h))["disk sda"]
    assert "volume of Broadcom/LSI MegaRAID" in text
    assert "controller cache write through" in text
    assert "backup power ok (CacheVault CVPM05 Optimal)" in text
    assert "read with storcli64 /call show all" in text


# --------------------------------------------------------------------------- host facts (4)


def _floor_advice(h: Host) -> str:
    v = engine.judge(h, [write(2_000), flush("fdatasync", FAST_NS)])
    return finding(v, "flush-below-device-floor").advice


@pytest.mark.parametrize(
    ("kind", "must", "must_not"),
    [
        ("raid", ["storcli64 /c0 show all", "--assume protected-cache"], ["nvme", "hdparm"]),
        ("sata", ["hdparm -W /dev/sda", "smartctl -g wcache /dev/sda"], ["nvme", "sdparm"]),
        ("sas", ["sdparm --get=WCE /dev/sda"], ["nvme", "hdparm"]),
        (
            "nvme",
            ["nvme id-ctrl /dev/nvme0 -H", "nvme get-feature /dev/nvme0 -f 6 -H", "--assume plp"],
            ["sdparm", "hdparm"],
        ),
    ],
)
def test_floor_advice_names_the_check_of_the_disks_transport_and_layer(fake, kind, must, must_not):
    """Issue 32, 4(a): the advice named ``nvme id-ctrl`` even for a SCSI volume of a RAID
    controller."""
    if kind == "raid":
        scsi_volume(fake, "sda", "8:0", 0, driver="megaraid_sas", vendor="AVAGO", model="MR9361")
        target = storage(fake, tools({}, on_path=()))
    elif kind == "sata":
        fake.sata_disk("sda", "8:0", 0)
        target = storage(fake)
    elif kind == "sas":
        scsi_volume(fake, "sda", "8:0", 0, driver="mpt3sas", vendor="SEAGATE", model="ST600MM0208")
        target = storage(fake)
    else:
        fake.nvme_disk()
        fake.mountinfo(line("259:0", "/", "ext4", "/dev/nvme0n1", 20))
        target = _linux.storage_target("/srv", str(fake.root))
    advice = _floor_advice(host_of(target))
    for text in must:
        assert text in advice
    for text in must_not:
        assert text not in advice


def test_a_container_root_overlay_with_a_host_upper_dir_is_named_once(fake):
    """Issue 32, 4(b): Docker's root overlay names /var/lib/docker/overlay2/<id>/diff, which
    inside the container resolves to the overlay itself; it was walked 17 times."""
    fake.mountinfo(
        line(
            "0:52",
            "/",
            "overlay",
            "overlay",
            600,
            super_options="rw,lowerdir=/var/lib/docker/overlay2/l/ABC:/var/lib/docker/overlay2/l/DEF,"
            "upperdir=/var/lib/docker/overlay2/9f3c/diff,workdir=/var/lib/docker/overlay2/9f3c/work",
        ),
        line("0:60", "/proc", "proc", "proc", 601),
    )
    t = _linux.storage_target("/app/data", str(fake.root))
    assert [(layer.kind, layer.name) for layer in t.layers] == [("overlay", "/")]
    note = t.layers[0].note
    assert "/var/lib/docker/overlay2/9f3c/diff" in note and "cannot be followed" in note
    assert "more than 16 layers deep" not in note
    v = engine.judge(host_of(t), fast_results())
    assert v.decided_by == "stack-not-followed"


def test_dockerenv_alone_is_no_container_and_says_so(fake):
    """Issue 32, 4(c): this project's VM has /.dockerenv and is no container."""
    fake.write(".dockerenv", "")
    fake.write("proc/1/cgroup", "9:name=systemd:/\n1:cpu:/\n0::/\n")
    fake.mountinfo(line("254:0", "/", "ext4", "/dev/vda", 27))
    name, evidence = _virt.container_signs(str(fake.root), {})
    assert name is None
    assert evidence.startswith("/.dockerenv exists, but nothing else shows a container")
    assert "/ is ext4" in evidence
    virt = _virt.collect_virtualization(str(fake.root), environ={}, runner=lambda argv: None)
    assert virt.container is None and virt.container_evidence == evidence
    h = Host("h", "Linux", StorageTarget("/x"), virtualization=virt)
    assert dict(host_text.host_lines(h))["container"].startswith("none taken (/.dockerenv")


@pytest.mark.parametrize(
    ("mounts", "expected", "seen"),
    [
        (
            [
                line(
                    "0:52",
                    "/",
                    "overlay",
                    "overlay",
                    600,
                    super_options="rw,lowerdir=/l,"
                    "upperdir=/var/lib/docker/overlay2/9f3c/diff,workdir=/w",
                ),
            ],
            "docker",
            "/ is an overlay whose upper directory is /var/lib/docker/overlay2/9f3c/diff",
        ),
        (
            [
                line("254:0", "/", "ext4", "/dev/vda", 27),
                line(
                    "254:0",
                    "/etc/hostname",
                    "ext4",
                    "/dev/vda",
                    640,
                    root="/var/lib/docker/containers/" + "ab" * 32 + "/hostname",
                ),
            ],
            "docker",
            "/etc/hostname is bind-mounted from /var/lib/docker/containers/",
        ),
    ],
)
def test_dockerenv_with_a_runtime_mount_is_docker_with_its_evidence(fake, mounts, expected, seen):
    fake.write(".dockerenv", "")
    fake.write("proc/1/cgroup", "0::/\n")  # cgroup v2 with a namespace: nothing to see
    fake.mountinfo(*mounts)
    name, evidence = _virt.container_signs(str(fake.root), {})
    assert name == expected
    assert seen in evidence and "/.dockerenv exists too" in evidence


@pytest.mark.skipif(
    not os.path.exists("/.dockerenv") or _virt.container_signs("/", {})[0] is not None,
    reason="needs a machine whose only container sign is /.dockerenv (this project's VM)",
)
def test_live_systemd_detect_virt_docker_from_the_same_file_does_not_confirm_it(monkeypatch):
    monkeypatch.setattr(_virt.shutil, "which", lambda name: "/usr/bin/" + name)

    def runner(argv: list[str]) -> tuple[int, bytes]:
        return (0, b"docker\n") if "--container" in argv else (0, b"kvm\n")

    virt = _virt.collect_virtualization("/", environ={}, runner=runner)
    assert virt.container is None
    assert "systemd-detect-virt says docker from the same file" in virt.container_evidence


def test_backup_power_not_ready_is_unverifiable_and_named(fake):
    """A battery recharging (HPE: the battery-backed write cache is suspended until it is
    charged) is neither protection nor its absence: the fast flush stays unverifiable."""
    scsi_volume(fake, "sda", "8:0", 0, driver="hpsa", vendor="HP", model="LOGICAL VOLUME")
    text = fixture("ssacli_ctrl_all_show_config_detail_p822_capacitors_ok.txt").replace(
        "Battery/Capacitor Status: OK", "Battery/Capacitor Status: Recharging"
    )
    outputs = {"ssacli ctrl all show config detail": text}
    v = engine.judge(host_of(storage(fake, tools(outputs, ("ssacli",)))), fast_results())
    assert (v.path_verdict, v.decided_by) == (UNVERIFIABLE, "controller-cache-unverified")
    message = finding(v, "controller-cache-unverified").message
    assert "not ready (Battery/Capacitor Status: Recharging (Capacitors))" in message
