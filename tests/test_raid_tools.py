"""What fsyncbench reads from a RAID controller's vendor tool (fsyncbench/host/_raidcli.py):
storcli/perccli, ssacli (hpssacli, hpacucli) and arcconf outputs, each volume's disk, write
policy, backup power (with the words read, shown in the report) and drive caches.

Pins the layouts the parsers must keep reading: several controllers in one output, a
controller with no logical drive, logical drives next to each other, a battery table of a
Dell PERC, a controller without battery, the Gen10 drive-cache words, the legacy arcconf
sections and their write-cache wordings. Recorded outputs come from tests/fixtures/raid/
(sources in its README) or, where quoted inline below, from the public recordings named at
each; an edit of a recording says what it changes. No tool is run."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from fsyncbench.host._raidcli import (
    WRITE_BACK,
    WRITE_THROUGH,
    CacheReading,
    _table,
    agreed,
    parse_arcconf,
    parse_ssacli,
    parse_storcli,
    protection_of,
    storcli_protection,
)
from fsyncbench.model import PROTECTION_FAILED, PROTECTION_NOT_READY, PROTECTION_OK

RAID = Path(__file__).parent / "fixtures" / "raid"


def fixture(name: str) -> str:
    return (RAID / name).read_text()


def replaced(text: str, old: str, new: str) -> str:
    """``text`` with its one ``old`` replaced (an edit of a recording that must apply)."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


# --------------------------------------------------------------------------- common words


@pytest.mark.parametrize("state", ["Optimal (learn cycle pending)", "OK (charged)"])
def test_a_ready_word_followed_by_more_words_is_still_ready(state):
    assert protection_of(state) == PROTECTION_OK


def test_the_reading_every_volume_agrees_on_names_no_disk():
    sda = CacheReading("sda", WRITE_BACK, PROTECTION_OK, "CacheVault CVPM05 Optimal", "enabled")
    sdb = dataclasses.replace(sda, disk="sdb")
    assert agreed([sda, sdb]) == dataclasses.replace(sda, disk=None)


# --------------------------------------------------------------------------- storcli

#: ``storcli /call show all`` of three controllers, hand-written in the layout of the recorded
#: ``/c0 show`` (tests/fixtures/raid) and of a Dell ``perccli64 /c0 show`` (CLI 007.1623, PERC
#: H755N, whose BBU_Info table is copied as printed): c0 a PERC with its BBU Optimal, c1 with
#: no backup power at all (``HwCfg`` ``BBU = Absent``), c2 with a CacheVault Degraded.
VD_LIST = """\
VD LIST :
=======

---------------------------------------------------------------
DG/VD TYPE  State Access Consist Cache Cac sCC       Size Name
---------------------------------------------------------------
0/{vd}   RAID1 Optl  RW     Yes     {code} -   OFF   1.745 TB
---------------------------------------------------------------
"""
PERC_BBU = """\
BBU_Info :
========

----------------------------------------------
Model State   RetentionTime Temp Mode MfgDate
----------------------------------------------
BBU   {state} 0 hour(s)     27C  -    0/00/00
----------------------------------------------
"""
CACHEVAULT = """\
Cachevault_Info :
===============

------------------------------------
Model  State   Temp Mode MfgDate
------------------------------------
CVPM05 {state} 34C  -    2018/10/16
------------------------------------
"""
THREE_CONTROLLERS = (
    "CLI Version = 007.1623.0000.0000 May 17, 2021\n"
    "Controller = 0\nStatus = Success\n\nProduct Name = PERC H755N Front\n\n"
    + VD_LIST.format(vd=0, code="RWBD")
    + "\n"
    + PERC_BBU.format(state="Optimal")
    + "\nController = 1\nStatus = Success\n\nHwCfg :\n=====\nBBU = Absent\nNVRAM = Present\n\n"
    + VD_LIST.format(vd=1, code="RAWBC")
    + "\nController = 2\nStatus = Success\n\n"
    + VD_LIST.format(vd=2, code="NRWTD")
    + "\n"
    + CACHEVAULT.format(state="Degraded")
)


def test_each_storcli_controller_has_its_own_backup_power():
    assert storcli_protection(THREE_CONTROLLERS) == {
        0: (PROTECTION_OK, "BBU BBU Optimal"),
        1: (PROTECTION_FAILED, "no battery or CacheVault (BBU = Absent)"),
        2: (PROTECTION_NOT_READY, "CacheVault CVPM05 Degraded"),
    }


def test_each_volume_of_show_all_alone_is_read_with_its_controllers_backup_power():
    assert parse_storcli(THREE_CONTROLLERS) == [
        CacheReading(None, WRITE_BACK, PROTECTION_OK, "BBU BBU Optimal", None),
        CacheReading(
            None, WRITE_BACK, PROTECTION_FAILED, "no battery or CacheVault (BBU = Absent)", None
        ),
        CacheReading(None, WRITE_THROUGH, PROTECTION_NOT_READY, "CacheVault CVPM05 Degraded", None),
    ]


def test_an_output_without_a_controller_line_is_controller_0():
    text = THREE_CONTROLLERS.split("\nController = 1")[0].replace("Controller = 0\n", "")
    assert storcli_protection(text) == {0: (PROTECTION_OK, "BBU BBU Optimal")}


def test_an_output_that_says_nothing_of_backup_power_has_none():
    text = "Controller = 0\nStatus = Success\n\n" + VD_LIST.format(vd=0, code="RWBD")
    assert storcli_protection(text) == {0: (None, "")}
    assert parse_storcli(text) == [CacheReading(None, WRITE_BACK, None, "", None)]


def test_the_worst_of_several_backup_units_stands_for_the_controller():
    """Every row of the table is read (one per unit) and the worst state wins."""
    text = CACHEVAULT.format(state="Optimal").replace(
        "2018/10/16\n", "2018/10/16\nCVPM02 Failed  30C  -    2017/01/05\n"
    )
    assert storcli_protection(text) == {
        0: (PROTECTION_FAILED, "CacheVault CVPM05 CVPM02 Optimal, Failed")
    }


CV_PROPERTIES = (
    "Controller = 0\nStatus = Success\n\nCachevault_Info :\n===============\n\n"
    "--------------------\nProperty    Value\n--------------------\n"
    "Type        CVPM02\nTemperature 28 C\n{state}--------------------\n"
)


@pytest.mark.parametrize(
    "state,expected",
    [
        ("Optimal", (PROTECTION_OK, "CacheVault CVPM02 Optimal")),
        ("Failed", (PROTECTION_FAILED, "CacheVault CVPM02 Failed")),
        ("Learning", (PROTECTION_NOT_READY, "CacheVault CVPM02 Learning")),
    ],
)
def test_a_backup_power_table_of_property_value_rows_is_read_by_its_state_row(state, expected):
    """``/cN/cv show all`` prints Cachevault_Info as Property/Value rows (``Type CVPM02``,
    ``State Optimal``; layout recorded in Checkmk's test_storcli_cache_vault.py): the State
    row is the unit's state, Type its model."""
    text = CV_PROPERTIES.format(state=f"State       {state}\n")
    assert storcli_protection(text) == {0: expected}


def test_a_property_value_table_without_a_state_row_is_not_trusted():
    """No State to read: the backup power is not ready (never ok), and the detail names only
    the unit."""
    assert storcli_protection(CV_PROPERTIES.format(state="")) == {
        0: (PROTECTION_NOT_READY, "CacheVault CVPM02")
    }


def test_a_property_value_table_without_a_type_row_reads_its_state_alone():
    """No Type (nor Model) row: the unit is named by its kind and state, with no model and
    no doubled space where the model would be."""
    text = CV_PROPERTIES.format(state="State       Optimal\n").replace("Type        CVPM02\n", "")
    assert storcli_protection(text) == {0: (PROTECTION_OK, "CacheVault Optimal")}


def vd_table(controller: int, vd: int, code: str, *, cache_column: bool = True) -> str:
    """The ``/cN/vM :`` table of ``storcli /call/vall show all`` (recorded layout)."""
    header = "DG/VD TYPE  State Access Consist Cache Cac sCC       Size Name"
    row = f"0/{vd}   RAID1 Optl  RW     Yes     {code} -   OFF   1.745 TB db"
    if not cache_column:
        header = header.replace("Cache Cac", "Cac")
        row = row.replace(f"{code} -", "-")
    rule = "-" * len(header)
    return f"/c{controller}/v{vd} :\n======\n\n{rule}\n{header}\n{rule}\n{row}\n{rule}\n"


def vd_properties(vd: int, *lines: str) -> str:
    return f"VD{vd} Properties :\n==============\n" + "".join(f"{ln}\n" for ln in lines) + "\n"


#: ``storcli /call/vall show all`` in the recorded layout, trimmed: c0 VD0 with its table and
#: only the two properties read, VD1 with properties but no table; c1 (which the show-all
#: output above does not cover) VD0 with a table only, ending the output.
VALL = (
    "CLI Version = 007.1623.0000.0000 May 17, 2021\nController = 0\nStatus = Success\n\n"
    + vd_table(0, 0, "RWBD")
    + "\n"
    + vd_properties(0, "OS Drive Name = /dev/sdb", "Disk Cache Policy = Disabled")
    + vd_properties(1, "Disk Cache Policy = Enabled")
    + "Controller = 1\nStatus = Success\n\n"
    + vd_table(1, 0, "NRWTD")
)


def test_every_volume_of_vall_is_read_whatever_of_it_the_output_holds():
    show_all = THREE_CONTROLLERS.split("\nController = 1")[0]
    assert parse_storcli(show_all, VALL) == [
        CacheReading("sdb", WRITE_BACK, PROTECTION_OK, "BBU BBU Optimal", "disabled"),
        CacheReading(None, None, PROTECTION_OK, "BBU BBU Optimal", "enabled"),
        CacheReading(None, WRITE_THROUGH, None, "", None),
    ]


def test_disabled_drive_caches_of_the_recorded_volumes():
    readings = parse_storcli(
        fixture("storcli_c0_show_cisco12g_cachevault_optimal.txt"),
        fixture("storcli_c0_vall_show_all_cisco12g_pdcache_disabled.txt"),
    )
    # VD0 keeps "Disk's Default" (the drives' own setting: not known), VD1-4 Disabled
    assert [r.drive_cache for r in readings] == [None] + ["disabled"] * 4


def test_a_volume_table_without_a_cache_column_reads_no_write_policy():
    vall = "Controller = 0\n\n" + vd_table(0, 0, "RWBD", cache_column=False)
    assert [r.write_cache for r in parse_storcli("", vall)] == [None]
    show_all = vall.replace("/c0/v0 :\n======", "VD LIST :\n=======")
    assert [r.write_cache for r in parse_storcli(show_all)] == [None]


@pytest.mark.parametrize(
    ("name", "disk"),
    [
        ("/dev/sdb", "sdb"),
        ("/dev/a", "a"),  # the shortest name
        ("/dev/", None),  # no name after the directory
        ("Not Exposed", None),  # not a device path
    ],
)
def test_the_os_drive_name_is_the_kernel_name_under_dev(name, disk):
    vall = "Controller = 0\n\n" + vd_properties(0, f"OS Drive Name = {name}")
    assert [r.disk for r in parse_storcli("", vall)] == [disk]


def test_a_table_is_its_rows_by_column_the_last_column_taking_the_rest():
    """storcli tables (module docstring): the header between the first two dashed rules, the
    rows up to the third; a title need not be underlined; a short row's cells are empty."""
    lines = [
        "Cachevault_Info :",
        "------------------------------------",
        "Model  State   Temp Mode MfgDate",
        "------------------------------------",
        "CVPM05 Optimal 34C  -    2018/10/16 (rev 2)",
        "CVPM02 Failed",
        "------------------------------------",
    ]
    assert _table(lines, "Cachevault_Info") == [
        {
            "Model": "CVPM05",
            "State": "Optimal",
            "Temp": "34C",
            "Mode": "-",
            "MfgDate": "2018/10/16 (rev 2)",
        },
        {"Model": "CVPM02", "State": "Failed", "Temp": "", "Mode": "", "MfgDate": ""},
    ]


# --------------------------------------------------------------------------- ssacli

P822 = fixture("ssacli_ctrl_all_show_config_detail_p822_capacitors_ok.txt")
P822_HEAD = P822[: P822.index("   Array: A")]  # the controller's own lines


def test_a_controller_with_no_logical_drive_is_one_reading_naming_no_disk():
    """The P822 recording with its array cut out: only unassigned drives are left."""
    text = P822_HEAD + P822[P822.index("   unassigned") :]
    assert parse_ssacli(text) == [
        CacheReading(
            None, WRITE_BACK, PROTECTION_OK, "Battery/Capacitor Status: OK (Capacitors)", "disabled"
        )
    ]


#: ``ssacli ctrl all show config detail`` of four Smart HBA H240 controllers, none with a
#: cache: proliantutils ``proliantutils/tests/hpssa/raid_constants.py``
#: (``SSACLI_PARSING_TESTS``), commit 86ef3b47b4eca97c221577e3570b0240d6a25f22,
#: https://github.com/openstack-archive/proliantutils (Apache-2.0), copied as published.
H240_FOUR_CONTROLLERS = """
Smart HBA H240 in Slot 1 (RAID Mode)
   Slot: 1
   Controller Mode: RAID Mode

   Internal Drive Cage at Port 1I, Box 1, OK
      Drive Bays: 4
      Port: 1I
      Box: 1

   Physical Drives
      physicaldrive 1I:1:4 (port 1I:box 1:bay 4, SAS HDD, 900 GB, OK)
      physicaldrive 1I:1:3 (port 1I:box 1:bay 3, SAS HDD, 900 GB, OK)

   Internal Drive Cage at Port 2I, Box 1, OK
      Drive Bays: 4
      Port: 2I
      Box: 1

   Physical Drives
      physicaldrive 2I:1:5 (port 2I:box 1:bay 5, SAS HDD, 900 GB, OK)
      physicaldrive 2I:1:6 (port 2I:box 1:bay 6, SAS HDD, 900 GB, OK)

   Unassigned
      physicaldrive 1I:1:4
         Port: 1I
         Box: 1
         Bay: 4
         Size: 900 GB
         Interface Type: SAS

Smart HBA H240 in Slot 2 (RAID Mode)
   Slot: 2
   Controller Mode: RAID Mode
   PCI Address (Domain:Bus:Device.Function): 0000:0B:00.0

   Array: H
      Interface Type: SAS

      Logical Drive: 8
         Size: 838.3 GB
         Status: OK

      physicaldrive 2I:2:8
         Port: 2I
         Box: 2
         Bay: 8
         Size: 900 GB
         Interface Type: SAS

Smart HBA H240 in Slot 3 (RAID Mode)
   Slot: 3
   Controller Mode: RAID Mode

Smart HBA H240ar in Slot 0 (Embedded) (RAID Mode)
   Bus Interface: PCI
   Slot: 0
"""


def test_a_controller_that_says_nothing_of_its_cache_has_nothing_read():
    assert parse_ssacli(H240_FOUR_CONTROLLERS) == [CacheReading(None, None, None, "", None)] * 4


def test_no_battery_and_no_write_share_is_write_through_without_backup_power():
    """What a Smart Array without battery prints (a public ``hpacucli ... show config
    detail`` of a P410i: ``Battery/Capacitor Count: 0``, no status line, ``100% Read / 0%
    Write``), edited into the P822 recording."""
    text = replaced(P822, "   Battery/Capacitor Status: OK\n", "")
    text = replaced(text, "   Cache Backup Power Source: Capacitors\n", "")
    text = replaced(text, "Battery/Capacitor Count: 1", "Battery/Capacitor Count: 0")
    text = replaced(text, "Cache Ratio: 10% Read / 90% Write", "Cache Ratio: 100% Read / 0% Write")
    assert parse_ssacli(text) == [
        CacheReading(
            "sda",
            WRITE_THROUGH,
            PROTECTION_FAILED,
            "no battery or capacitor (Battery/Capacitor Count: 0)",
            "disabled",
        )
    ]


@pytest.mark.parametrize(
    ("ratio", "write"),
    [
        ("10% Read / 90% Write", WRITE_BACK),
        ("99% Read / 1% Write", WRITE_BACK),  # any write share caches writes
        ("100% Read / 0% Write", WRITE_THROUGH),
    ],
)
def test_the_write_share_of_the_cache_ratio_decides_write_back(ratio, write):
    text = replaced(P822, "Cache Ratio: 10% Read / 90% Write", f"Cache Ratio: {ratio}")
    assert [r.write_cache for r in parse_ssacli(text)] == [write]


@pytest.mark.parametrize(
    ("source_line", "detail"),
    [
        ("   Cache Backup Power Source: Capacitors\n", "Battery/Capacitor Status: OK (Capacitors)"),
        ("", "Battery/Capacitor Status: OK"),  # older tools print no source
    ],
)
def test_the_backup_power_words_read_are_shown(source_line, detail):
    text = replaced(P822, "   Cache Backup Power Source: Capacitors\n", source_line)
    assert [(r.protection, r.detail) for r in parse_ssacli(text)] == [(PROTECTION_OK, detail)]


def test_no_cache_board_is_write_through_without_backup_power():
    """A Smart Array with no cache module prints ``Cache Board Present: False`` and none of
    the cache or battery lines (the P822 recording so edited)."""
    text = replaced(P822, "Cache Board Present: True", "Cache Board Present: False")
    for key in (
        "Cache Status",
        "Cache Ratio",
        "Total Cache Size",
        "Total Cache Memory Available",
        "No-Battery Write Cache",
        "Cache Backup Power Source",
        "Battery/Capacitor Count",
        "Battery/Capacitor Status",
    ):
        text = re.sub(rf"^   {re.escape(key)}: .*\n", "", text, count=1, flags=re.MULTILINE)
    (reading,) = parse_ssacli(text)
    assert (reading.disk, reading.write_cache, reading.protection, reading.drive_cache) == (
        "sda",
        WRITE_THROUGH,
        PROTECTION_FAILED,
        "disabled",
    )
    # the detail quotes what the tool printed, not a count it did not print
    assert reading.detail == "no cache module (Cache Board Present: False)"


@pytest.mark.parametrize(
    ("line", "drive_cache"),
    [
        ("Drive Write Cache: Enabled", "enabled"),
        ("Drive Write Cache: Disabled", "disabled"),
        # Gen10 controllers' words (ssacli ... modify dwc=enable usage=configured)
        ("Configured Drive Write Cache Policy: Enable", "enabled"),
        ("Configured Drive Write Cache Policy: Disable", "disabled"),
        ("Configured Drive Write Cache Policy: Default", None),  # the drives' own setting
    ],
)
def test_the_drive_write_cache_words(line, drive_cache):
    text = replaced(P822, "Drive Write Cache: Disabled", line)
    assert [r.drive_cache for r in parse_ssacli(text)] == [drive_cache]


def test_a_physical_drive_exposed_to_the_os_does_not_rename_the_logical_drive():
    """In mixed mode an unassigned drive is exposed and names its own disk (as in
    proliantutils' ``HPSSA_HBA_MODE`` recording); the logical drive keeps its name."""
    text = replaced(P822, "         Bay: 3\n", "         Bay: 3\n         Disk Name: /dev/sdb\n")
    assert [r.disk for r in parse_ssacli(text)] == ["sda"]


def test_each_logical_drive_reads_its_own_lines():
    """Four logical drives one after the other (the P822's controller, its drives' lines
    trimmed to the two read): LD 3 names no disk (not yet seen by the OS) and prints no
    Caching line, so it takes the controller's write back; LD 2 and 4 do not cache."""
    text = P822_HEAD + (
        "   Array: A\n"
        "      Logical Drive: 1\n"
        "         Disk Name: /dev/sda\n"
        "         Caching:  Enabled\n"
        "      Logical Drive: 2\n"
        "         Caching:  Disabled\n"
        "         Disk Name: /dev/sdb\n"
        "      Logical Drive: 3\n"
        "         Size: 100.0 GB\n"
        "      Logical Drive: 4\n"
        "         Disk Name: /dev/sdd\n"
        "         Caching:  Disabled\n"
    )
    assert [(r.disk, r.write_cache) for r in parse_ssacli(text)] == [
        ("sda", WRITE_BACK),
        ("sdb", WRITE_THROUGH),
        (None, WRITE_BACK),
        ("sdd", WRITE_THROUGH),
    ]


def test_a_logical_drive_without_lines_of_its_own_takes_none_of_the_next_section():
    """A logical drive header followed at once by a physical drive as far out (its lines
    trimmed away): the drive's Disk Name and Caching below are not the logical drive's."""
    text = P822_HEAD + (
        "   Array: A\n"
        "      Logical Drive: 1\n"
        "      physicaldrive 1I:1:1\n"
        "         Disk Name: /dev/sdb\n"
        "         Caching:  Disabled\n"
    )
    assert [(r.disk, r.write_cache) for r in parse_ssacli(text)] == [(None, WRITE_BACK)]


# --------------------------------------------------------------------------- arcconf

SERVERAID_8K = fixture("arcconf_getconfig_1_al_serveraid8k_battery_okay.txt")
RULE = "  --------------------------------------------------------\n"

#: ``arcconf GETCONFIG 1`` of an IBM ServeRAID 8k-l with no battery: ulmitov/pyarcconf,
#: ``pyarcconf/datasets/unknown_versions/___getconfig_1``, commit
#: d0491fa62b03ece580d3da173b1b7a82c1a0159a, https://github.com/ulmitov/pyarcconf (MIT);
#: copied as published (trailing blanks dropped), its physical devices trimmed to one with
#: a write cache and one whose cache the tool does not know.
SERVERAID_8K_L = """\
Controllers found: 1

----------------------------------------------------------------------
Controller information
----------------------------------------------------------------------
   Controller Status                   : Okay
   Channel description                 : SAS/SATA
   Controller Model                    : IBM ServeRAID 8k-l
   Controller Serial Number            : 401DD9D
   Physical Slot                       : 0
   Installed memory                    : 32 MB
   Copyback                            : Disabled
   Data scrubbing                      : Enabled
   Defunct disk drive count            : 0
   Logical drives/Offline/Critical     : 1/0/0
   ---------------------------------------------------
   Controller Version Information
   ---------------------------------------------------
   BIOS                                : 5.2-0 (11835)
   Firmware                            : 5.2-0 (11835)
   Driver                              : 1.1-5 (2412)
   Boot Flash                          : 5.1-0 (11835)
   ---------------------------------------------------
   Controller Battery Information
   ---------------------------------------------------
   Status                              : Not Installed
   ---------------------------------------------------
   Controller Vital Product Data
   ---------------------------------------------------
   VPD Assigned#                       : 25R8078
   EC Version#                         : J85097A
   Controller FRU#                     : 25R8079

----------------------------------------------------------------------
Logical drive information
----------------------------------------------------------------------
Logical drive number 1
   Logical drive name                  :
   RAID level                          : 1
   Status of logical drive             : Okay
   Size                                : 285989 MB
   Write-cache mode                    : Not supported
   Partitioned                         : Yes
   Number of chunks                    : 2
   Drive(s) (Channel,Device)           : 0,0 0,1

----------------------------------------------------------------------
Physical Device information
----------------------------------------------------------------------
      Device #0
         Device is a Hard drive
         State                         : Online
         Size                          : 286102 MB
         Write Cache                   : Enabled (write-back)
         FRU                           : 39R7356
      Device #2
         Device is a Hard drive
         State                         : Ready
         Size                          : 429247 MB
         Write Cache                   : Unknown
         FRU                           : 46M7030

Command completed successfully.
"""


def test_arcconf_recordings_name_the_battery_words_read():
    assert parse_arcconf(SERVERAID_8K_L) == [
        CacheReading(
            None,
            None,
            PROTECTION_FAILED,
            "Controller Battery Information: Not Installed",
            "enabled",
        )
    ]
    assert [r.detail for r in parse_arcconf(SERVERAID_8K)] == [
        "Controller Battery Information: Okay"
    ]


def test_an_arcconf_output_without_a_battery_section_has_no_backup_power_read():
    start = SERVERAID_8K.index(RULE + "  Controller Battery Information")
    end = SERVERAID_8K.index(RULE + "  Controller Vital Product Data")
    (reading,) = parse_arcconf(SERVERAID_8K[:start] + SERVERAID_8K[end:])
    assert (reading.write_cache, reading.protection, reading.detail) == (WRITE_BACK, None, "")


def test_a_key_line_naming_the_battery_is_not_a_battery_section():
    """The vital product data's ``Battery FRU#`` line, here right over the battery section's
    rule (the recording's two sections swapped), is a key line, not a section title."""
    battery_at = SERVERAID_8K.index(RULE + "  Controller Battery Information")
    vpd_at = SERVERAID_8K.index(RULE + "  Controller Vital Product Data")
    vpd_end = SERVERAID_8K.index("\n\n", vpd_at) + 1
    text = (
        SERVERAID_8K[:battery_at]
        + SERVERAID_8K[vpd_at:vpd_end]
        + SERVERAID_8K[battery_at:vpd_at]
        + SERVERAID_8K[vpd_end:]
    )
    assert "Battery FRU#                             : 25R8088\n" + RULE in text
    assert [(r.protection, r.detail) for r in parse_arcconf(text)] == [
        (PROTECTION_OK, "Controller Battery Information: Okay")
    ]


@pytest.mark.parametrize(
    ("mode", "write"),
    [
        ("Enabled (write-back)", WRITE_BACK),
        ("Enabled (write back)", WRITE_BACK),
        ("Write Back", WRITE_BACK),
        ("Disabled (write-through)", WRITE_THROUGH),
        ("Disabled (write through)", WRITE_THROUGH),
        ("Write Through", WRITE_THROUGH),
        ("Disabled", WRITE_THROUGH),
        ("Not supported", None),  # the 8k-l's words: no policy known
    ],
)
def test_the_write_cache_mode_words(mode, write):
    text = replaced(
        SERVERAID_8K,
        "Write-cache mode                         : Enabled (write-back)",
        f"Write-cache mode                         : {mode}",
    )
    assert [r.write_cache for r in parse_arcconf(text)] == [write]


def test_without_physical_devices_the_drive_caches_are_not_known():
    """``arcconf GETCONFIG 1 LD`` prints no physical device (the recording cut there)."""
    text = SERVERAID_8K[: SERVERAID_8K.index("-----\nPhysical Device information")]
    assert [r.drive_cache for r in parse_arcconf(text)] == [None]


def test_each_legacy_logical_drive_reads_its_own_lines():
    """Four logical drives one after the other, trimmed to the line read; LD 3 prints no
    write-cache mode."""
    head = SERVERAID_8K[: SERVERAID_8K.index("Logical drive number 1")]
    text = head + (
        "Logical drive number 1\n"
        "  Write-cache mode                         : Enabled (write-back)\n"
        "Logical drive number 2\n"
        "  Logical drive name                       : scratch\n"
        "  Write-cache mode                         : Disabled (write-through)\n"
        "Logical drive number 3\n"
        "  Logical drive name                       : new\n"
        "Logical drive number 4\n"
        "  Write-cache mode                         : Enabled (write-back)\n"
    )
    assert [r.write_cache for r in parse_arcconf(text)] == [
        WRITE_BACK,
        WRITE_THROUGH,
        None,
        WRITE_BACK,
    ]


SMARTRAID_LD = fixture("arcconf_getconfig_1_ld_smartraid3204_caching_disabled.txt")


def test_a_logical_device_ends_at_the_next_rule():
    """An exposed physical device below names its own disk (as the 3204-8i's recorded ``AL``
    output prints it, pyarcconf ``datasets/raid_unconfigured/_getconfig_1``): a logical
    device that names none (here the recording's second, its Disk Name cut) does not take it."""
    text = replaced(SMARTRAID_LD, "   Disk Name                                  : /dev/sdc\n", "")
    text = text.replace("\nCommand completed successfully.", "") + (
        "----------------------------------------------------------------------\n"
        "Physical Device information\n"
        "----------------------------------------------------------------------\n"
        "   Channel #0:\n"
        "      Device #8\n"
        "         Device is a Hard drive\n"
        "         State                                : Ready\n"
        "         Disk Name                            : /dev/sdd\n"
        "         Write Cache                          : Enabled (write-back)\n"
    )
    assert [r.disk for r in parse_arcconf(text)] == ["sdb", None]


def test_a_smartraid_output_is_read_in_ssacli_words():
    """The module reads a SmartRAID output's controller in ssacli's words (module docstring):
    the 3204-8i recording under a controller section so worded (hand-written), its first
    logical device edited to ``Caching : Enabled``, its second to print no Caching line: both
    then take the controller's write back."""
    controller = (
        "Controllers found: 1\n"
        "----------------------------------------------------------------------\n"
        "Controller information\n"
        "----------------------------------------------------------------------\n"
        "   Controller Status                          : Optimal\n"
        "   Cache Status                               : OK\n"
        "   No-Battery Write Cache                     : Disabled\n"
        "   Drive Write Cache                          : Enabled\n"
        "   Battery/Capacitor Status                   : Recharging\n"
    )
    lds = SMARTRAID_LD[SMARTRAID_LD.index("-----\nLogical device information") :]
    lds = lds.replace(
        "Caching                                    : Disabled", "Caching : Enabled", 1
    )
    lds = replaced(lds, "   Caching                                    : Disabled\n", "")
    assert parse_arcconf(controller + lds) == [
        CacheReading(
            sd, WRITE_BACK, PROTECTION_NOT_READY, "Battery/Capacitor Status: Recharging", "enabled"
        )
        for sd in ("sdb", "sdc")
    ]


# --------------------------------------------------------------------------- older hpacucli
# hpacucli (before ssacli) wrote "Accelerator Ratio" for "Cache Ratio", "Array Accelerator"
# for a logical drive's "Caching", and named cciss block devices /dev/cciss/c0d0 (under
# /sys/block: cciss!c0d0). Edits of the P822 recording into those words.

P822_OK = "ssacli_ctrl_all_show_config_detail_p822_capacitors_ok.txt"


def test_hpacucli_accelerator_ratio_with_no_write_share_writes_through():
    text = replaced(
        fixture(P822_OK),
        "Cache Ratio: 10% Read / 90% Write",
        "Accelerator Ratio: 100% Read / 0% Write",
    )
    text = replaced(text, "Battery/Capacitor Count: 1", "Battery/Capacitor Count: 0")
    text = replaced(text, "   Battery/Capacitor Status: OK\n", "")
    (reading,) = parse_ssacli(text)
    assert (reading.write_cache, reading.protection) == (WRITE_THROUGH, PROTECTION_FAILED)
    # the same controller giving writes a share caches them
    back = replaced(text, "100% Read / 0% Write", "75% Read / 25% Write")
    assert parse_ssacli(back)[0].write_cache == WRITE_BACK


def test_hpacucli_array_accelerator_disabled_writes_through_and_cciss_names_the_disk():
    text = replaced(fixture(P822_OK), "Caching:  Enabled", "Array Accelerator: Disabled")
    text = replaced(text, "Disk Name: /dev/sda", "Disk Name: /dev/cciss/c0d0")
    (reading,) = parse_ssacli(text)
    assert (reading.disk, reading.write_cache) == ("cciss!c0d0", WRITE_THROUGH)


def test_a_logical_drive_without_a_disk_name_does_not_take_a_physical_drives():
    # a drive exposed beside the array (HBA mode) prints its own Disk Name further down
    text = replaced(fixture(P822_OK), "         Disk Name: /dev/sda\n", "")
    text = replaced(
        text,
        "      physicaldrive 5I:1:1\n",
        "      physicaldrive 5I:1:1\n         Disk Name: /dev/sdb\n",
    )
    (reading,) = parse_ssacli(text)
    assert reading.disk is None
