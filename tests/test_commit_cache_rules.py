"""The commit-latency rules and the write-back cache rules where the other tests leave them
loose (issue 45): word for word what a user reads of them.

- fsyncbench.judge.cache_rules: each controller-cache finding word for word (unprotected,
  drive caches enabled, protected, declared, unverified and why), the flush latencies it
  weighs (from the cache's 15 us floor up to the medium's), the volume and controller it
  names, the command that settles it (the tool found on PATH, else each family's default,
  else a generic name), the evidence keys of the report, and where the floor advice says to read a disk's
  write cache per OS and transport (SATA told by its transport or by libata's SCSI vendor
  "ATA");
- fsyncbench.judge.commit_rules: the reasons of config_durability and documented_promise
  (durable and consistent told apart, per SQLite's pragma documentation), and
  fullfsync_mapping on macOS: which commit it reads, when it reads none, its bounds, the
  commit's own overhead it takes off, and its three findings word for word.

Recorded facts only (tests/factories.py): nothing here measures a disk or runs a tool."""

from __future__ import annotations

import dataclasses

import pytest
from factories import commit, flush, host, write

from fsyncbench.judge import cache_rules, commit_rules, devices, engine, rule_facts
from fsyncbench.judge.cache_rules import write_cache_check
from fsyncbench.model import (
    HONEST_FLUSH,
    INFERRED,
    INFO,
    MEASURED,
    PROTECTION_FAILED,
    PROTECTION_NOT_READY,
    PROTECTION_OK,
    RISK,
    UNVERIFIABLE,
    VOLATILE_CACHE,
    WARNING,
    BlockDevice,
    Finding,
    Pragmas,
    RaidController,
)

#: https://www.sqlite.org/pragma.html#pragma_synchronous
SYNC_DOC = "https://www.sqlite.org/pragma.html#pragma_synchronous"
#: https://www.sqlite.org/wal.html#performance_considerations
WAL_DOC = "https://www.sqlite.org/wal.html#performance_considerations"
#: ~0.1 ms per commit on a volume of spinning disks (issue 32's case), its flush alike.
FAST_NS = 100_000


def fast_results(p50_ns: float = FAST_NS):
    return [write(2_000), flush("fdatasync", p50_ns), commit("WAL", "FULL", p50_ns)]


def finding(v, code):
    return next(f for f in v.findings if f.code == code)


def raid_volume(controller: RaidController, name: str = "sda") -> BlockDevice:
    return BlockDevice(
        name, rotational=True, vendor="AVAGO", transport="scsi", controller=controller
    )


def unverified(*disks: BlockDevice):
    """The controller-cache-unverified finding of fast commits on ``disks``."""
    v = engine.judge(host(disks=disks), fast_results())
    assert v.decided_by == "controller-cache-unverified"
    return finding(v, "controller-cache-unverified")


# --------------------------------------------------------------------------- cache rules


SMART_ARRAY_READ = (
    "Cache Status (OK), Battery/Capacitor Status (OK) and No-Battery Write Cache (Disabled)"
)


@pytest.mark.parametrize(
    ("driver", "command", "what"),
    [
        # the commands and words of the recorded outputs (tests/fixtures/raid/README.md,
        # fsyncbench.host._raidcli): Broadcom's StorCLI (https://docs.broadcom.com/docs/12353236),
        # HPE's ssacli, Microchip's arcconf, Areca's cli64
        (
            "megaraid_sas",
            "storcli64 /c0 show all",
            "the volume's Cache column (WB/AWB = write back) and the Cachevault_Info or "
            "BBU_Info State (Optimal = protected)",
        ),
        (
            "mpi3mr",
            "storcli2 /c0 show all",
            "the volume's write cache policy and the CacheVault state",
        ),
        ("hpsa", "ssacli ctrl all show config detail", SMART_ARRAY_READ),
        ("smartpqi", "ssacli ctrl all show config detail", SMART_ARRAY_READ),
        (
            "aacraid",
            "arcconf GETCONFIG 1 AL",
            "the logical drive's Write-cache mode and the battery (or ZMM) Status",
        ),
        ("arcmsr", "cli64 hw info", "Battery Status"),
    ],
)
def test_without_a_tool_on_path_the_familys_own_command_settles_the_cache(driver, command, what):
    c = RaidController(driver, "a family", host="host0", note="not read: no tool on PATH")
    f = unverified(raid_volume(c))
    assert f.advice.startswith(f"Run `{command}` as root and read {what}; if the cache is ")
    assert f.evidence["settles"] == [command]


def test_the_tool_found_on_path_is_named_rather_than_the_familys_default():
    c = RaidController(
        "megaraid_sas",
        "Broadcom/LSI MegaRAID",
        host="host0",
        tool="perccli64",
        settles="perccli64 /c0 show all",
        note="perccli64 /call show all failed or took over 15 s",
    )
    f = unverified(raid_volume(c))
    assert f.advice.startswith("Run `perccli64 /c0 show all` as root")
    assert "storcli64" not in f.advice


def test_a_controller_of_no_known_family_names_its_management_tool_in_general():
    c = RaidController("3w-9xxx", "3ware", host="host2", note="not read")
    f = unverified(raid_volume(c))
    assert f.advice.startswith(
        "Run `the controller's management tool` as root and read the cache policy and "
        "battery state; if the cache is protected"
    )


@pytest.mark.parametrize(
    ("scsi_host", "where"),
    [("host0", "(megaraid_sas, host0)"), (None, "(megaraid_sas)")],
)
def test_the_finding_names_the_volume_its_controller_and_where_it_was_found(scsi_host, where):
    c = RaidController("megaraid_sas", "Broadcom/LSI MegaRAID", host=scsi_host, note="not read: x")
    f = unverified(raid_volume(c))
    assert f.message.startswith(
        f"sda is a volume of a Broadcom/LSI MegaRAID controller {where}: fdatasync p50 "
        "100.0 us is faster than the 2000.0 us a flush takes on a spinning disk, so the "
        "controller's write-back cache answered it."
    )


def test_the_evidence_lists_what_was_read_of_each_volume_under_the_reports_keys():
    """The keys are the report's (docs/report-schema.md: a finding's evidence), read by
    whoever parses the JSON: one entry per volume, the settling commands once each."""
    read = RaidController(
        "megaraid_sas",
        "Broadcom/LSI MegaRAID",
        host="host0",
        settles="storcli64 /c0 show all",
        protection="not-ready",
        protection_detail="CacheVault CVPM05 Learning",
        drive_cache="disabled",
        read_by="storcli64 /call show all",
    )
    other = RaidController(
        "megaraid_sas", "Broadcom/LSI MegaRAID", host="host1", note="not read: y"
    )
    f = unverified(raid_volume(read), raid_volume(other, "sdb"))
    assert f.evidence == {
        "volumes": ["sda", "sdb"],
        "controller": ["Broadcom/LSI MegaRAID", "Broadcom/LSI MegaRAID"],
        "driver": ["megaraid_sas", "megaraid_sas"],
        "write_cache": [None, None],
        "protection": ["not-ready", None],
        "protection_detail": ["CacheVault CVPM05 Learning", ""],
        "drive_caches": ["disabled", None],
        "read_by": ["storcli64 /call show all", ""],
        "not_read": ["", "not read: y"],
        "settles": ["storcli64 /c0 show all"],
        "p50_ns": FAST_NS,
        "medium_class": "spinning disk",
        "medium_floor_ns": 2_000_000,
        "protected_cache_floor_ns": 15_000,
    }
    assert "its backup power is not ready (CacheVault CVPM05 Learning)" in f.message


CACHE_DOC = devices.CONTROLLER_CACHE_DOC
TIMED_DOC = devices.CONTROLLER_CACHE_DOC + "; " + devices.LATENCY_BANDS_DOC
READ = {
    "driver": "megaraid_sas",
    "family": "Broadcom/LSI MegaRAID",
    "host": "host0",
    "settles": "storcli64 /c0 show all",
    "read_by": "storcli64 /call show all",
    "write_cache": "write back",
}
OPTIMAL = "CacheVault CVPM05 Optimal"
SPINNING = "fdatasync p50 100.0 us is faster than the 2000.0 us a flush takes on a spinning disk, so the controller's write-back cache answered it"


def controller_rule(*disks: BlockDevice, p50_ns: float = FAST_NS, declared=()):
    """rule_controller_cache on a fast fdatasync over ``disks`` (recorded facts)."""
    h = host(disks=disks)
    h = dataclasses.replace(h, target=dataclasses.replace(h.target, declared=declared))
    r = flush("fdatasync", p50_ns)
    return cache_rules.rule_controller_cache(rule_facts.Facts(h, (r,), None), r)


def evidence_of(c: RaidController, name: str = "sda", **extra):
    return {
        "volumes": [name],
        "controller": [c.family],
        "driver": [c.driver],
        "write_cache": [c.write_cache],
        "protection": [c.protection],
        "protection_detail": [c.protection_detail],
        "drive_caches": [c.drive_cache],
        "read_by": [c.read_by],
        "not_read": [c.note],
        "settles": [cache_rules.settles(c)],
        "p50_ns": FAST_NS,
        **extra,
    }


TIMED = {
    "medium_class": "spinning disk",
    "medium_floor_ns": 2_000_000,
    "protected_cache_floor_ns": 15_000,
}


@pytest.mark.parametrize("p50_ns", [FAST_NS, 5_000_000])
def test_write_back_on_failed_backup_power_is_volatile_word_for_word(p50_ns):
    c = RaidController(
        **READ, protection=PROTECTION_FAILED, protection_detail="CacheVault CVPM05 Failed"
    )
    fine = RaidController(
        **READ, protection=PROTECTION_OK, protection_detail=OPTIMAL, drive_cache="enabled"
    )
    verdict, f = controller_rule(raid_volume(fine, "sda"), raid_volume(c, "sdb"), p50_ns=p50_ns)
    assert verdict == VOLATILE_CACHE  # a failed battery beats enabled drive caches
    assert f == Finding(
        "controller-cache-unprotected",
        RISK,
        "write+fdatasync",
        "sdb is a volume of a Broadcom/LSI MegaRAID controller (megaraid_sas, host0): it writes "
        "back (write back, read with storcli64 /call show all) while its cache's backup power is "
        "failed or absent (CacheVault CVPM05 Failed): fdatasync is acknowledged from a cache a "
        "power cut empties.",
        "Replace the battery or CacheVault, or set the volume to write through (storcli64 /c0 "
        "show all shows both); until then a power cut loses acknowledged commits.",
        {
            **evidence_of(fine),
            "volumes": ["sda", "sdb"],
            "controller": [c.family] * 2,
            "driver": [c.driver] * 2,
            "write_cache": ["write back"] * 2,
            "protection": [PROTECTION_OK, PROTECTION_FAILED],
            "protection_detail": [OPTIMAL, "CacheVault CVPM05 Failed"],
            "drive_caches": ["enabled", None],
            "read_by": [c.read_by] * 2,
            "not_read": ["", ""],
            "p50_ns": p50_ns,
        },
        CACHE_DOC,
        MEASURED,
    )


@pytest.mark.parametrize(
    ("protection", "detail", "shown"),
    [(PROTECTION_OK, OPTIMAL, OPTIMAL), (None, "", "backup power not read")],
)
def test_write_back_onto_enabled_drive_caches_is_volatile_word_for_word(protection, detail, shown):
    c = RaidController(
        **READ, protection=protection, protection_detail=detail, drive_cache="enabled"
    )
    assert controller_rule(raid_volume(c)) == (
        VOLATILE_CACHE,
        Finding(
            "controller-drive-caches-enabled",
            RISK,
            "write+fdatasync",
            "sda is a volume of a Broadcom/LSI MegaRAID controller (megaraid_sas, host0): its "
            f"cache writes back ({shown}) onto drives whose own write caches are enabled (read "
            "with storcli64 /call show all): what it hands them sits in caches no battery "
            "protects.",
            "Disable the drives' write caches behind the controller (storcli64 /c0 show all "
            "shows the policy), or accept losing what they hold at a power cut.",
            evidence_of(c),
            CACHE_DOC,
            MEASURED,
        ),
    )


def test_a_fast_flush_behind_a_cache_read_as_protected_is_honest_word_for_word():
    c = RaidController(
        **READ, protection=PROTECTION_OK, protection_detail=OPTIMAL, drive_cache="disabled"
    )
    assert controller_rule(raid_volume(c)) == (
        HONEST_FLUSH,
        Finding(
            "controller-cache-protected",
            INFO,
            "write+fdatasync",
            f"sda is a volume of a Broadcom/LSI MegaRAID controller (megaraid_sas, host0): {SPINNING}, "
            "and the RAID controller's write-back cache has its backup power ready (CacheVault "
            "CVPM05 Optimal; read with storcli64 /call show all): read, not verified by a power cut.",
            "A power pull (fsyncbench powercut) is the only proof beyond this; keep the "
            "controller's backup power monitored.",
            evidence_of(c, **TIMED),
            TIMED_DOC,
            INFERRED,
        ),
    )


def test_a_fast_flush_behind_a_cache_declared_protected_is_honest_word_for_word():
    c = RaidController("hpsa", "HPE Smart Array", host="host1")
    got = controller_rule(raid_volume(c), declared=(" PLP", "protected-cache", "other"))
    assert got == (
        HONEST_FLUSH,
        Finding(
            "controller-cache-declared",
            INFO,
            "write+fdatasync",
            f"sda is a volume of a HPE Smart Array controller (hpsa, host1): {SPINNING}; the user "
            "declared it protected (--assume plp, protected-cache), which is not verified here.",
            "Verify it once with ssacli ctrl all show config detail, or with a power pull "
            "(fsyncbench powercut).",
            evidence_of(c, **TIMED, declared=["plp", "protected-cache"]),
            TIMED_DOC,
            INFERRED,
        ),
    )


UNVERIFIED_ADVICE = (
    "Run `{}` as root and read {}; if the cache is protected, say so with --assume "
    "protected-cache (or install the tool so fsyncbench reads it). A power pull (fsyncbench "
    "powercut) settles it too."
)


@pytest.mark.parametrize(
    ("controller", "why", "strength"),
    [
        (
            RaidController("hpsa", "HPE Smart Array", host="host1"),
            "its backup power was not read",
            MEASURED,
        ),
        (
            RaidController("hpsa", "HPE Smart Array", host="host1", note="ssacli failed"),
            "ssacli failed",
            MEASURED,
        ),
        (
            RaidController(
                "hpsa",
                "HPE Smart Array",
                host="host1",
                protection=PROTECTION_NOT_READY,
                protection_detail="Capacitor Charging",
            ),
            "its backup power is not ready (Capacitor Charging), but the volume's write policy "
            "was not read",
            MEASURED,
        ),
        (
            RaidController(
                "hpsa",
                "HPE Smart Array",
                host="host1",
                has_cache=True,
                write_cache="write back",
                protection=PROTECTION_NOT_READY,
                protection_detail="Capacitor Charging",
            ),
            "its backup power is not ready (Capacitor Charging)",
            MEASURED,
        ),
        # a backup power read as ready (or failed) is not called "not ready": what was not
        # read is the volume's write policy
        (
            RaidController(
                "hpsa",
                "HPE Smart Array",
                host="host1",
                protection=PROTECTION_OK,
                protection_detail="Capacitor OK",
            ),
            "its backup power reads ready (Capacitor OK), but the volume's write policy was "
            "not read",
            MEASURED,
        ),
        (
            RaidController(
                "hpsa",
                "HPE Smart Array",
                host="host1",
                protection=PROTECTION_FAILED,
                protection_detail="Capacitor Failed",
            ),
            "its backup power has failed (Capacitor Failed), but the volume's write policy was "
            "not read",
            MEASURED,
        ),
        # named by the volume's model string alone (a stored report, macOS, Windows): inferred
        (
            RaidController(
                "hpsa", "HPE Smart Array", note="from the model", from_model_string=True
            ),
            "only the volume's model string names the controller",
            INFERRED,
        ),
        (
            RaidController(
                "hpsa",
                "HPE Smart Array",
                note="from the model",
                read_by="ssacli ctrl all show config detail",
                from_model_string=True,
            ),
            "from the model",
            INFERRED,
        ),
    ],
)
def test_a_fast_flush_behind_a_cache_not_read_is_unverifiable_word_for_word(
    controller, why, strength
):
    where = "(named by its model string)" if controller.from_model_string else "(hpsa, host1)"
    assert controller_rule(raid_volume(controller)) == (
        UNVERIFIABLE,
        Finding(
            "controller-cache-unverified",
            WARNING,
            "write+fdatasync",
            f"sda is a volume of a HPE Smart Array controller {where}: {SPINNING}. A battery- or "
            "flash-backed cache keeps that commit through a power cut, an unprotected one loses "
            f"it, and which this is was not read ({why}).",
            UNVERIFIED_ADVICE.format("ssacli ctrl all show config detail", SMART_ARRAY_READ),
            evidence_of(controller, **TIMED),
            TIMED_DOC,
            strength,
        ),
    )


def test_one_volume_named_by_its_model_string_makes_the_finding_inferred():
    by_driver = RaidController("hpsa", "HPE Smart Array", host="host1")
    by_model = RaidController("hpsa", "HPE Smart Array", from_model_string=True)
    verdict, f = controller_rule(raid_volume(by_driver), raid_volume(by_model, "sdb"))
    assert (verdict, f.strength) == (UNVERIFIABLE, INFERRED)
    assert "(its backup power was not read)" in f.message  # the first volume's controller


@pytest.mark.parametrize(
    ("p50_ns", "expected"),
    [
        (14_999, None),  # faster than any controller cache acknowledges
        (15_000, UNVERIFIABLE),  # PROTECTED_CACHE_FLOOR_NS
        (1_999_999, UNVERIFIABLE),
        (2_000_000, None),  # as slow as the spinning disk behind it: no cache needed
    ],
)
def test_only_a_flush_between_the_cache_floor_and_the_mediums_floor_is_weighed(p50_ns, expected):
    c = RaidController("hpsa", "HPE Smart Array", host="host1")
    got = controller_rule(raid_volume(c), p50_ns=p50_ns)
    assert (got and got[0]) == expected


def test_a_volume_writing_through_or_a_disk_without_a_cache_leaves_the_flush_to_the_floor():
    back = RaidController("hpsa", "HPE Smart Array", host="host1", write_cache="write back")
    through = dataclasses.replace(back, write_cache="write through")
    assert controller_rule(raid_volume(back), raid_volume(through, "sdb")) is None
    hba = RaidController("mpt3sas", "Broadcom/LSI SAS HBA", host="host2", has_cache=False)
    assert controller_rule(raid_volume(back), raid_volume(hba, "sdb")) is None
    assert controller_rule(raid_volume(back), BlockDevice("sdb", rotational=True)) is None
    h = host(disks=(raid_volume(back),))
    assert cache_rules.rule_controller_cache(rule_facts.Facts(h, (), None), None) is None


def _floor_advice(h) -> str:
    v = engine.judge(h, [write(2_000), flush("fdatasync", 20_000)])
    return finding(v, "flush-below-device-floor").advice


def test_on_windows_the_write_cache_is_read_in_the_disks_device_policy():
    disk = BlockDevice(
        "PhysicalDrive0", transport="sata", rotational=False, write_cache="write back"
    )
    h = host(os_name="Windows", fs_type="NTFS", disks=(disk,))
    assert write_cache_check(h) == (
        "Device Manager, the disk's Policies tab: 'Enable write caching on the device'"
    )
    v = engine.judge(h, [write(2_000), flush("FlushFileBuffers", 20_000)])
    assert finding(v, "flush-below-device-floor").advice.startswith(
        "Check the drive's write cache and power-loss protection (Device Manager, the disk's "
        "Policies tab: 'Enable write caching on the device'; the vendor's data sheet)"
    )


def test_on_macos_no_linux_tool_is_named_for_a_disk():
    disk = BlockDevice("disk0", transport="PCI-Express", rotational=False, write_cache="write back")
    h = host(os_name="Darwin", fs_type="apfs", disks=(disk,))
    assert write_cache_check(h) == ""
    v = engine.judge(h, [write(2_000), flush("F_FULLFSYNC", 20_000)])
    assert finding(v, "flush-below-device-floor").advice.startswith(
        "Check the drive's write cache and power-loss protection (the vendor's data sheet); "
    )


@pytest.mark.parametrize(
    ("transport", "vendor"),
    [
        ("ata", None),  # found under an ata port in /sys
        ("scsi", "ATA     "),  # libata's SCSI translation names the vendor "ATA", padded
        (None, "ATA"),  # a stored report without the transport
    ],
)
def test_a_sata_disk_is_read_with_hdparm_by_its_transport_or_its_ata_vendor(transport, vendor):
    disk = BlockDevice(
        "sda", transport=transport, vendor=vendor, rotational=False, write_cache="write back"
    )
    advice = _floor_advice(host(disks=(disk,)))
    assert "(hdparm -W /dev/sda or smartctl -g wcache /dev/sda; the vendor's data sheet)" in advice


@pytest.mark.parametrize(("transport", "vendor"), [("scsi", "SEAGATE"), (None, None)])
def test_a_disk_that_is_not_sata_is_not_sent_to_hdparm(transport, vendor):
    disk = BlockDevice("sda", transport=transport, vendor=vendor, rotational=False)
    check = write_cache_check(host(disks=(disk,)))
    expected = "smartctl -g wcache /dev/sda"
    if transport == "scsi":
        expected = "sdparm --get=WCE /dev/sda or " + expected
    assert check == expected


def test_each_disk_of_the_stack_gets_its_own_check_once():
    disks = (
        BlockDevice("sda", transport="ata", rotational=False),
        BlockDevice("sdb", transport="scsi", vendor="ATA", rotational=False),
        BlockDevice("sdc", transport="usb", rotational=False),
    )
    assert write_cache_check(host(disks=disks)) == (
        "hdparm -W /dev/sda or smartctl -g wcache /dev/sda; "
        "hdparm -W /dev/sdb or smartctl -g wcache /dev/sdb; "
        "smartctl -g wcache /dev/sdc"
    )


# --------------------------------------------------------------------------- commit rules


def test_persist_at_normal_says_the_documentation_promises_nothing():
    # https://www.sqlite.org/pragma.html#pragma_synchronous: NORMAL in rollback modes has "a
    # very small (though non-zero) chance" of corruption
    r = commit("PERSIST", "NORMAL", 1)
    durable, f = commit_rules.config_durability(host(), r)
    assert durable is False and f is not None
    assert f.message == (
        "persist/normal: synchronous=NORMAL in PERSIST mode: SQLite's documentation does not "
        "promise that a commit survives a power failure ('a very small (though non-zero) "
        "chance' of corruption)."
    )
    assert f.source == SYNC_DOC


def test_delete_on_windows_says_why_even_extra_is_not_durable():
    # https://www.sqlite.org/src/file/src/os_win.c: winDelete's "int syncDir /* Not used on
    # win32 */"
    r = commit("DELETE", "EXTRA", 1, primitive="FlushFileBuffers")
    durable, f = commit_rules.config_durability(host(os_name="Windows", fs_type="NTFS"), r)
    assert durable is False and f is not None
    assert f.message == (
        "delete/extra: on Windows SQLite deletes the rollback journal (the commit point) "
        "without syncing its directory, even at synchronous=EXTRA (winDelete ignores syncDir)."
    )


ROLLBACK_NORMAL = (
    "{}/NORMAL in a rollback journal mode has 'a very small (though non-zero) chance' of "
    f"corruption after a power failure ({SYNC_DOC})"
)


@pytest.mark.parametrize(
    ("mode", "sync", "expected"),
    [
        # FULL and EXTRA "will not corrupt the database" (SYNC_DOC)
        ("WAL", "FULL", (True, True, "")),
        ("WAL", "EXTRA", (True, True, "")),
        ("DELETE", "EXTRA", (True, True, "")),
        ("TRUNCATE", "FULL", (True, True, "")),
        # "WAL mode is safe from corruption with synchronous=NORMAL" (SYNC_DOC), not durable
        (
            "WAL",
            "NORMAL",
            (
                False,
                True,
                "WAL with synchronous=NORMAL syncs only at checkpoints; the last commits may "
                f"roll back after power loss ({WAL_DOC})",
            ),
        ),
        # OFF "might become corrupted" (SYNC_DOC): no promise, and not the NORMAL sentence
        (
            "WAL",
            "OFF",
            (False, False, f"synchronous=OFF hands data to the OS without any sync ({SYNC_DOC})"),
        ),
        # journal_mode OFF or MEMORY keeps no journal on disk to roll back with
        # (https://www.sqlite.org/pragma.html#pragma_journal_mode), whatever synchronous is
        (
            "MEMORY",
            "FULL",
            (False, False, f"journal_mode=MEMORY keeps no rollback journal on disk ({SYNC_DOC})"),
        ),
        (
            "OFF",
            "EXTRA",
            (False, False, f"journal_mode=OFF keeps no rollback journal on disk ({SYNC_DOC})"),
        ),
        # NORMAL in a rollback mode: neither durable nor free of corruption, both reasons
        (
            "PERSIST",
            "NORMAL",
            (
                False,
                False,
                "synchronous=NORMAL in PERSIST mode: SQLite's documentation does not promise "
                "that a commit survives a power failure ('a very small (though non-zero) "
                f"chance' of corruption) ({SYNC_DOC}); " + ROLLBACK_NORMAL.format("PERSIST"),
            ),
        ),
    ],
)
def test_documented_promise_tells_durable_from_consistent(mode, sync, expected):
    assert commit_rules.documented_promise(Pragmas(mode, sync), "Linux") == expected


MAC = host(os_name="Darwin", fs_type="apfs")


def _mapping(*results):
    return commit_rules.fullfsync_mapping(rule_facts.Facts(MAC, tuple(results), None))


def test_fullfsync_mapping_reads_a_wal_extra_commit_when_no_wal_full_one_was_run():
    """A commit as slow as F_FULLFSYNC (3.1 ms against 3 ms and 0.1 ms) at EXTRA, the only
    fullfsync WAL commit of the run, is measured as F_FULLFSYNC; the same at EXTRA without
    fullfsync is not such a commit."""
    primitives = (flush("F_FULLFSYNC", 3_000_000), flush("F_BARRIERFSYNC", 100_000))
    extra = commit("WAL", "EXTRA", 3_100_000, primitive="F_FULLFSYNC", fullfsync=True)
    measured, f = _mapping(*primitives, extra)
    assert measured == "F_FULLFSYNC"
    assert (f.code, f.subject) == ("fullfsync-mapping", "wal/extra/fullfsync")
    plain = commit("WAL", "EXTRA", 3_100_000, primitive="fsync", fullfsync=False)
    assert _mapping(*primitives, plain) == (None, None)


def test_fullfsync_mapping_reads_the_effective_pragmas_when_none_were_requested():
    r = commit("WAL", "FULL", 3_100_000, primitive="F_FULLFSYNC", fullfsync=True)
    r = dataclasses.replace(r, requested=None)
    measured, f = _mapping(flush("F_FULLFSYNC", 3_000_000), flush("F_BARRIERFSYNC", 100_000), r)
    assert measured == "F_FULLFSYNC" and f.code == "fullfsync-mapping"


@pytest.mark.parametrize(
    "missing", ["commit", "F_FULLFSYNC", "F_BARRIERFSYNC", "a fullfsync primitive"]
)
def test_fullfsync_mapping_says_nothing_without_the_commit_and_both_primitives(missing):
    """Its docstring: (None, None) without a fullfsync WAL commit and both primitives; a
    commit that fell back to fsync (the volume refused F_FULLFSYNC) is not compared."""
    results = {
        "commit": commit("WAL", "FULL", 3_100_000, primitive="F_FULLFSYNC", fullfsync=True),
        "F_FULLFSYNC": flush("F_FULLFSYNC", 3_000_000),
        "F_BARRIERFSYNC": flush("F_BARRIERFSYNC", 100_000),
    }
    if missing == "a fullfsync primitive":
        results["commit"] = commit(
            "WAL",
            "FULL",
            3_100_000,
            primitive="fsync (F_FULLFSYNC refused: ENOTSUP)",
            fullfsync=True,
        )
    else:
        del results[missing]
    assert _mapping(*results.values()) == (None, None)


def _mac_commit(p50_ns, labelled, fullfsync=True):
    return commit("WAL", "FULL", p50_ns, primitive=labelled, fullfsync=fullfsync)


#: The fcntl commands dtruss shows: F_FULLFSYNC 51, F_BARRIERFSYNC 85 (xnu bsd/sys/fcntl.h,
#: https://github.com/apple-oss-distributions/xnu/blob/main/bsd/sys/fcntl.h)
DTRUSS_ADVICE = (
    "dtruss or Instruments' File Activity on a commit shows the fcntl command "
    "(51 F_FULLFSYNC, 85 F_BARRIERFSYNC)."
)


def test_a_mapping_latency_cannot_tell_says_so_word_for_word():
    """F_FULLFSYNC and F_BARRIERFSYNC cost about the same here (1 ms, 0.9 ms): the label
    from the library's path stands, inferred."""
    measured, f = _mapping(
        flush("F_FULLFSYNC", 1_000_000),
        flush("F_BARRIERFSYNC", 900_000),
        _mac_commit(1_000_000, "F_BARRIERFSYNC"),
    )
    assert measured is None
    assert f == Finding(
        "fullfsync-mapping-unverifiable",
        INFO,
        "wal/full/fullfsync",
        "wal/full/fullfsync: its sync (1000.0 us p50 without the commit's own 0.0 us) cannot "
        "be told apart between F_FULLFSYNC (1000.0 us) and F_BARRIERFSYNC (900.0 us) here, so "
        "F_BARRIERFSYNC is inferred from the library's path.",
        DTRUSS_ADVICE,
        {
            "commit_p50_ns": 1_000_000,
            "commit_overhead_ns": 0.0,
            "f_fullfsync_p50_ns": 1_000_000,
            "f_barrierfsync_p50_ns": 900_000,
            "labelled": "F_BARRIERFSYNC",
        },
        rule_facts.APPLE_BARRIER_DOC,
        INFERRED,
    )


def test_a_mapping_that_agrees_with_the_label_word_for_word():
    """3.1 ms commits less their own 0.1 ms (the same commit without fullfsync, 0.14 ms,
    less a plain fsync, 0.04 ms) sync in 3 ms: F_FULLFSYNC, as labelled."""
    measured, f = _mapping(
        flush("F_FULLFSYNC", 3_000_000),
        flush("F_BARRIERFSYNC", 100_000),
        flush("fsync", 40_000),
        _mac_commit(140_000, "fsync", fullfsync=False),
        _mac_commit(3_100_000, "F_FULLFSYNC"),
    )
    assert measured == "F_FULLFSYNC"
    assert f == Finding(
        "fullfsync-mapping",
        INFO,
        "wal/full/fullfsync",
        "wal/full/fullfsync commits sync in 3000.0 us p50 (the commit 3100.0 us less its own "
        "100.0 us), like F_FULLFSYNC (3000.0 us) and not F_BARRIERFSYNC (100.0 us): this "
        "SQLite's fullfsync is F_FULLFSYNC, as its library's path suggested.",
        "",
        {
            "commit_p50_ns": 3_100_000,
            "commit_overhead_ns": 100_000,
            "f_fullfsync_p50_ns": 3_000_000,
            "f_barrierfsync_p50_ns": 100_000,
            "labelled": "F_FULLFSYNC",
        },
        rule_facts.APPLE_BARRIER_DOC,
        MEASURED,
    )


def test_a_mapping_that_contradicts_the_label_word_for_word():
    measured, f = _mapping(
        flush("F_FULLFSYNC", 3_000_000),
        flush("F_BARRIERFSYNC", 100_000),
        _mac_commit(150_000, "F_FULLFSYNC"),
    )
    assert measured == "F_BARRIERFSYNC"
    assert f == Finding(
        "fullfsync-mapping-contradicts-label",
        WARNING,
        "wal/full/fullfsync",
        "wal/full/fullfsync commits sync in 150.0 us p50 (the commit 150.0 us less its own "
        "0.0 us), like F_BARRIERFSYNC (100.0 us) and not F_FULLFSYNC (3000.0 us): this "
        "SQLite's fullfsync is F_BARRIERFSYNC, not F_FULLFSYNC as inferred from its library's "
        "path; the verdicts use the measured one.",
        "Trust the measurement over the path; dtruss on a commit settles it.",
        {
            "commit_p50_ns": 150_000,
            "commit_overhead_ns": 0.0,
            "f_fullfsync_p50_ns": 3_000_000,
            "f_barrierfsync_p50_ns": 100_000,
            "labelled": "F_FULLFSYNC",
        },
        rule_facts.APPLE_BARRIER_DOC,
        MEASURED,
    )


@pytest.mark.parametrize(
    ("full_ns", "barrier_ns", "commit_ns", "expected"),
    [
        # exactly FULLFSYNC_SEPARATION_RATIO (3x) apart: told apart
        (300_000, 100_000, 300_000, "F_FULLFSYNC"),
        # exactly FULLFSYNC_BAND (0.8) of F_FULLFSYNC's p50: F_FULLFSYNC
        (1_000_000, 100_000, 800_000, "F_FULLFSYNC"),
        # exactly the geometric midpoint (300 us of 900 us and 100 us): not yet a barrier
        (900_000, 100_000, 300_000, None),
        (900_000, 100_000, 299_000, "F_BARRIERFSYNC"),
    ],
)
def test_fullfsync_mapping_at_its_bounds(full_ns, barrier_ns, commit_ns, expected):
    measured, _ = _mapping(
        flush("F_FULLFSYNC", full_ns),
        flush("F_BARRIERFSYNC", barrier_ns),
        _mac_commit(commit_ns, "F_BARRIERFSYNC"),
    )
    assert measured == expected


@pytest.mark.parametrize(
    "baseline",
    [
        # the commit without fullfsync faster than a plain fsync: no negative overhead
        (flush("fsync", 200_000), _mac_commit(150_000, "fsync", fullfsync=False)),
        # half a baseline is none
        (_mac_commit(150_000, "fsync", fullfsync=False),),
        (flush("fsync", 40_000),),
    ],
)
def test_fullfsync_mapping_takes_off_no_overhead_without_a_whole_positive_baseline(baseline):
    _, f = _mapping(
        flush("F_FULLFSYNC", 3_000_000),
        flush("F_BARRIERFSYNC", 100_000),
        _mac_commit(3_000_000, "F_FULLFSYNC"),
        *baseline,
    )
    assert f.evidence["commit_overhead_ns"] == 0.0
    assert "sync in 3000.0 us p50 (the commit 3000.0 us less its own 0.0 us)" in f.message
