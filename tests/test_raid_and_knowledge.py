"""The RAID controller under a disk and the device knowledge table, pinned where the
end-to-end tests of tests/test_protected_cache.py and tests/test_device_knowledge.py leave
them loose:

- the controller read from ``/sys`` (fsyncbench.host._raid.sysfs_controller): its SCSI host
  and vendor tool, also where only the volume's vendor/model names it; a SAS HBA names no
  tool and no command;
- what the vendor tool run says (fsyncbench.host._raid.with_tool_readings): which tool of
  the family is run with which command, the exact note a user reads when a controller is
  not read (joined to the note of a controller named by its model string), a tool that
  failed, printed bytes that are not UTF-8, volumes that differ, a tool that raised;
- the table's rows as parsed from its JSON (fsyncbench.host.knowledge.parse): every field
  kept, the defaults, the message naming each broken rule;
- a recorded storage layer completed by the table (fsyncbench.host.known.layer): a bare
  disk with an emulator's model string becomes a virtual disk, anything else keeps its
  kind, a RAID volume's model string adds its controller.

Recorded facts and recorded tool outputs only (tests/fixtures/raid/): nothing here runs a
vendor tool or reads a real disk."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import this_platform
from test_protected_cache import STORCLI, fixture, tools

from fsyncbench.host import _raid, knowledge, known
from fsyncbench.model import (
    FLUSH_PASSES_DOWN,
    FLUSH_TO_DEVICE,
    FLUSH_TO_HOST,
    PROTECTION_FAILED,
    PROTECTION_OK,
    BlockDevice,
    Host,
    RaidController,
    StorageLayer,
    StorageTarget,
    Virtualization,
)

#: Linux's /sys layout, read with os.path (this_platform.linux_trees)
pytestmark = this_platform.linux_trees

#: A SCSI disk's resolved sysfs directory under SCSI host 3 (the kernel's layout:
#: .../hostN/targetN:C:T/N:C:T:L/block/sdX, Documentation/ABI/testing/sysfs-class-scsi_host).
RESOLVED = "/sys/devices/pci0000:00/0000:00:02.0/0000:03:00.0/host3/target3:2:0/3:2:0:0/block/sda"

STORCLI_NOT_ON_PATH = "not read: none of storcli64, storcli, perccli64, perccli is on PATH"


def sysfs_root(tmp_path: Path, driver: str | None) -> str:
    """A root whose SCSI host 3 is driven by ``driver`` (None: no ``proc_name`` recorded)."""
    root = tmp_path / "root"
    host = root / "sys" / "class" / "scsi_host" / "host3"
    host.mkdir(parents=True)
    if driver is not None:
        (host / "proc_name").write_text(driver + "\n")
    return str(root)


def by_driver(driver: str, vendor: str = "AVAGO") -> RaidController:
    """The controller of a volume on a host whose driver is ``driver`` (empty note)."""
    c = _raid._controller(driver, vendor, "host0")
    assert c.note == ""
    return c


#: A volume's vendor and model string naming each family's driver (the ``raid`` rows of
#: fsyncbench/host/device_knowledge.json).
NAMING = {"megaraid_sas": ("LSI", "MegaRAID SAS RMB"), "arcmsr": ("Areca", "ARC-1882-VOL#000")}


def by_model(driver: str = "megaraid_sas") -> RaidController:
    """A controller named by the volume's model string alone (its note says so)."""
    c = _raid.model_controller(*NAMING[driver], "host0")
    assert c is not None and c.note.startswith("driver inferred from the volume's vendor/model")
    return c


def read(
    controller: RaidController,
    access: _raid.ToolAccess,
    name: str = "sda",
) -> RaidController:
    """The controller of disk ``name``'s layer after the vendor tools were run."""
    disk = BlockDevice(name, vendor="AVAGO", model="MR9361-8i", controller=controller)
    layer = StorageLayer("disk", name, FLUSH_TO_DEVICE, holds_bytes=True, device=disk)
    (out,) = _raid.with_tool_readings((layer,), access)
    assert out.device is not None and out.device.controller is not None
    return out.device.controller


# --------------------------------------------------------------------------- /sys


def test_a_volume_named_by_its_model_string_keeps_its_scsi_host(tmp_path):
    c = _raid.sysfs_controller(sysfs_root(tmp_path, None), RESOLVED, "LSI", "MegaRAID SAS RMB")
    assert c is not None
    assert (c.driver, c.host, c.tool, c.from_model_string) == (
        "megaraid_sas",
        "host3",
        "storcli64",
        True,
    )


@pytest.mark.parametrize(
    ("driver", "vendor", "tool", "settles"),
    [
        ("megaraid_sas", "AVAGO", "storcli64", "storcli64 /c0 show all"),
        ("megaraid_sas", "DELL", "perccli64", "perccli64 /c0 show all"),
        ("hpsa", "HP", "ssacli", "ssacli ctrl all show config detail"),
        ("aacraid", "Adaptec", "arcconf", "arcconf GETCONFIG 1 AL"),
        ("arcmsr", "Areca", "cli64", "cli64 hw info"),
        ("mpt3sas", "ATA", None, ""),
    ],
)
def test_the_controller_names_the_tool_that_reads_it(tmp_path, driver, vendor, tool, settles):
    c = _raid.sysfs_controller(sysfs_root(tmp_path, driver), RESOLVED, vendor, "some volume")
    assert c is not None
    assert (c.driver, c.host, c.tool, c.settles, c.from_model_string) == (
        driver,
        "host3",
        tool,
        settles,
        False,
    )


def test_a_dell_volume_named_by_its_model_is_read_with_perccli_and_says_how_it_was_named():
    c = _raid.model_controller("DELL", "PERC H730P Mini", "host2")
    row = knowledge.known("DELL", "PERC H730P Mini", knowledge.RAID)
    assert c is not None and row is not None
    assert (c.driver, c.host, c.tool, c.settles) == (
        "megaraid_sas",
        "host2",
        "perccli64",
        "perccli64 /c0 show all",
    )
    assert c.note == (
        f"driver inferred from the volume's vendor/model (dell perc h730p mini; {row.name})"
    )


def test_live_access_finds_tools_on_path_and_runs_them_with_the_timeout(monkeypatch):
    runs = []

    def run_command(argv, timeout_s):
        runs.append((argv, timeout_s))
        return 0, b"done"

    monkeypatch.setattr(_raid, "run_command", run_command)
    access = _raid.live_access()
    assert access.which is _raid.shutil.which
    assert access.run(["storcli64", "/call", "show", "all"]) == (0, b"done")
    assert runs == [(["storcli64", "/call", "show", "all"], 15.0)]
    assert _raid.TOOL_TIMEOUT_S == 15.0


# --------------------------------------------------------------------------- the tool run


@pytest.mark.parametrize(
    ("on_path", "recording", "command", "expected"),
    [
        (
            ("ssacli",),
            "ssacli_ctrl_all_show_config_detail_p822_capacitors_ok.txt",
            "ssacli ctrl all show config detail",
            ("sda", "write back", PROTECTION_OK),
        ),
        (
            ("arcconf",),
            "arcconf_getconfig_1_ld_smartraid3204_caching_disabled.txt",
            "arcconf GETCONFIG 1 AL",
            ("sdb", "write through", None),
        ),
    ],
)
def test_a_smartpqi_controller_is_read_by_ssacli_or_else_arcconf(
    on_path, recording, command, expected
):
    """smartpqi serves HPE Smart Array (ssacli) and Microchip SmartRAID (arcconf, whose
    command is not ssacli's): the first found is run with its own command."""
    calls: list[str] = []
    name = expected[0]
    c = read(by_driver("smartpqi"), tools({command: fixture(recording)}, on_path, calls), name)
    assert calls == [command]
    assert (name, c.write_cache, c.protection) == expected
    assert (c.tool, c.read_by, c.note) == (on_path[0], command, "")


def test_the_tool_found_is_the_one_run_and_named_in_the_command_that_settles_it():
    calls: list[str] = []
    outputs = {k.replace("storcli64", "perccli"): v for k, v in STORCLI.items()}
    c = read(by_driver("megaraid_sas"), tools(outputs, ("perccli",), calls))
    assert calls == ["perccli /call show all", "perccli /call/vall show all"]
    assert (c.tool, c.settles, c.read_by) == (
        "perccli",
        "perccli /c0 show all",
        "perccli /call show all; perccli /call/vall show all",
    )
    assert (c.write_cache, c.protection, c.note) == ("write through", PROTECTION_OK, "")


def test_a_family_whose_tool_output_is_not_parsed_runs_nothing():
    """mpi3mr (MegaRAID 9600): storcli2's output is not parsed here, so it is not run."""
    calls: list[str] = []
    c = read(by_driver("mpi3mr"), tools({}, ("storcli2",), calls))
    assert calls == []
    assert (c.tool, c.settles, c.read_by) == ("storcli2", "storcli2 /c0 show all", "")
    assert c.note == "not read: storcli2's output is not parsed here"


class Raising:
    """A ToolAccess whose tool is on PATH but whose run raises."""

    def which(self, tool: str) -> str:
        return f"/usr/sbin/{tool}"

    def run(self, argv: list[str]) -> tuple[int, bytes] | None:
        raise OSError("boom")


NOT_READ = [
    pytest.param("megaraid_sas", tools({}, ()), STORCLI_NOT_ON_PATH, id="no tool on PATH"),
    pytest.param(
        "arcmsr", tools({}, ("cli64",)), "not read: cli64's output is not parsed here", id="cli64"
    ),
    pytest.param(
        "megaraid_sas",
        tools({}, ("storcli64",)),
        "not read: storcli64 /call show all failed or took over 15 s (it needs root)",
        id="failed",
    ),
    pytest.param(
        "megaraid_sas",
        tools({"storcli64 /call show all": "Controller = 0\nStatus = Success\n"}, ("storcli64",)),
        "not read: storcli64 /call/vall show all failed or took over 15 s (it needs root)",
        id="second command failed",
    ),
    pytest.param(
        "megaraid_sas",
        tools(
            {
                "storcli64 /call show all": "Controller = 0\nStatus = Success\n",
                "storcli64 /call/vall show all": "Controller = 0\nStatus = Success\n",
            },
            ("storcli64",),
        ),
        "storcli64 showed no volume",
        id="no volume",
    ),
    pytest.param(
        "megaraid_sas",
        tools(
            {
                "storcli64 /call show all": fixture(
                    "storcli_c0_show_cisco12g_cachevault_failed.txt"
                ),
                "storcli64 /call/vall show all": "",
            },
            ("storcli64",),
        ),
        "the tool names no volume /dev/sda and its volumes differ",
        id="volumes differ",
    ),
    pytest.param("megaraid_sas", Raising(), "not read: boom", id="the run raised"),
]


@pytest.mark.parametrize(("driver", "access", "note"), NOT_READ)
def test_a_controller_not_read_says_exactly_why(driver, access, note):
    c = read(by_driver(driver), access)
    assert c.note == note
    assert (c.write_cache, c.protection, c.drive_cache) == (None, None, None)


@pytest.mark.parametrize(("driver", "access", "note"), NOT_READ)
def test_why_a_controller_named_by_its_model_was_not_read_follows_how_it_was_named(
    driver, access, note
):
    named = by_model(driver)
    c = read(named, access)
    assert c.note == f"{named.note}; {note}"
    assert c.from_model_string and (c.write_cache, c.protection) == (None, None)


def test_a_tool_that_exits_with_an_error_is_not_read_even_if_it_printed():
    def run(argv: list[str]) -> tuple[int, bytes]:
        return 1, STORCLI[" ".join(argv)].encode()

    access = _raid.ToolAccess(lambda t: f"/usr/sbin/{t}", run)
    c = read(by_driver("megaraid_sas"), access)
    assert c.note == "not read: storcli64 /call show all failed or took over 15 s (it needs root)"
    assert (c.write_cache, c.protection, c.read_by) == (None, None, "")


def test_bytes_a_tool_prints_that_are_not_utf8_do_not_stop_its_reading():
    """A controller's name in Latin-1 (``\\xae``, not UTF-8) is replaced, not raised."""
    outputs = {
        argv: b"Product Name = Cisco\xae 12G\n" + text.encode() for argv, text in STORCLI.items()
    }
    access = _raid.ToolAccess(lambda t: f"/usr/sbin/{t}", lambda argv: (0, outputs[" ".join(argv)]))
    c = read(by_driver("megaraid_sas"), access)
    assert (c.write_cache, c.protection, c.note) == ("write through", PROTECTION_OK, "")


def test_a_volume_the_tool_names_is_read_with_no_note():
    c = read(by_model(), tools(STORCLI, ("storcli64",)), "sdb")
    assert (c.write_cache, c.protection, c.drive_cache) == ("write back", PROTECTION_OK, "enabled")
    assert c.note == by_model().note  # nothing added: read


def test_volumes_that_agree_answer_for_a_disk_the_tool_does_not_name():
    show = fixture("arcconf_getconfig_1_al_serveraid8k_battery_not_installed.txt")
    c = read(by_driver("aacraid"), tools({"arcconf GETCONFIG 1 AL": show}, ("arcconf",)))
    assert (c.write_cache, c.protection, c.drive_cache, c.note) == (
        "write back",
        PROTECTION_FAILED,
        "disabled",
        "",
    )


# --------------------------------------------------------------------------- the table


def row(**change: object) -> dict:
    base: dict = {
        "id": "extra",
        "match": r"\bextra disk\b",
        "name": "An extra disk",
        "facts": {"emulated": "X"},
        "sources": {"emulated": "somewhere"},
    }
    base.update(change)
    return base


def test_a_parsed_table_keeps_every_field_of_its_rows():
    data = {
        "version": 7,
        "updated": "2026-01-02",
        "devices": [
            row(),
            {
                "id": "bare",
                "match": "bare",
                "facts": {"raid": "hpsa", "plp": 5},
                "sources": {"plp": "a datasheet", "raid": "drivers/scsi/hpsa.c"},
            },
        ],
    }
    assert knowledge.parse(data) == knowledge.Knowledge(
        7,
        "2026-01-02",
        (
            knowledge.KnownDevice(
                "extra",
                r"\bextra disk\b",
                "An extra disk",
                (("emulated", "X"),),
                (("emulated", "somewhere"),),
            ),
            knowledge.KnownDevice(
                "bare",
                "bare",
                "bare",  # no name: the id
                (("raid", "hpsa"), ("plp", "5")),
                (("raid", "drivers/scsi/hpsa.c"), ("plp", "a datasheet")),
            ),
        ),
    )


def test_a_table_without_a_date_or_rows_is_dated_empty():
    assert knowledge.parse({"version": 1, "devices": []}) == knowledge.Knowledge(1, "", ())


def test_a_fact_a_row_does_not_carry_has_no_value_and_no_source():
    (r,) = knowledge.parse({"version": 1, "devices": [row()]}).devices
    assert (r.fact("plp"), r.source("plp")) == (None, "")
    assert (r.fact("emulated"), r.source("emulated")) == ("X", "somewhere")


@pytest.mark.parametrize(
    ("vendor", "model", "ident"),
    [
        ("ATA", "ST1000LM014-1EJ1", "ata st1000lm014-1ej1"),
        (None, "QEMU NVMe Ctrl", "qemu nvme ctrl"),  # NVMe: no vendor file
        ("  HP  ", "LOGICAL  VOLUME ", "hp logical volume"),
        ("ATA", None, "ata"),
        (None, None, ""),
    ],
)
def test_a_disks_identity_is_its_vendor_and_model_lower_case_one_space_apart(vendor, model, ident):
    assert knowledge.identity(vendor, model) == ident


def test_an_nvme_disk_without_a_vendor_matches_by_its_model_alone():
    assert [r.id for r in knowledge.matches(None, "QEMU NVMe Ctrl")] == ["qemu-nvme"]
    assert knowledge.matches(None, None) == ()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "device knowledge: no integer 'version'"),
        ({"devices": []}, "device knowledge: no integer 'version'"),
        ({"version": "1", "devices": []}, "device knowledge: no integer 'version'"),
        ({"version": 1}, "device knowledge: no 'devices' list"),
        ({"version": 1, "devices": {}}, "device knowledge: no 'devices' list"),
        (
            {"version": 1, "devices": ["extra"]},
            "device knowledge: a row without a unique id (None)",
        ),
        ({"version": 1, "devices": [row(id=5)]}, "device knowledge: a row without a unique id (5)"),
        (
            {"version": 1, "devices": [row(id="")]},
            "device knowledge: a row without a unique id ('')",
        ),
        ({"version": 1, "devices": [row(facts={})]}, "device knowledge extra: no facts"),
        ({"version": 1, "devices": [row(facts=["emulated"])]}, "device knowledge extra: no facts"),
        ({"version": 1, "devices": [row(facts="emulated")]}, "device knowledge extra: no facts"),
        (
            {"version": 1, "devices": [row(sources=["somewhere"])]},
            "device knowledge extra: no facts",
        ),
        (
            {"version": 1, "devices": [row(facts={"emulated": "  "})]},
            "device knowledge extra: fact emulated without value or source",
        ),
    ],
)
def test_a_broken_table_is_refused_with_the_rule_it_breaks(data, message):
    with pytest.raises(ValueError) as raised:
        knowledge.parse(data)
    assert str(raised.value) == message


# --------------------------------------------------------------------------- a recorded layer


def disk_layer(kind: str, vendor: str, model: str, flush: str = FLUSH_TO_DEVICE) -> StorageLayer:
    device = BlockDevice("sda", vendor=vendor, model=model, rotational=True)
    return StorageLayer(kind, "sda", flush, holds_bytes=True, volatile=False, device=device)


def test_a_bare_disk_with_an_emulators_model_becomes_a_virtual_disk():
    recorded = disk_layer("disk", "QEMU", "QEMU HARDDISK")
    assert known.layer(recorded) == dataclasses.replace(
        recorded, kind="virtual-disk", flush=FLUSH_TO_HOST, volatile=None
    )


@pytest.mark.parametrize(
    "recorded",
    [
        disk_layer("disk", "ATA", "Samsung SSD 860"),
        disk_layer("partition", "QEMU", "QEMU HARDDISK", FLUSH_PASSES_DOWN),
    ],
    ids=["a physical disk", "a partition of an emulated disk"],
)
def test_anything_else_is_kept_as_recorded(recorded):
    assert known.layer(recorded) is recorded


def test_a_raid_volumes_model_adds_its_controller_and_keeps_the_layer():
    recorded = disk_layer("disk", "DELL", "PERC H730P Mini")
    completed = known.layer(recorded)
    assert completed.device is not None and completed.device.controller is not None
    assert (completed.device.controller.driver, completed.device.controller.from_model_string) == (
        "megaraid_sas",
        True,
    )
    assert completed == dataclasses.replace(recorded, device=completed.device)
    assert dataclasses.replace(completed.device, controller=None) == recorded.device


def test_an_emulated_disk_whose_vendor_names_a_raid_family_keeps_both():
    """QEMU's scsi-hd takes a ``vendor`` property (hw/scsi/scsi-disk.c): ``Adaptec``
    there makes an emulated disk whose identity also matches the Adaptec rows."""
    recorded = disk_layer("disk", "Adaptec", "QEMU HARDDISK")
    completed = known.layer(recorded)
    assert (completed.kind, completed.flush) == ("virtual-disk", FLUSH_TO_HOST)
    assert completed.device is not None and completed.device.controller is not None
    assert completed.device.controller.driver == "aacraid"


def test_a_target_is_completed_in_its_disks_and_its_layers():
    perc = BlockDevice("sda", vendor="DELL", model="PERC H730P Mini", rotational=True)
    fs = StorageLayer("filesystem", "/srv", FLUSH_PASSES_DOWN, fs_type="ext4")
    disk = StorageLayer("disk", "sda", FLUSH_TO_DEVICE, depth=1, holds_bytes=True, device=perc)
    recorded = StorageTarget("/srv/db", disks=(perc,), layers=(fs, disk))
    completed = known.target(recorded)
    controller = _raid.model_controller("DELL", "PERC H730P Mini")
    named = dataclasses.replace(perc, controller=controller)
    assert completed == dataclasses.replace(
        recorded, disks=(named,), layers=(fs, dataclasses.replace(disk, device=named))
    )


def test_a_target_whose_disk_is_emulated_has_its_layer_made_virtual():
    """The disk list itself is unchanged (an emulated disk has no controller to add)."""
    qemu = BlockDevice("vda", vendor="QEMU", model="QEMU HARDDISK")
    disk = StorageLayer("disk", "vda", FLUSH_TO_DEVICE, holds_bytes=True, device=qemu)
    recorded = StorageTarget("/srv/db", disks=(qemu,), layers=(disk,))
    completed = known.target(recorded)
    assert completed.disks == (qemu,)
    assert [(x.kind, x.flush) for x in completed.layers] == [("virtual-disk", FLUSH_TO_HOST)]


def test_a_host_with_nothing_to_complete_is_returned_as_it_is():
    """No copy where the table adds nothing (a physical disk, no hypervisor seen)."""
    ssd = BlockDevice("sda", vendor="ATA", model="Samsung SSD 860")
    disk = StorageLayer("disk", "sda", FLUSH_TO_DEVICE, holds_bytes=True, device=ssd)
    target = StorageTarget("/srv/db", disks=(ssd,), layers=(disk,))
    host = Host("metal", "Linux", target, Virtualization(hypervisor_flag=False))
    assert known.apply(host) is host
